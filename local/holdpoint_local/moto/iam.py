"""IAM enforcement for the moto server: the fixes that make moto 5.2.5 check a call against the
resource it names, and the identities the local stack calls with.

Fixes (applied by `holdpoint_local.moto.apply`, each tested by tests/integration/test_moto_iam.py
on stock moto, but 23, the server's routing, by tests/security/test_management_api.py):

16. **A call is checked against the resource it names.** moto checks IAM against the real ARN only
    for SQS, IAM, STS and S3; every other service was checked against `*`, so a grant scoped to a
    table, state machine, bus or secret (every SAM policy template) never matched. Now:
    DynamoDB by `TableName` (`/index/{IndexName}` for an index Query; TransactWriteItems,
    TransactGetItems, BatchGetItem and BatchWriteItem check each table they name; a transaction is
    authorised as its items' actions, PutItem, UpdateItem, DeleteItem, ConditionCheckItem and
    GetItem, as on AWS, where there is no `dynamodb:TransactWriteItems` action), DynamoDB
    Streams by the stream ARN (GetRecords: the stream of its iterator), Step Functions by
    `stateMachineArn` / `executionArn` (SendTask* stay `*`, as on AWS), Secrets Manager by the
    secret's full ARN (a name or partial ARN is looked up), EventBridge PutEvents by each entry's
    bus, Bedrock by the foundation model's ARN, a Lambda invoke as `lambda:InvokeFunction` on the
    function's ARN (fix 30; moto checked `lambda:Invoke` on `*`), KMS by the key's ARN (fix 31:
    `KeyId` as an id, an ARN or an alias). CloudWatch stays `*` (PutMetricData has no
    resource on AWS either). SQS (whose queue ARN moto does check) authorises SendMessageBatch,
    DeleteMessageBatch and ChangeMessageVisibilityBatch as their single actions, as AWS does.
17. **A role trusted by a service can be assumed by that service.** moto's trust check raised a
    TypeError (HTTP 500) on a trust policy whose principal is `{"Service": ...}`; it now admits a
    caller that is the service (the local Lambda service identity below for
    `lambda.amazonaws.com`) and refuses any other caller, as AWS does.
18. **A CloudFormation role gets its `ManagedPolicyArns`** (moto ignored them, so a SAM function
    role had no AWSLambdaBasicExecutionRole, nor the SQS / DynamoDB Streams poller policies its
    event source mappings poll with). An AWS managed policy is created from moto's copy of it.
19. **A state machine's service integrations call with its role.** moto's interpreter signed them
    with the fixed key `ak`, which IAM enforcement refuses; they now sign with credentials of the
    state machine's execution role (assumed inside moto), so a ParkBranch `sqs:SendMessage` is
    checked against the grants template.yaml gives the state machine.

20. **A GET is signed over an empty payload.** moto recomputed the signature of a bodiless GET
    over its parsed parameters (for Lambda's REST API, its headers),
    so every Lambda GET (GetFunctionConfiguration, ListFunctions) failed SignatureDoesNotMatch.

21. **A role's inline policy from CloudFormation is evaluated.** moto's CloudFormation stores a
    role's `Policies` documents as parsed JSON, and its IAM evaluator expected a string, so every
    call by such a role failed with a KeyError (HTTP 500).

23. **A management API call under a stage path reaches the management API.** moto routed a
    signed `execute-api` request to its management API only for a path starting `/@connections`;
    `/{stage}/@connections/{id}` (the SDK's path under a stage URL) went to IoT, and the server's
    router could not match moto's own pattern for it.
24. **A management API call is authorised.** moto never checked `PostToConnection`,
    `GetConnection` or `DeleteConnection`; each is now checked, signature first, as
    `execute-api:ManageConnections` on `arn:aws:execute-api:{region}:{account}:{api}/{stage}/{VERB}/
    @connections/{id}`, the API id taken from the host (`{api}.execute-api...`) or, for the local
    gateway that forwards the caller's signed request here, from its `X-Holdpoint-Api-Id` header.
    moto only authorises: the local gateway (emulators/wsgateway.py) holds the connections and delivers, so
    moto's own store of posted data is not written.

26. **An X-Ray call is authorised as its API action.** X-Ray's API is paths (`POST
    /TraceSummaries`), and moto checked the path as the action (`xray:TraceSummaries`), which no
    policy names, so every X-Ray call by a function role was AccessDenied; each is now checked as
    `xray:GetTraceSummaries`, `xray:BatchGetTraces`, `xray:PutTraceSegments`, ... on `*` (X-Ray
    has no resource-level permissions for them).

33. **An SES v2 SendEmail is checked against the identity it sends from.** moto checked it against
    `*`, so a grant scoped to the stack's sender identity (template.yaml's EmailSender) never
    matched; it is now `ses:SendEmail` on `arn:aws:ses:{region}:{account}:identity/{address}`, or
    on the address's domain when that, not the address, is the identity, as SES authorises it.

`seed_identities` installs the identities (`enforce` turns enforcement on):
- the operator: IAM user `holdpoint-operator` with the access key `testing`/`testing` of
  `FAKE_ENV`, and a session of role `holdpoint-operator` with key, secret and token `testing`,
  both allowed everything. Provisioning, tests that inspect state, the bench and the demo use it.
- the Lambda service: IAM user `holdpoint-lambda-service` (key `LAMBDA_SERVICE_KEY`), allowed only
  `sts:AssumeRole`, and trusted as `lambda.amazonaws.com` (fix 17): the local runtime assumes each
  function's generated role with it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

OPERATOR = "holdpoint-operator"
OPERATOR_KEY = "testing"
LAMBDA_SERVICE = "holdpoint-lambda-service"
LAMBDA_SERVICE_KEY = "AKIAHOLDPOINTLAMBDA0"
LAMBDA_SERVICE_SECRET = "holdpoint-local-lambda-service-secret"  # noqa: S105 - a local emulator's key
SERVICE_PRINCIPALS = {LAMBDA_SERVICE: "lambda.amazonaws.com"}
ALLOW_ALL = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
ASSUME_ONLY = json.dumps({"Version": "2012-10-17",
                          "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "*"}]})


def _arn(svc: Any, service: str, rest: str) -> str:
    return f"arn:aws:{service}:{svc.region}:{svc.current_account}:{rest}"


def _body(svc: Any) -> dict[str, Any]:
    if isinstance(svc.body, dict):  # DynamoDB's handler has parsed it already
        return svc.body
    try:
        body = json.loads(svc.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


_TRANSACT_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                     "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
"""A transaction is authorised as the item actions it is made of (AWS has no Transact* IAM action)."""


def _dynamodb(svc: Any) -> list[tuple[str, str]]:
    body, action = _body(svc), svc._get_action()
    table = functools.partial(lambda name: _arn(svc, "dynamodb", f"table/{name}"))
    if action in ("BatchGetItem", "BatchWriteItem"):
        return [(action, table(name)) for name in body.get("RequestItems") or {}]
    if action in ("TransactWriteItems", "TransactGetItems"):
        checks = [(_TRANSACT_ACTIONS.get(kind, kind), table(op.get("TableName")))
                  for entry in body.get("TransactItems") or [] for kind, op in entry.items() if isinstance(op, dict)]
        return list(dict.fromkeys(checks)) or [(action, "*")]
    if not body.get("TableName"):
        return [(action, "*")]
    if body.get("IndexName"):
        return [(action, f"{table(body['TableName'])}/index/{body['IndexName']}")]
    return [(action, table(body["TableName"]))]


_SQS_BATCH = {"DeleteMessageBatch": "DeleteMessage", "SendMessageBatch": "SendMessage",
              "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}
"""SQS authorises a batch call as its single action (there is no `sqs:DeleteMessageBatch` action)."""


def _streams(svc: Any) -> list[str]:
    body = _body(svc)
    if body.get("StreamArn"):
        return [body["StreamArn"]]
    iterator = svc.backend.shard_iterators.get(body.get("ShardIterator", ""))
    if iterator is None:
        return ["*"]
    table = iterator.stream_shard.table
    return [f"{table.table_arn}/stream/{table.latest_stream_label}"]


def _stepfunctions(svc: Any) -> list[str]:
    body = _body(svc)
    return [body.get("stateMachineArn") or body.get("executionArn") or "*"]


_LAMBDA_ACTIONS = {"Invoke": "InvokeFunction", "InvokeAsync": "InvokeFunction"}
"""Fix 30: an invoke is authorised as `lambda:InvokeFunction` on the function it names."""


def _lambda(svc: Any) -> list[tuple[str, str]]:
    from urllib.parse import unquote

    action = svc._get_action()
    if action not in _LAMBDA_ACTIONS:
        return [(action, "*")]
    name = unquote(svc.path.split("/functions/", 1)[-1].split("/", 1)[0])
    return [(_LAMBDA_ACTIONS[action], name if name.startswith("arn:") else _arn(svc, "lambda", f"function:{name}"))]


def _secretsmanager(svc: Any) -> list[str]:
    from moto.secretsmanager.models import secretsmanager_backends

    secret_id = _body(svc).get("SecretId")
    if not secret_id:
        return ["*"]
    secret = secretsmanager_backends[svc.current_account][svc.region].secrets.get(secret_id)
    return [secret.arn if secret is not None else _arn(svc, "secretsmanager", f"secret:{secret_id}")]


def _kms(svc: Any) -> list[str]:
    """Fix 31: a KMS call by the key it names (`KeyId`: an id, an ARN or an alias), as its ARN."""
    from moto.kms.models import kms_backends

    key_id = _body(svc).get("KeyId")
    if not isinstance(key_id, str) or not key_id:
        return ["*"]
    backend = kms_backends[svc.current_account][svc.region]
    alias = backend.get_alias_name(key_id)
    key = backend.keys.get(backend.get_key_id(key_id)) or next(
        (k for k in backend.keys.values() if alias.startswith("alias/") and alias in k.aliases), None)
    return [key.arn if key is not None else _arn(svc, "kms", f"key/{key_id.rsplit('/', 1)[-1]}")]


def _events(svc: Any) -> list[str]:
    if svc._get_action() != "PutEvents":
        return ["*"]
    buses = [entry.get("EventBusName") or "default" for entry in _body(svc).get("Entries") or []]
    return [bus if bus.startswith("arn:") else _arn(svc, "events", f"event-bus/{bus}")
            for bus in dict.fromkeys(buses)] or ["*"]


def _bedrock(svc: Any) -> list[str]:
    from urllib.parse import unquote

    parts = unquote(svc.path).split("/")  # /model/{modelId}/invoke
    model = parts[2] if len(parts) > 2 and parts[1] == "model" else ""
    if model.startswith("arn:"):
        return [model]
    return [f"arn:aws:bedrock:{svc.region}::foundation-model/{model}"] if model else ["*"]


def _sesv2(svc: Any) -> list[str]:
    """Fix 33: SendEmail by its sender's identity (the address, else its domain)."""
    from email.utils import parseaddr

    from moto.ses.models import ses_backends

    if svc._get_action() != "SendEmail":
        return ["*"]
    address = parseaddr(str(_body(svc).get("FromEmailAddress") or ""))[1]
    domain = address.rpartition("@")[2]
    known = ses_backends[svc.current_account][svc.region].email_identities
    identity = address if address in known or domain not in known else domain
    return [_arn(svc, "ses", f"identity/{identity}")] if identity else ["*"]


def _scheduler(svc: Any) -> list[str]:
    """A schedule by its group and name (`schedule/{group}/{name}`); a group call by the group.
    `iam:PassRole` of the schedule's role, which AWS checks on CreateSchedule, is not checked."""
    from urllib.parse import parse_qs, unquote, urlparse

    url = urlparse(svc.uri)
    parts = [unquote(p) for p in url.path.split("/") if p]
    if len(parts) != 2 or parts[0] not in ("schedules", "schedule-groups"):
        return ["*"]
    if parts[0] == "schedule-groups":
        return [_arn(svc, "scheduler", f"schedule-group/{parts[1]}")]
    group = _body(svc).get("GroupName") or (parse_qs(url.query).get("groupName") or ["default"])[0]
    return [_arn(svc, "scheduler", f"schedule/{group}/{parts[1]}")]


STAGE_PATH = "{0}/(?P<stage_name>[^/]+)/@connections/(?P<connection_id>.+)$"
"""The stage path as the moto server's router can take it (its own `(.+/)+` loses the `+` there; an id
may hold a `/`, base64)."""
API_ID_HEADER = "X-Holdpoint-Api-Id"
"""The header the local gateway names its WebSocket API with when it forwards a call (fix 24)."""


def _management_routed(original: Callable[..., str | None]) -> Callable[..., str | None]:
    """Fix 23: a signed `execute-api` call to `.../@connections/{id}` is the management API's."""

    @functools.wraps(original)
    def infer(self: Any, environ: dict[str, Any], path: str) -> str | None:
        scope = str(environ.get("HTTP_AUTHORIZATION") or "").partition("Credential=")[2].split(",")[0].split("/")
        if len(scope) == 5 and scope[3] == "execute-api" and "/@connections/" in path:
            return f"execute-api.{scope[2]}.amazonaws.com"
        return original(self, environ, path)

    return infer


def _connection_arn(svc: Any) -> str:
    """The ARN API Gateway authorises a management call on (its verb, stage and connection)."""
    from urllib.parse import unquote, urlsplit

    stage, _, connection = urlsplit(svc.uri).path.strip("/").partition("@connections/")
    host = str(svc.headers.get("Host") or "")
    api_id = svc.headers.get(API_ID_HEADER) or (host.split(".", 1)[0] if ".execute-api." in host else "*")
    return _arn(svc, "execute-api", f"{api_id}/{stage.strip('/')}/{svc.method}/@connections/{unquote(connection)}")


def _management_authorised(request: Any, full_url: str, headers: Any) -> tuple[int, dict[str, str], str]:
    """Fix 24: authorise a management API call as `execute-api:ManageConnections`; nothing else."""
    from moto.apigatewaymanagementapi.responses import ApiGatewayManagementApiResponse

    svc: Any = ApiGatewayManagementApiResponse()
    svc.setup_class(request)
    svc._get_action = lambda: "ManageConnections"
    svc._authenticate_and_authorize_normal_action(_connection_arn(svc))
    return 200, {}, "{}"


def _patch_management() -> None:
    from moto.apigatewaymanagementapi import urls
    from moto.apigatewaymanagementapi.responses import ApiGatewayManagementApiResponse
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatcher: Any = DomainDispatcherApplication
    dispatcher.infer_service_region_host = _management_routed(dispatcher.infer_service_region_host)
    original = ApiGatewayManagementApiResponse.connect_to_apigateway
    ApiGatewayManagementApiResponse.connect_to_apigateway = staticmethod(_management_authorised)  # type: ignore[method-assign]
    for path, view in list(urls.url_paths.items()):
        if view is original:
            urls.url_paths[path] = _management_authorised
    urls.url_paths[STAGE_PATH] = _management_authorised


XRAY_ACTIONS = {"TraceSegments": "PutTraceSegments", "TraceSummaries": "GetTraceSummaries",
                "Traces": "BatchGetTraces", "TelemetryRecords": "PutTelemetryRecords",
                "ServiceGraph": "GetServiceGraph", "TraceGraph": "GetTraceGraph"}
"""Fix 26: X-Ray's paths, as the IAM actions of the calls they are."""


def _xray(svc: Any) -> list[tuple[str, str]]:
    path = svc._get_action()
    return [(XRAY_ACTIONS.get(path, path), "*")]


def _resolvers() -> dict[type[Any], Callable[[Any], list[Any]]]:
    from moto.awslambda.responses import LambdaResponse
    from moto.bedrockruntime.responses import BedrockRuntimeResponse
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler
    from moto.events.responses import EventsHandler
    from moto.kms.responses import KmsResponse
    from moto.scheduler.responses import EventBridgeSchedulerResponse
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.sesv2.responses import SESV2Response
    from moto.sqs.responses import SQSResponse
    from moto.stepfunctions.responses import StepFunctionResponse
    from moto.xray.responses import XRayResponse

    return {SQSResponse: lambda svc: ["*"],
            DynamoHandler: _dynamodb, DynamoDBStreamsHandler: _streams, StepFunctionResponse: _stepfunctions,
            SecretsManagerResponse: _secretsmanager, EventsHandler: _events, BedrockRuntimeResponse: _bedrock,
            EventBridgeSchedulerResponse: _scheduler, XRayResponse: _xray, LambdaResponse: _lambda,
            KmsResponse: _kms, SESV2Response: _sesv2}


def _enforcing() -> bool:
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    return ActionAuthenticatorMixin.request_count >= settings.INITIAL_NO_AUTH_ACTION_COUNT


def _resource_checked(original: Callable[..., None], resolvers: dict[type[Any], Callable[[Any], list[Any]]]
                      ) -> Callable[..., None]:
    """Fix 16: authorise against each resource the request names, not `*`."""

    @functools.wraps(original)
    def authorize(self: Any, resource: str = "*") -> None:
        resolve = resolvers.get(type(self))
        if resolve is None or not _enforcing():
            return original(self, resource)
        action = self._get_action()
        checks = resolve(self) if resource == "*" else [(_SQS_BATCH.get(action, action), resource)]
        for check in checks:
            name, arn = check if isinstance(check, tuple) else (action, check)
            self._get_action = lambda name=name: name  # the IAM action checked for this part
            try:
                original(self, arn)
            finally:
                del self._get_action
        return None

    return authorize


def _trust(self: Any, role_arn: str) -> bool:
    """Fix 17: does the role's trust policy admit this caller (an AWS principal, or the service the
    caller plays)? Conditions are not evaluated (a gap, local/README.md)."""
    role = self.backend.get_role_by_arn(role_arn)
    caller = self._access_key.arn
    service = SERVICE_PRINCIPALS.get(caller.rsplit("/", 1)[-1]) if ":user/" in caller else None
    statements = json.loads(role.assume_role_policy_document).get("Statement", [])
    allowed = False
    for stmt in statements if isinstance(statements, list) else [statements]:
        actions = stmt.get("Action", [])
        if "sts:AssumeRole" not in (actions if isinstance(actions, list) else [actions]):
            continue
        principal = stmt.get("Principal", {})
        names = principal.get("AWS", []) if isinstance(principal, dict) else principal
        services = principal.get("Service", []) if isinstance(principal, dict) else []
        names = names if isinstance(names, list) else [names]
        services = services if isinstance(services, list) else [services]
        matched = "*" in names or caller in names or (service is not None and service in services)
        if matched and stmt.get("Effect") == "Deny":
            return False
        allowed = allowed or (matched and stmt.get("Effect") == "Allow")
    return allowed


def _managed_policy(iam: Any, arn: str) -> None:
    """Create an AWS managed policy from moto's copy of it, unless the backend has it."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data
    from moto.iam.models import AWSManagedPolicy

    if arn in {p.arn for p in iam.managed_policies.values()}:
        return
    name = arn.rsplit("/", 1)[-1]
    data = json.loads(aws_managed_policies_data).get(name)
    if data is None:
        return
    policy = AWSManagedPolicy.from_data(name, iam.account_id, "us-east-1", data)
    iam.managed_policies[policy.arn] = policy


def _role_managed_policies(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 18: a CloudFormation role gets its ManagedPolicyArns attached."""

    @functools.wraps(original)
    def create(cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str,
               **kwargs: Any) -> Any:
        from moto.iam.models import iam_backends

        func: Callable[..., Any] = original.__func__  # type: ignore[attr-defined]
        role = func(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)
        iam = iam_backends[account_id]["aws"]
        for arn in cloudformation_json["Properties"].get("ManagedPolicyArns") or []:
            _managed_policy(iam, arn)
            iam.attach_role_policy(arn, role.name)
        return role

    return classmethod(create)  # type: ignore[arg-type,return-value]


def _role_signed(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 19: a state machine's service integration signs with its execution role."""

    @functools.wraps(original)
    def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        client = original(region, service, state_credentials)
        role_arn = getattr(state_credentials, "role_arn", None)
        if not role_arn:
            return client
        from botocore.credentials import Credentials
        from moto.sts.models import sts_backends

        account = role_arn.split(":")[4]
        session = sts_backends[account]["aws"].assume_role(region, "states", role_arn, "", 3600, "")
        client._request_signer._credentials = Credentials(  # noqa: SLF001 - re-sign one client
            session.access_key_id, session.secret_access_key, session.session_token)
        return client

    return client_for


def _patch_role_signed() -> None:
    import importlib
    import pkgutil

    from moto.stepfunctions.parser.asl.component.state.exec.state_task import service
    from moto.stepfunctions.parser.asl.utils import boto_client

    patched = _role_signed(boto_client.boto_client_for)
    boto_client.boto_client_for = patched
    for info in pkgutil.iter_modules(service.__path__, service.__name__ + "."):
        module = importlib.import_module(info.name)
        if hasattr(module, "boto_client_for"):
            module.boto_client_for = patched  # type: ignore[attr-defined]
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    lambda_eval_utils.boto_client_for = patched  # type: ignore[attr-defined]


def _signed_as_sent(original: Callable[..., Any]) -> Callable[..., Any]:
    """Fix 20: the payload of the recomputed signature is the body as sent, empty when it is."""

    @functools.wraps(original)
    def create(self: Any) -> Any:
        request = original(self)
        if not self._body and self._method in ("GET", "HEAD", "DELETE"):  # a form POST's body is in _data
            request.data = b""
        return request

    return create


def _document_as_given(original: Callable[..., None]) -> Callable[..., None]:
    """Fix 21: an inline policy stored as a parsed document is evaluated as that document."""

    @functools.wraps(original)
    def init(self: Any, policy: Any) -> None:
        if isinstance(policy, dict) and "Statement" in policy:
            policy = json.dumps(policy)
        original(self, policy)

    return init


def apply() -> None:
    """Install fixes 16-21 and 23-24 (`holdpoint_local.moto.apply` calls this once)."""
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.access_control import IAMPolicy, IAMRequestBase
    from moto.iam.models import Role

    mixin: Any = ActionAuthenticatorMixin
    mixin._authenticate_and_authorize_normal_action = _resource_checked(
        mixin._authenticate_and_authorize_normal_action, _resolvers())
    IAMRequestBase._check_role_trust_relationship = _trust  # type: ignore[method-assign]
    IAMPolicy.__init__ = _document_as_given(IAMPolicy.__init__)  # type: ignore[method-assign]
    IAMRequestBase._create_aws_request = _signed_as_sent(IAMRequestBase._create_aws_request)  # type: ignore[method-assign]
    Role.create_from_cloudformation_json = _role_managed_policies(  # type: ignore[method-assign]
        Role.create_from_cloudformation_json)
    _patch_role_signed()
    _patch_management()


def seed_identities(account_id: str, region: str = "us-east-1") -> None:
    """Create the operator and the Lambda service identities (idempotent)."""
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    iam = iam_backends[account_id]["aws"]
    if OPERATOR in iam.users:
        return
    for user, key, secret, policy in ((OPERATOR, OPERATOR_KEY, OPERATOR_KEY, ALLOW_ALL),
                                      (LAMBDA_SERVICE, LAMBDA_SERVICE_KEY, LAMBDA_SERVICE_SECRET, ASSUME_ONLY)):
        iam.create_user(region, user)
        iam.put_user_policy(user, "all", policy)
        access_key = iam.create_access_key(user)
        access_key.access_key_id, access_key.secret_access_key = key, secret
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account_id}:user/{OPERATOR}"},
         "Action": "sts:AssumeRole"}]})
    role = iam.create_role(OPERATOR, trust, "/", None, "the local operator", [], None)
    iam.put_role_policy(role.name, "all", ALLOW_ALL)
    session = sts_backends[account_id]["aws"].assume_role(region, OPERATOR, role.arn, "", 43200, "")
    session.access_key_id = session.secret_access_key = session.session_token = OPERATOR_KEY


def enforce(account_id: str) -> None:
    """Seed the identities and check every later request against IAM."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin

    seed_identities(account_id)
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
