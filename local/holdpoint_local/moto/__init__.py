"""Sixteen fixes to moto 5.2.5 here (six to its DynamoDB emulation, one to SQS FIFO, one to how it
writes DynamoDB answers, eight to its CloudFormation, which creates the translated template.yaml;
fixes 16-21 and 23-24, to its IAM checks, are in iam.py), applied inside the moto server (and
the unit tests' in-process moto) so the emulator keeps the guarantees the real service gives, at a
cost per request that does not hide the product's own.

1. **Atomic conditional writes.** The moto server handles requests on threads and its DynamoDB
   backend takes no lock, so a condition check and the write after it can interleave with another
   request's. Real DynamoDB evaluates a condition and applies the write atomically, and a read
   never sees half a transaction; the races this project tests (50 concurrent resumes, 20
   concurrent messages) depend on that. One re-entrant lock now serialises the backend's writes
   and item reads.
2. **Rollback by item, not by table.** `TransactWriteItems` deep-copies the whole table once per
   item in the transaction so it can roll back, which makes each write O(table size) and took
   150 parked sessions 717 s. The rollback here snapshots only the items the transaction names,
   which is all a transaction can change, and restores them if it is cancelled. (The old rollback
   also put back the whole table as it was when the transaction began, losing any write another
   request made meanwhile.)
3. **No item kept forever.** moto's BaseModel appends every instance it creates to a class list
   for its dashboard, so each item version ever written stays in memory. DynamoDB items skip that
   list; the tables still hold every current item.
4. **A Query reads its partition.** moto answers a base-table Query by sorting every item of the
   table and filtering on the partition key: O(table) per session load, so each step slowed as
   sessions piled up. It now lists only the queried partition, which is the same set.

5. **A cancelled transaction leaves nothing in the stream.** moto applies a transaction's entries
   one by one and appends each to the table's stream as it goes, so a transaction cancelled at
   its third entry left two stream records of writes that never happened (DynamoDB Streams shows
   only committed writes). The rollback now also drops the stream records the transaction added.
6. **A stream keeps a bounded tail.** moto keeps every stream record a table ever had; DynamoDB
   keeps 24 hours. A shard now keeps its newest `STREAM_KEEP` records (sequence numbers go on
   counting), and a reader behind that reads from the oldest one kept, as after a trim.
7. **A FIFO message group is in flight with one receiver at a time.** moto notes which groups
   are in flight once, when a `ReceiveMessage` starts, and keeps that note for the whole long
   poll: a receiver that began waiting before another took a group's message could then take the
   group's next message while the first was still in flight, and two engine invocations would
   work on one session at once (SQS never does that). A receive now waits in rounds that each
   look at the groups in flight afresh, one receive at a time.
8. **Items are answered as they are stored.** moto writes every answer by walking it through
   the service's shape model, member by member; for DynamoDB items that walk visits every
   attribute value as a structure of ten possible members, about 0.15 ms per attribute: 3.7 of
   the 4.7 ms moto spent answering a 24-item session Query. An item is already in wire form, so
   a map of attribute values is now written as it is, unless it holds binary or an empty name
   (those still take moto's path). The answer is the same byte for byte.

9. **A FIFO queue CloudFormation names ends in `.fifo`**, as on AWS (moto's generated name was
   refused by its own SQS).
10. **The types moto's CloudFormation lacks**: AWS::SecretsManager::Secret (GenerateSecretString),
    AWS::ApiGatewayV2::Api (its OpenAPI `Body` imported with the Lambda authorizers of
    `securitySchemes` and each operation's `security`, which moto's import skipped, and CORS),
    AWS::ApiGatewayV2::Stage, a WebSocket API's Authorizer, Integration and Route
    (cloudformation.py), AWS::S3::BucketPolicy and AWS::CloudWatch::Alarm, each created
    through its service's moto backend, so Ref/GetAtt to them resolve (moto left them out and a
    Ref to one dropped the value, e.g. the functions' JWT_SECRET_ARN).
11. **An event source mapping is recorded, not run by moto.** moto ran a mapping itself, invoking
    the function in Docker on every SQS send or stream write and deleting what it delivered; the
    local stack's pollers (emulators/pollers.py, emulators/streams.py) are the Lambda service,
    reading the mapping.
12. **`Ref: AWS::NoValue` in a list removes the element** (moto kept a None; a SAM role whose
    conditional policy is off failed).
13. **`Ref` to an EventBridge bus is its name, to a layer version its ARN** (moto returned its
    model object).
14. **A state machine gets its `DefinitionSubstitutions` and `StateMachineType`** and is created in
    the backend the Step Functions API answers from (the executing one when it is on).
15. **A table gets its `TimeToLiveSpecification` and `PointInTimeRecoverySpecification`.**
22. **AWS::Scheduler::ScheduleGroup**, created in moto's Scheduler, so the timers' group exists
    and `Ref` to it is its name (moto's CloudFormation had no model: the Ref had no value).

And one local-only control, not a fix: a cap on open Step Functions executions (`CAP_KEY`, off
unless set), standing in for the account-region's ceiling so tests can reach it.

Fixes 1-8 and 12-15 change no answer moto gives; 9-11 and 22 make its CloudFormation create what AWS's
would (11: moto's own delivery is left to the local stack). They are checked by
tests/integration/test_moto_fixes.py, and tests/e2e/test_moto_server.py proves the moto server
child process runs with them. They patch moto internals, so `apply` refuses any moto but the
pinned one (`PINNED`): a new moto must be read against each fix before the pin moves.
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import moto
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models import table as table_module
from moto.dynamodb.models.dynamo_type import Item
from moto.sqs.models import SQSBackend

from . import cloudformation

PINNED = "5.2.5"
MARKER = "holdpoint moto fixes applied"
_LOCK = threading.RLock()
_PARTITION = threading.local()  # the partition a base-table Query on this thread is reading
# writes, and the reads that walk a table's items (a write resizing the dict under them would fail)
STREAM_KEEP = 10_000  # stream records a shard keeps (fix 6)
_GUARDED = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "query", "scan")


class _TablesAreNotCopied:
    """Stands in for the `copy` module inside moto's backend: tables come back as themselves,
    because the item snapshots below do the rollback. Every other deepcopy is the real one."""

    def deepcopy(self, obj: Any, memo: dict[int, Any] | None = None) -> Any:
        return obj if isinstance(obj, table_module.Table) else copy.deepcopy(obj, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def _snapshot(backend: DynamoDBBackend, request: dict[str, Any]) -> Callable[[], None] | None:
    """A function that puts back the item this transaction entry names, as it is now."""
    (op_type, op), = request.items()
    table = backend.tables.get(op.get("TableName", ""))
    if table is None:
        return None
    keys = op.get("Key")
    if op_type == "Put":
        attrs = op.get("Item") or {}
        keys = {name: attrs[name] for name in (table.hash_key_attr, table.range_key_attr) if name and name in attrs}
    try:
        hash_key, range_key = backend.get_keys_value(table, keys or {})
    except Exception:  # noqa: BLE001 - a malformed key is moto's to report; there is nothing to restore
        return None
    before = copy.deepcopy(table.get_item(hash_key, range_key))

    def restore() -> None:
        if range_key is not None:
            if before is None:
                table.items.get(hash_key, {}).pop(range_key, None)
            else:
                table.items[hash_key][range_key] = before
        elif before is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = before  # type: ignore[assignment]

    return restore


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return method(*args, **kwargs)

    locked.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return locked


def _stream_marks(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> list[tuple[Any, int]]:
    """For each streaming table the transaction names: its shard and the next sequence number."""
    marks: list[tuple[Any, int]] = []
    for entry in transact_items:
        for op in entry.values():
            table = backend.tables.get(op.get("TableName", "")) if isinstance(op, dict) else None
            shard = getattr(table, "stream_shard", None)
            if shard is not None and all(shard is not s for s, _ in marks):
                marks.append((shard, shard.starting_sequence_number + len(shard.items)))
    return marks


def _transact_write_items(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def transact(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        restores = [_snapshot(self, entry) for entry in transact_items if len(entry) == 1]
        marks = _stream_marks(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            for restore in reversed(restores):
                if restore is not None:
                    restore()
            for shard, next_seq in marks:  # fix 5: the stream shows only committed writes
                del shard.items[max(0, next_seq - shard.starting_sequence_number):]
            raise

    return transact


def _untracked_item(cls: type[Item], *args: Any, **kwargs: Any) -> Item:
    return object.__new__(cls)


def _partition_query(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def query(self: table_module.Table, hash_key: Any, range_comparison: Any, range_objs: Any, limit: Any,
              exclusive_start_key: Any, scan_index_forward: Any, projection_expressions: Any,
              index_name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        _PARTITION.scope = (self, hash_key) if index_name is None and hash_key is not None else None
        try:
            return original(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key,
                            scan_index_forward, projection_expressions, index_name, *args, **kwargs)
        finally:
            _PARTITION.scope = None

    return query


def _partition_items(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def all_items(self: table_module.Table) -> list[Item]:
        scope = getattr(_PARTITION, "scope", None)
        if scope is None or scope[0] is not self:
            items: list[Item] = original(self)
            return items
        part = self.items.get(scope[1])  # .get: the items dict is a defaultdict
        if part is None:
            return []
        if not self.range_key_attr:
            return [part]
        return sorted(part.values(), key=lambda item: item.range_key)

    return all_items


def _bounded_add(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def add(self: table_module.StreamShard, old: Any, new: Any) -> None:
        original(self, old, new)
        extra = len(self.items) - STREAM_KEEP
        if extra > 0:  # fix 6: trim the oldest; sequence numbers keep counting from where they were
            del self.items[:extra]
            self.starting_sequence_number += extra

    return add


def _trimmed_get(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get(self: table_module.StreamShard, start: int, quantity: int) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = original(self, max(start, self.starting_sequence_number), quantity)
        return records

    return get


_SQS_LOCK = threading.Lock()
SQS_ROUND_SECS = 0.01  # the longest a waiting receive goes without looking again (a group freed)


def _deliverable(queue: Any) -> bool:
    """A visible message whose FIFO group is not in flight: what a waiting receive wakes up for."""
    in_flight = queue.pending_message_groups if queue.fifo_queue else set()
    return any(m.group_id is None or m.group_id not in in_flight for m in queue.messages)


def _wait_round(queue: Any, timeout: float) -> None:
    with queue._messages_lock:
        queue._messages_lock.wait_for(lambda: _deliverable(queue), timeout=timeout)


def _fresh_receive(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 7: a long poll as rounds of moto's receive with no wait, each under one lock, so each
    round sees the groups in flight as they are and no other receive runs inside it. Between
    rounds it waits on the queue as moto does (a new message wakes it at once), looking again at
    least every `SQS_ROUND_SECS` for a group that a deleted message freed."""

    @functools.wraps(original)
    def receive(self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int, visibility_timeout: int,
                message_attribute_names: list[str] | None = None) -> list[Any]:
        deadline = time.monotonic() + (wait_seconds_timeout or 0)
        queue = self.get_queue(queue_name)
        while True:
            with _SQS_LOCK:
                got = original(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
            left = deadline - time.monotonic()
            if got or left <= 0:
                return got  # type: ignore[no-any-return]
            _wait_round(queue, min(left, SQS_ROUND_SECS))

    receive.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return receive


_SCALAR_KINDS = ("S", "N")
_SET_KINDS = ("SS", "NS")
_FLAG_KINDS = ("BOOL", "NULL")


def _plain(value: Any) -> bool:
    """An attribute value moto's serializer would copy unchanged: one known kind, strings where
    the model has strings, and no binary anywhere (binary goes through moto's own path)."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    ((kind, inner),) = value.items()
    if kind in _SCALAR_KINDS:
        return isinstance(inner, str)
    if kind in _SET_KINDS:
        return isinstance(inner, list) and all(isinstance(v, str) for v in inner)
    if kind in _FLAG_KINDS:
        return isinstance(inner, bool)
    if kind == "M":
        return _plain_map(inner)
    if kind == "L":
        return isinstance(inner, list) and all(_plain(v) for v in inner)
    return False


def _plain_map(value: Any) -> bool:
    """A map of plain values under non-empty names (moto writes an empty name's value in its parent)."""
    return isinstance(value, dict) and all(isinstance(k, str) and k and _plain(v) for k, v in value.items())


def _items_as_stored(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 8: a map of DynamoDB attribute values (an item, a key) that `_plain` vouches for is
    written as it is: it is already in wire form, and walking it through the shape model costs
    about 0.15 ms per item attribute (a 24-item Query: 3.7 ms of the 4.7 ms moto spends on it)."""

    @functools.wraps(original)
    def serialize_map(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and getattr(shape.value, "name", None) == "AttributeValue" and _plain_map(value):
            self._default_serialize(serialized, value, shape, key)
            return
        original(self, serialized, value, shape, key)

    serialize_map.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return serialize_map


class UnknownMotoVersion(RuntimeError):
    """The fixes were written against another moto's internals."""


def applied() -> bool:
    return bool(getattr(DynamoDBBackend.put_item, "__holdpoint_fixed__", False))


def apply() -> None:
    """Install the fixes; calling it again changes nothing. Refuses an unknown moto version."""
    if moto.__version__ != PINNED:
        raise UnknownMotoVersion(
            f"holdpoint_local.moto patches moto {PINNED} internals, but moto {moto.__version__} is installed: "
            f"pin moto=={PINNED} in requirements-dev.txt, or re-read each fix against the new moto and move PINNED")
    if applied():
        return
    import moto.dynamodb.models as backend_module

    backend_module.copy = _TablesAreNotCopied()  # type: ignore[attr-defined,assignment]
    DynamoDBBackend.transact_write_items = _transact_write_items(  # type: ignore[method-assign]
        DynamoDBBackend.transact_write_items)
    table_module.Table.query = _partition_query(table_module.Table.query)  # type: ignore[method-assign]
    table_module.Table.all_items = _partition_items(table_module.Table.all_items)  # type: ignore[method-assign]
    Item.__new__ = _untracked_item  # type: ignore[assignment,method-assign]
    table_module.StreamShard.add = _bounded_add(table_module.StreamShard.add)  # type: ignore[method-assign]
    table_module.StreamShard.get = _trimmed_get(table_module.StreamShard.get)  # type: ignore[method-assign]
    for name in _GUARDED:
        setattr(DynamoDBBackend, name, _serialised(getattr(DynamoDBBackend, name)))
    SQSBackend.receive_message = _fresh_receive(SQSBackend.receive_message)  # type: ignore[method-assign]
    BaseJSONSerializer._serialize_type_map = _items_as_stored(  # type: ignore[method-assign]
        BaseJSONSerializer._serialize_type_map)
    _apply_cloudformation()
    from . import iam

    iam.apply()  # fixes 16-21, 23-24: IAM checked against the resource a call names


# ----------------------------------------------------------------------------- CloudFormation (9-11)


def _fifo_name(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 9: CloudFormation names a FIFO queue it names itself `<stack>-<logical id>-<suffix>.fifo`."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        fifo = str(cloudformation_json.get("Properties", {}).get("FifoQueue", "")).lower() == "true"
        if fifo and not str(resource_name).endswith(".fifo"):
            resource_name = str(resource_name)[:75] + ".fifo"
        func: Callable[..., Any] = original.__func__  # type: ignore[attr-defined]
        return func(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)

    create.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return classmethod(create)  # type: ignore[arg-type,return-value]


def _kept_not_run(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 11: an event source mapping is recorded (list/get answer it) but moto does not run it."""

    @functools.wraps(original)
    def create(self: Any, spec: dict[str, Any]) -> Any:
        from moto.dynamodb.models import dynamodb_backends
        from moto.sqs.models import sqs_backends

        esm = original(self, spec)
        for queue in sqs_backends[self.account_id][self.region_name].queues.values():
            queue.lambda_event_source_mappings.pop(esm.function_arn, None)
        for table in dynamodb_backends[self.account_id][self.region_name].tables.values():
            table.lambda_event_source_mappings.pop(esm.function_arn, None)
        return esm

    return create


def _authorize_routes(api: Any, body: dict[str, Any]) -> None:
    """What API Gateway's import does with an OpenAPI document's Lambda authorizers and each
    operation's `security`, which moto's import_api skips."""
    ids: dict[str, str] = {}
    for name, scheme in ((body.get("components") or {}).get("securitySchemes") or {}).items():
        spec = scheme.get("x-amazon-apigateway-authorizer")
        if not spec:
            continue
        authorizer = api.create_authorizer(
            auth_creds_arn=spec.get("authorizerCredentials"),
            auth_payload_format_version=spec.get("authorizerPayloadFormatVersion"),
            auth_result_ttl=spec.get("authorizerResultTtlInSeconds"),
            authorizer_type=str(spec.get("type", "request")).upper(), authorizer_uri=spec.get("authorizerUri"),
            enable_simple_response=spec.get("enableSimpleResponses"), identity_source=spec.get("identitySource"),
            identity_validation_expr=None, jwt_config=spec.get("jwtConfiguration"), name=name)
        ids[name] = authorizer.id
    for route in api.routes.values():
        method, _, path = route.route_key.partition(" ")
        operation = body["paths"][path][method.lower()]
        chosen = next(iter(({} if not operation.get("security") else operation["security"][0]) or {}), "NONE")
        if chosen in ids:
            route.authorization_type, route.authorizer_id = "CUSTOM", ids[chosen]
        else:
            route.authorization_type = "NONE"


def _cfn_models() -> list[type[Any]]:
    """Fix 10: the resource types moto's CloudFormation has no model for, each created through the
    service's own moto backend (so Ref/GetAtt to them resolve and the service answers for them)."""
    import json

    from moto.apigatewayv2.models import apigatewayv2_backends
    from moto.cloudwatch.models import cloudwatch_backends
    from moto.core.common_models import CloudFormationModel
    from moto.s3.models import s3_backends
    from moto.secretsmanager.models import secretsmanager_backends

    class _Model:
        """What the five share; each is a direct CloudFormationModel subclass, which is how moto finds it."""

        kind = ""
        name_property = ""
        attributes: dict[str, str] = {}

        def __init__(self, ref: str, **attrs: Any) -> None:
            self.ref, self.attrs = ref, attrs

        @classmethod
        def cloudformation_type(cls) -> str:
            return cls.kind

        @classmethod
        def cloudformation_name_type(cls) -> str:
            return cls.name_property

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in cls.attributes

        @property
        def physical_resource_id(self) -> str:
            return self.ref

        def get_cfn_attribute(self, attribute_name: str) -> Any:
            return self.attrs[self.attributes[attribute_name]]

    class Secret(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::SecretsManager::Secret", "Name", {"Id": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Secret:
            props = cloudformation_json["Properties"]
            backend = secretsmanager_backends[account_id][region_name]
            value = props.get("SecretString")
            if value is None:
                gen = props.get("GenerateSecretString") or {}
                value = json.loads(backend.get_random_password(
                    int(gen.get("PasswordLength", 32)), gen.get("ExcludeCharacters", ""),
                    bool(gen.get("ExcludeNumbers")), bool(gen.get("ExcludePunctuation")),
                    bool(gen.get("ExcludeUppercase")), bool(gen.get("ExcludeLowercase")),
                    bool(gen.get("IncludeSpace")), gen.get("RequireEachIncludedType", True)))["RandomPassword"]
                if gen.get("SecretStringTemplate") and gen.get("GenerateStringKey"):
                    value = json.dumps({**json.loads(gen["SecretStringTemplate"]), gen["GenerateStringKey"]: value})
            made = json.loads(backend.create_secret(
                name=resource_name, secret_string=value, secret_binary=None, description=props.get("Description"),
                tags=props.get("Tags"), kms_key_id=props.get("KmsKeyId"), client_request_token=None,
                replica_regions=[], force_overwrite=False))
            return cls(made["ARN"], arn=made["ARN"])

    class HttpApi(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::ApiGatewayV2::Api", "", {"ApiEndpoint": "endpoint", "ApiId": "id"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> HttpApi:
            props = cloudformation_json["Properties"]
            body = props.get("Body") or {}
            settings: dict[str, Any] = {
                "api_key_selection_expression": None, "cors_configuration": props.get("CorsConfiguration"),
                "description": props.get("Description"), "disable_schema_validation": None,
                "disable_execute_api_endpoint": props.get("DisableExecuteApiEndpoint"),
                "name": props.get("Name") or (body.get("info") or {}).get("title") or resource_name,
                "protocol_type": props.get("ProtocolType", "HTTP"),
                "route_selection_expression": props.get("RouteSelectionExpression"),
                "tags": {}, "version": None,
            }
            api = apigatewayv2_backends[account_id][region_name].create_api(**settings)
            if body:
                api.import_api(json.dumps(body), fail_on_warnings=False)
                _authorize_routes(api, body)
            return cls(api.api_id, id=api.api_id, endpoint=api.api_endpoint)

    class Stage(_Model, CloudFormationModel):
        kind, name_property = "AWS::ApiGatewayV2::Stage", "StageName"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Stage:
            props = cloudformation_json["Properties"]
            api = apigatewayv2_backends[account_id][region_name].get_api(props["ApiId"])
            config = {key[0].lower() + key[1:]: value for key, value in props.items() if key != "ApiId"}
            return cls(api.create_stage(config).name)

    class BucketPolicy(_Model, CloudFormationModel):
        kind = "AWS::S3::BucketPolicy"

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> BucketPolicy:
            props = cloudformation_json["Properties"]
            backend = s3_backends[account_id]["aws"]
            backend.put_bucket_policy(props["Bucket"], json.dumps(props["PolicyDocument"]).encode())
            return cls(props["Bucket"])

    class Alarm(_Model, CloudFormationModel):
        kind, name_property, attributes = "AWS::CloudWatch::Alarm", "AlarmName", {"Arn": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> Alarm:
            p = cloudformation_json["Properties"]
            alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=resource_name, namespace=p.get("Namespace"), metric_name=p.get("MetricName"),
                comparison_operator=p["ComparisonOperator"], evaluation_periods=int(p["EvaluationPeriods"]),
                period=int(p.get("Period", 60)), threshold=float(p.get("Threshold", 0)), statistic=p.get("Statistic"),
                description=p.get("AlarmDescription"), dimensions=p.get("Dimensions", []),
                alarm_actions=p.get("AlarmActions", []), ok_actions=p.get("OKActions", []),
                insufficient_data_actions=p.get("InsufficientDataActions", []),
                treat_missing_data=p.get("TreatMissingData"))
            return cls(resource_name, arn=alarm.alarm_arn)

    return [Secret, HttpApi, Stage, BucketPolicy, Alarm, _schedule_group(_Model)]


def _schedule_group(base: type[Any]) -> type[Any]:
    """Fix 22: AWS::Scheduler::ScheduleGroup, created in moto's Scheduler (Ref: its name)."""
    from moto.core.common_models import CloudFormationModel
    from moto.scheduler.models import scheduler_backends

    class ScheduleGroup(base, CloudFormationModel):  # type: ignore[misc]
        kind, name_property, attributes = "AWS::Scheduler::ScheduleGroup", "Name", {"Arn": "arn"}

        @classmethod
        def create_from_cloudformation_json(cls, resource_name: str, cloudformation_json: dict[str, Any],
                                            account_id: str, region_name: str, **kwargs: Any) -> ScheduleGroup:
            group = scheduler_backends[account_id][region_name].create_schedule_group(resource_name, [])
            return cls(group.name, arn=group.arn)

    return ScheduleGroup


CFN_TYPES = ("AWS::SecretsManager::Secret", "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage",
             "AWS::S3::BucketPolicy", "AWS::CloudWatch::Alarm", "AWS::Scheduler::ScheduleGroup",
             *cloudformation.CFN_TYPES)
"""The resource types fix 10 gives moto's CloudFormation."""


def _apply_cloudformation() -> None:
    from moto.awslambda.models import LambdaBackend
    from moto.cloudformation import parsing
    from moto.sqs.models import Queue
    from moto.stepfunctions.models import StateMachine

    Table = table_module.Table

    Queue.create_from_cloudformation_json = _fifo_name(Queue.create_from_cloudformation_json)  # type: ignore[method-assign]
    LambdaBackend.create_event_source_mapping = _kept_not_run(  # type: ignore[method-assign]
        LambdaBackend.create_event_source_mapping)
    parsing.clean_json = _no_value_in_lists(parsing.clean_json)
    _MODELS.extend(_cfn_models())
    _MODELS.extend(cloudformation.models())
    _refs()
    StateMachine.create_from_cloudformation_json = _state_machine(  # type: ignore[method-assign]
        StateMachine.create_from_cloudformation_json)
    Table.create_from_cloudformation_json = _table_settings(  # type: ignore[method-assign]
        Table.create_from_cloudformation_json)
    _cap_open_executions()
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()


_MODELS: list[type[Any]] = []  # kept referenced: moto finds models as CloudFormationModel subclasses


def _no_value_in_lists(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 12: `Ref: AWS::NoValue` (an `Fn::If` branch) in a list removes the element, as on AWS;
    moto kept a None there (a SAM role whose conditional policy is off then failed to create)."""

    @functools.wraps(original)
    def clean(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, list):
            return [v for v in (original(item, resources_map) for item in resource_json) if v is not None]
        return original(resource_json, resources_map)

    return clean


def _refs() -> None:
    """Fix 13: `Ref` to an EventBridge bus is its name and to a layer version its ARN, as on AWS;
    moto had no physical id for either, so the Ref put moto's model object itself in the template
    (a function whose environment named the bus could not be created)."""
    from moto.awslambda.models import LayerVersion
    from moto.events.models import EventBus

    EventBus.physical_resource_id = property(lambda self: self.name)  # type: ignore[attr-defined]
    LayerVersion.physical_resource_id = property(lambda self: self.arn)  # type: ignore[attr-defined]


def _state_machine(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 14: a state machine from CloudFormation gets its `DefinitionSubstitutions` and
    `StateMachineType`, and lives in the backend the Step Functions API answers from (the executing
    one when `execute_state_machine` is on); moto ignored both and always used the plain backend."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        from moto.stepfunctions.responses import get_backend
        from moto.stepfunctions.utils import cfn_to_api_tags

        props = cloudformation_json["Properties"]
        definition = str(props.get("DefinitionString", ""))
        for key, value in (props.get("DefinitionSubstitutions") or {}).items():
            definition = definition.replace("${" + key + "}", str(value))
        return get_backend(account_id, region_name).create_state_machine(
            props.get("StateMachineName", resource_name), definition, props.get("RoleArn", ""),
            tags=cfn_to_api_tags(props.get("Tags", [])),
            sm_type=props.get("StateMachineType", "STANDARD"))

    return classmethod(create)  # type: ignore[arg-type,return-value]


def _table_settings(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 15: a table from CloudFormation gets its `TimeToLiveSpecification` and
    `PointInTimeRecoverySpecification`; moto's CloudFormation dropped both."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        func: Callable[..., Any] = original.__func__  # type: ignore[attr-defined]
        table = func(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        props = cloudformation_json["Properties"]
        backend = dynamodb_backends[account_id][region_name]
        if props.get("TimeToLiveSpecification"):
            backend.update_time_to_live(table.name, props["TimeToLiveSpecification"])
        if props.get("PointInTimeRecoverySpecification"):
            backend.update_continuous_backups(table.name, props["PointInTimeRecoverySpecification"])
        return table

    return classmethod(create)  # type: ignore[arg-type,return-value]


# ----------------------------------------------------------------------------- local-only control


CAP_KEY = "open_executions_cap"
"""`POST /moto-api/config {"stepfunctions": {..., "open_executions_cap": N}}` (server.set_execution_cap):
past N running executions in the account-region, StartExecution answers ExecutionLimitExceeded."""


def _cap_open_executions() -> None:
    """Not a fix: a control the local stack's tests use to stand in for Step Functions' ceiling of
    open Standard executions (1,000,000 per account-region), which moto does not have. Off unless
    a cap is set; a start of an execution that exists already (an idempotent retry) is not refused."""
    from moto.core.config import default_user_config
    from moto.core.exceptions import AWSError
    from moto.stepfunctions.responses import StepFunctionResponse, get_backend

    class ExecutionLimitExceeded(AWSError):
        TYPE = "ExecutionLimitExceeded"
        STATUS = 400

    original = StepFunctionResponse.start_execution

    @functools.wraps(original)
    def start(self: StepFunctionResponse) -> Any:
        cap: Any = (default_user_config.get("stepfunctions") or {}).get(CAP_KEY)
        if cap is not None:
            backend = get_backend(self.current_account, self.region)
            name = self._get_param("name")
            machines = backend.state_machines
            arn = self._get_param("stateMachineArn")
            exists = any(e.name == name for m in machines if m.arn == arn for e in m.executions)
            running = sum(1 for m in machines for e in m.executions if _running(e))
            if not exists and running >= int(cap):
                raise ExecutionLimitExceeded(f"Maximum open executions ({cap}) reached")
        return original(self)

    StepFunctionResponse.start_execution = start  # type: ignore[method-assign]


def _running(execution: Any) -> bool:
    """The executing backend's executions keep their status in `exec_status` (None before they start)."""
    status = execution.exec_status if hasattr(execution, "exec_status") else execution.status
    return str(getattr(status, "value", status)) == "RUNNING"
