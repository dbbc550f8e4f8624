"""DynamoDB single-table store (docs/ARCHITECTURE.md). Every change is one conditional write.

Session partition `T#{tenant}#S#{session}`:

| SK | item |
| --- | --- |
| `H` | header: version counter, head, seq, worker state |
| `H#A` | the agent config in force (written only when it changes) |
| `I#{id}` | interrupt (top-level `status`, `origin`, inbox GSI keys while open) |
| `K#{id}` | call |
| `N#{id}` | tree node |
| `Q#{id}` | decision |
| `T#{id}` | turn |
| `E#{seq:012}` | event log, append-only |

State sorts at and after `H`, events before it, so a step reads state with one Query
and never pages through the event log.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, fields
from typing import Any

import boto3
from botocore.exceptions import ClientError

from holdpoint.core.state import Call, Decision, Event, Header, Interrupt, Record, SessionState, Turn
from holdpoint.core.tree import Node, Tree
from holdpoint.ports import Conflict, ResolveOutcome, TooManyChanges

PREFIX = {Call: "K#", Decision: "Q#", Interrupt: "I#", Turn: "T#"}
AGENT_SK = "H#A"  # sorts right after the header "H", inside the state range a step loads
OFFLOAD_BYTES = 300_000  # bodies above this go to S3 (DynamoDB items stop at 400 KB)
MAX_TRANSACT_ITEMS = 100


def agent_digest(agent: Any) -> str:
    return hashlib.sha256(json.dumps(agent, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def session_pk(tenant: str, session_id: str) -> str:
    return f"T#{tenant}#S#{session_id}"


def inbox_pk(tenant: str) -> str:
    return f"T#{tenant}#OPEN"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _load(cls: type, body: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in body.items() if k in names})


def dynamodb_client() -> Any:
    return boto3.client("dynamodb")


class Store:
    def __init__(self, table: str | None = None, client: Any = None, s3: Any = None) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.client = client or dynamodb_client()
        self._s3 = s3
        self.bucket = os.environ.get("PAYLOAD_BUCKET", "")

    # --- large bodies by reference ------------------------------------------------------

    def body_attrs(self, pk: str, sk: str, body: Any) -> dict[str, Any]:
        """The item's `body`, or a `body_ref` to S3 when it would not fit DynamoDB's 400 KB item.
        The object is written first and named by its content, so a retried step rewrites the
        same object and a failed transaction leaves only an unreferenced object behind."""
        text = json.dumps(body, separators=(",", ":"))
        if len(text.encode()) <= OFFLOAD_BYTES or not self.bucket:
            return {"body": _s(text)}
        digest = hashlib.sha256(text.encode()).hexdigest()
        key = f"{pk}/{sk}/{digest}.json"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=text.encode(), ContentType="application/json")
        return {"body_ref": _s(key)}

    def body(self, item: dict[str, Any]) -> Any:
        if "body_ref" in item:
            got = self.s3.get_object(Bucket=self.bucket, Key=item["body_ref"]["S"])
            return json.loads(got["Body"].read())
        return json.loads(item["body"]["S"])

    @property
    def s3(self) -> Any:
        if self._s3 is None:
            self._s3 = boto3.client("s3")
        return self._s3

    # --- sessions --------------------------------------------------------------------

    def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> SessionState | None:
        """The session's state items (events excluded). `head_only` reads just the header, the
        agent item and the interrupts (`H` .. `I#…` sort together), for steps that touch nothing
        else: a load that does not grow with the tree. Such a state has no nodes, calls or
        decisions, so only code that needs none of them may be given one."""
        pk = session_pk(tenant, session_id)
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :h AND :i" if head_only else "PK = :pk AND SK >= :h",
            "ExpressionAttributeValues": {":pk": _s(pk), ":h": _s("H"), **({":i": _s("I$")} if head_only else {})},
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if not items or items[0]["SK"]["S"] != "H":
            return None
        state = self._decode(items)
        state.now = time.time()  # the time of the load; a service with its own clock overrides it
        return state

    def _decode(self, items: list[dict[str, Any]]) -> SessionState:
        header_body = self.body(items[0])
        header = _load(Header, header_body)
        header.version = int(items[0]["version"]["N"])
        state = SessionState(header=header, tree=Tree(head_id=header.head_id))
        for item in items[1:]:
            sk = item["SK"]["S"]
            if sk == AGENT_SK:
                header.agent = self.body(item)
                state.agent_digest = agent_digest(header.agent)
                continue
            body = self.body(item)
            rev = int(item.get("rev", {"N": "0"})["N"])
            if sk.startswith("N#"):
                state.tree.add(Node(id=body["id"], parent_id=body.get("parent_id"), message=body["message"],
                                    order=body.get("order", 0)))
            elif sk.startswith("K#"):
                call = _load(Call, body)
                call.rev = rev
                state.calls[call.id] = call
            elif sk.startswith("Q#"):
                decision = _load(Decision, body)
                decision.rev = rev
                state.decisions[decision.id] = decision
            elif sk.startswith("T#"):
                turn = _load(Turn, body)
                turn.rev = rev
                state.turns[turn.id] = turn
            elif sk.startswith("I#"):
                interrupt = self._interrupt(item, body)
                state.interrupts[interrupt.interrupt_id] = interrupt
        return state

    @staticmethod
    def _interrupt(item: dict[str, Any], body: dict[str, Any]) -> Interrupt:
        """An interrupt item: its body, with the attributes the resume's update writes on top."""
        for attr in ("status", "resolved_at"):
            if attr in item:
                body[attr] = item[attr]["S"]
        for attr in ("resolution", "responder"):
            if attr in item:
                body[attr] = json.loads(item[attr]["S"])
        interrupt: Interrupt = _load(Interrupt, body)
        interrupt.rev = int(item.get("rev", {"N": "0"})["N"])
        return interrupt

    def _record_item(self, pk: str, record: Record, tenant: str, session_id: str) -> dict[str, Any]:
        body = asdict(record)
        body.pop("rev", None)
        key = record.interrupt_id if isinstance(record, Interrupt) else record.id
        item: dict[str, Any] = {
            "PK": _s(pk),
            "SK": _s(PREFIX[type(record)] + key),
            "rev": _n(record.rev + 1),
            **self.body_attrs(pk, PREFIX[type(record)] + key, body),
        }
        status = getattr(record, "status", None)
        if status:
            item["status"] = _s(status)
        if isinstance(record, Interrupt):
            item["origin"] = _s(record.origin)
            if record.owner:
                item["owner"] = _s(record.owner)
            if record.resolution is not None:
                item["resolution"] = _s(json.dumps(record.resolution))
            if record.responder is not None:
                item["responder"] = _s(json.dumps(record.responder))
            if record.resolved_at:
                item["resolved_at"] = _s(record.resolved_at)
            if record.status == "open":
                item["GSI1PK"] = _s(inbox_pk(tenant))
                item["GSI1SK"] = _s(f"{record.created_at}#{session_id}#{record.interrupt_id}")
        return item

    def commit(self, state: SessionState) -> int:
        """Write what the step changed in one transaction, conditioned on the header version."""
        if not state.changed:
            return 0
        h = state.header
        pk = session_pk(h.tenant, h.session_id)
        ops: list[dict[str, Any]] = []
        header_body = asdict(h)
        header_body.pop("version", None)
        # The agent config in force lives in its own item, written only when it changes, so a
        # step does not rewrite (and pay for) a large system prompt every time.
        agent = header_body.pop("agent", None)
        digest = agent_digest(agent)
        if digest != state.agent_digest:
            ops.append({"Put": {"TableName": self.table,
                                "Item": {"PK": _s(pk), "SK": _s(AGENT_SK), **self.body_attrs(pk, AGENT_SK, agent)}}})
        header_item = {
            "PK": _s(pk),
            "SK": _s("H"),
            "version": _n(h.version + 1),
            **self.body_attrs(pk, "H", header_body),
        }
        if state.exists:
            ops.append({"Put": {"TableName": self.table, "Item": header_item,
                                "ConditionExpression": "version = :v",
                                "ExpressionAttributeValues": {":v": _n(h.version)}}})
        else:
            ops.append({"Put": {"TableName": self.table, "Item": header_item,
                                "ConditionExpression": "attribute_not_exists(PK)"}})
        for node in state.new_nodes:
            body = {"id": node.id, "parent_id": node.parent_id, "message": node.message, "order": node.order}
            ops.append({"Put": {"TableName": self.table,
                                "Item": {"PK": _s(pk), "SK": _s(f"N#{node.id}"),
                                         **self.body_attrs(pk, f"N#{node.id}", body)},
                                "ConditionExpression": "attribute_not_exists(SK)"}})
        for key, record in state.dirty.items():
            item = self._record_item(pk, record, h.tenant, h.session_id)
            if key in state.new_keys and record.rev == 0:
                ops.append({"Put": {"TableName": self.table, "Item": item,
                                    "ConditionExpression": "attribute_not_exists(SK)"}})
            else:
                ops.append({"Put": {"TableName": self.table, "Item": item,
                                    "ConditionExpression": "rev = :r",
                                    "ExpressionAttributeValues": {":r": _n(record.rev)}}})
        for event in state.events:
            ops.append({"Put": {"TableName": self.table,
                                "Item": {"PK": _s(pk), "SK": _s(f"E#{event.seq:012d}"),
                                         **self.body_attrs(pk, f"E#{event.seq:012d}", event.wire())},
                                "ConditionExpression": "attribute_not_exists(SK)"}})
        if len(ops) > MAX_TRANSACT_ITEMS:
            raise TooManyChanges(f"a step may change at most {MAX_TRANSACT_ITEMS} items, this one {len(ops)}")
        try:
            self.client.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                raise Conflict(str(exc)) from exc
            raise
        h.version += 1
        state.agent_digest = digest
        return len(ops)

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[dict[str, Any]]:
        page = self.client.query(
            TableName=self.table,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :a AND :b",
            ExpressionAttributeValues={":pk": _s(session_pk(tenant, session_id)),
                                       ":a": _s(f"E#{after_seq + 1:012d}"), ":b": _s("E#999999999999")},
            Limit=limit,
            ConsistentRead=True,
        )
        return [self.body(item) for item in page.get("Items", [])]

    def session_exists(self, tenant: str, session_id: str, owner: str | None = None) -> bool:
        got = self.client.get_item(TableName=self.table, Key={"PK": _s(session_pk(tenant, session_id)),
                                                              "SK": _s("H")}, ConsistentRead=True)
        item = got.get("Item")
        if not item:
            return False
        return owner is None or self.body(item).get("identity", {}).get("id") == owner

    # --- interrupts --------------------------------------------------------------------

    def resolve_interrupt(self, tenant: str, session_id: str, interrupt_id: str, *, resolution: Any,
                          responder: dict[str, Any], allowed_origins: list[str], at: str,
                          owner: str | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: flip `open -> resolved` exactly once. Returns (outcome, the interrupt as it now is)
        with outcome `resolved`, `noop` (stale, unknown or duplicate: no interrupt when unknown),
        `forbidden` (its origin outranks the caller) or `not_found` (another owner's session)."""
        names = {"#s": "status"}
        values: dict[str, Any] = {
            ":open": _s("open"),
            ":resolved": _s("resolved"),
            ":one": _n(1),
            ":res": _s(json.dumps(resolution)),
            ":who": _s(json.dumps(responder)),
            ":at": _s(at),
        }
        origin_keys = []
        for i, origin in enumerate(allowed_origins):
            values[f":o{i}"] = _s(origin)
            origin_keys.append(f":o{i}")
        condition = "#s = :open"
        condition += f" AND origin IN ({', '.join(origin_keys)})" if origin_keys else " AND attribute_not_exists(PK)"
        if owner is not None:
            condition += " AND #owner = :owner"
            names["#owner"] = "owner"
            values[":owner"] = _s(owner)
        try:
            out = self.client.update_item(
                TableName=self.table,
                Key={"PK": _s(session_pk(tenant, session_id)), "SK": _s(f"I#{interrupt_id}")},
                UpdateExpression="SET #s = :resolved, rev = rev + :one, resolution = :res, responder = :who, "
                "resolved_at = :at REMOVE GSI1PK, GSI1SK",
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old = exc.response.get("Item") or {}
            if owner is not None and old and old.get("owner", {}).get("S") != owner:
                return "not_found", None
            found = self._interrupt(old, self.body(old)) if old else None
            if found is not None and found.status == "open":
                return "forbidden", found
            return "noop", found
        new = out["Attributes"]
        return "resolved", self._interrupt(new, self.body(new))

    def inbox(self, tenant: str, limit: int, cursor: dict[str, Any] | None) -> tuple[list[dict[str, Any]], Any]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": "Inbox",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": _s(inbox_pk(tenant))},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            kwargs["ExclusiveStartKey"] = cursor
        page = self.client.query(**kwargs)
        out = []
        names = {f.name for f in fields(Interrupt)}
        for item in page.get("Items", []):
            body = self.body(item)
            session_id = item["PK"]["S"].split("#S#", 1)[1]
            view = Interrupt(**{k: v for k, v in body.items() if k in names}).view()
            out.append({"session_id": session_id, **view, "owner": body.get("owner")})
        return out, page.get("LastEvaluatedKey")

    # --- agents and keys ---------------------------------------------------------------

    def put_agent(self, tenant: str, agent_id: str, config: dict[str, Any]) -> None:
        self.client.put_item(TableName=self.table, Item={
            "PK": _s(f"T#{tenant}#A#{agent_id}"), "SK": _s("AGENT"), "body": _s(json.dumps(config))})

    def get_agent(self, tenant: str, agent_id: str) -> dict[str, Any] | None:
        got = self.client.get_item(TableName=self.table, Key={"PK": _s(f"T#{tenant}#A#{agent_id}"),
                                                              "SK": _s("AGENT")})
        item = got.get("Item")
        return json.loads(item["body"]["S"]) if item else None

    def put_api_key(self, key_hash: str, tenant: str, subject: str, origin: str) -> None:
        self.client.put_item(TableName=self.table, Item={
            "PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY"), "tenant": _s(tenant), "subject": _s(subject),
            "origin": _s(origin), "status": _s("active")})

    def revoke_api_key(self, key_hash: str) -> bool:
        try:
            self.client.update_item(TableName=self.table, Key={"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY")},
                                    UpdateExpression="SET #s = :r", ConditionExpression="attribute_exists(PK)",
                                    ExpressionAttributeNames={"#s": "status"},
                                    ExpressionAttributeValues={":r": _s("revoked")})
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def get_api_key(self, key_hash: str) -> dict[str, str] | None:
        got = self.client.get_item(TableName=self.table, Key={"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY")})
        item = got.get("Item")
        if not item or item.get("status", {}).get("S") != "active":
            return None
        return {k: item[k]["S"] for k in ("tenant", "subject", "origin")}


def event_from(body: dict[str, Any]) -> Event:
    return Event(seq=body["seq"], type=body["type"], data=body["data"], at=body["at"])
