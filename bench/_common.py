"""Shared pieces of the benchmarks: path setup, moto's in-process AWS, exact request metering.

Nothing here changes engine behaviour: the engine runs unmodified (the real Runner, Store,
WorkQueue and Parking), and the meter only listens to botocore events on their clients.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT / "layers" / "core", ROOT / "local", ROOT / "examples", ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

for _k, _v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
               "POWERTOOLS_METRICS_NAMESPACE": "Holdpoint", "POWERTOOLS_DEV": "false"}.items():
    os.environ.setdefault(_k, _v)


# --------------------------------------------------------------------------- AWS (moto)


@contextmanager
def mocked_aws() -> Iterator[dict[str, str]]:
    """moto's in-process AWS with the resources tests/conftest.py's `aws` fixture creates
    (table with the Inbox GSI, FIFO work queue, a ParkBranch stand-in)."""
    import boto3
    from moto import mock_aws

    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "TABLE_NAME", "WORK_QUEUE_URL",
                                            "PARK_STATE_MACHINE_ARN")}
    os.environ.pop("AWS_ENDPOINT_URL", None)
    try:
        with mock_aws():
            ddb = boto3.client("dynamodb")
            ddb.create_table(
                TableName="holdpoint", BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in (
                    "PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "GSI3PK", "GSI3SK")],
                KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
                GlobalSecondaryIndexes=[
                    {"IndexName": name, "Projection": projection, "KeySchema": [
                        {"AttributeName": f"GSI{n}PK", "KeyType": "HASH"},
                        {"AttributeName": f"GSI{n}SK", "KeyType": "RANGE"}]}
                    for n, name, projection in (
                        (1, "Inbox", {"ProjectionType": "ALL"}),
                        (2, "Sessions", {"ProjectionType": "INCLUDE", "NonKeyAttributes": [
                            "agent_id", "status", "owner", "sub_agent"]}),
                        (3, "History", {"ProjectionType": "INCLUDE", "NonKeyAttributes": [
                            "status", "agent_id", "reason", "expires_at"]}))])
            queue = boto3.client("sqs").create_queue(
                QueueName="work.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
            definition = {"StartAt": "Park", "States": {"Park": {"Type": "Pass", "End": True}}}
            machine = boto3.client("stepfunctions").create_state_machine(
                name="park", definition=json.dumps(definition),
                roleArn="arn:aws:iam::123456789012:role/park")["stateMachineArn"]
            env = {"TABLE_NAME": "holdpoint", "WORK_QUEUE_URL": queue, "PARK_STATE_MACHINE_ARN": machine}
            os.environ.update(env)
            yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------- item sizes


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").lstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def value_size(value: dict[str, Any]) -> int:
    """DynamoDB's documented size of one attribute value."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return math.ceil(len(v) * 3 / 4)  # base64 on the wire
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(_number_size(s) for s in v)
    if kind == "L":
        return 3 + sum(1 + value_size(x) for x in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(x) for k, x in v.items())
    return len(json.dumps(v))


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return item["PK"]["S"], item["SK"]["S"]


# --------------------------------------------------------------------------- the meter

GSI_OVERHEAD = 100  # bytes DynamoDB adds to every index entry
INDEXES: dict[str, tuple[str, ...] | None] = {  # interrupt indexes by partition key: what each projects
    "GSI1PK": None,  # Inbox: every attribute
    "GSI3PK": ("GSI3PK", "GSI3SK", "status", "agent_id", "reason", "expires_at"),  # History: INCLUDE
}
LISTED = ("GSI2PK", "GSI2SK", "agent_id", "status", "owner", "sub_agent")
"""The `Sessions` GSI's keys and projection on a session header: the index is written only when they change."""


@dataclass
class Rec:
    """One AWS request as the client sent and received it."""

    service: str
    op: str
    label: str
    req_bytes: int
    resp_bytes: int
    ok: bool = True
    items_written: int = 0
    write_item_bytes: int = 0   # sum of written item sizes (max of old/new, DynamoDB's rule)
    items_read: int = 0
    read_item_bytes: int = 0
    wru: float = 0.0            # on-demand write request units, base table
    gsi_wru: float = 0.0        # ... on the Inbox and Sessions GSIs
    rru: float = 0.0            # on-demand read request units
    max_item: int = 0           # largest item written
    wru_by_kind: dict[str, float] = field(default_factory=dict)  # by SK prefix: H, N, Q, K, T, I, E


@dataclass
class Meter:
    """Counts every request on the hooked clients, exactly, from botocore's own events.

    `before-call.<service>` gives the serialized request body, `after-call.<service>` the raw
    HTTP response and the parsed reply (it fires for error replies too, before the raise).
    Request units are computed from item sizes with DynamoDB's on-demand rules: 1 WRU per KB
    written (2 in a transaction), the larger of the old and new item; 1 RRU per 4 KB read
    strongly consistent (0.5 eventually consistent), summed over a Query's items.
    """

    records: list[Rec] = field(default_factory=list)
    label: str = "-"
    sizes: dict[tuple[str, str], int] = field(default_factory=dict)      # item sizes we have seen written
    indexed: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # item -> {index: projected}
    listed: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # Sessions GSI rows written
    _pending: dict[int, dict[str, Any]] = field(default_factory=dict)

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_id.hyphenize()
        client.meta.events.register(f"before-call.{service}", self._before)
        client.meta.events.register(f"after-call.{service}", self._after)
        return client

    # hooks -------------------------------------------------------------------------------
    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b""
        if isinstance(body, dict):  # query protocol before serialisation (not used by these services)
            body = json.dumps(body).encode()
        if isinstance(body, str):
            body = body.encode()
        context["bench_req"] = body

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any],
               **_: Any) -> None:
        raw = context.get("bench_req", b"")
        service = model.service_model.service_id.hyphenize()
        rec = Rec(service=service, op=model.name, label=self.label, req_bytes=len(raw),
                  resp_bytes=len(http_response.content or b""), ok=http_response.status_code < 300)
        if service == "dynamodb":
            try:
                req = json.loads(raw or b"{}")
            except ValueError:
                req = {}
            self._units(rec, req, parsed)
        self.records.append(rec)

    # DynamoDB request units ------------------------------------------------------------------
    def _write(self, rec: Rec, item: dict[str, Any] | None, key: tuple[str, str], factor: int,
               delete: bool = False) -> None:
        old = self.sizes.get(key, 0)
        new = 0 if delete or item is None else item_size(item)
        size = max(old, new)
        rec.items_written += 1
        rec.write_item_bytes += size
        rec.max_item = max(rec.max_item, new)
        if rec.ok:
            units = factor * max(1, math.ceil(size / 1024))
            rec.wru += units
            kind = key[1].split("#", 1)[0]
            rec.wru_by_kind[kind] = rec.wru_by_kind.get(kind, 0) + units
        else:  # a failed condition still costs the write (DynamoDB charges conditional failures)
            rec.wru += factor * max(1, math.ceil(old / 1024))
        if not rec.ok:
            return
        # An index holding the item is written when a write adds, moves or removes its entry, or
        # changes an attribute it projects: every write for the Inbox (all attributes), only
        # raising and closing for History (keys and four filter attributes).
        had = self.indexed.get(key, {})
        now = had if item is None and not delete else {} if delete or item is None else {
            index: tuple(json.dumps(item.get(a), sort_keys=True) for a in attrs) if attrs else object()
            for index, attrs in INDEXES.items() if index in item}
        for index, projected in now.items():
            if had.get(index) != projected:
                entry = new if INDEXES[index] is None else 0
                rec.gsi_wru += max(1, math.ceil((entry + GSI_OVERHEAD) / 1024))
        rec.gsi_wru += sum(1 for index in had if index not in now)  # index entries deleted
        if now:
            self.indexed[key] = now
        else:
            self.indexed.pop(key, None)
        row = tuple(json.dumps(item.get(a), sort_keys=True) for a in LISTED) if item and "GSI2PK" in item else None
        if row is not None and not delete and self.listed.get(key) != row:
            rec.gsi_wru += 1  # a listing row is far below 1 KB
            self.listed[key] = row
        if delete:
            self.sizes.pop(key, None)
        else:
            self.sizes[key] = new

    def _read(self, rec: Rec, items: list[dict[str, Any]], consistent: bool, per_item: bool = False) -> None:
        sizes = [self.sizes.get(_key(i), item_size(i)) if "PK" in i and "SK" in i else item_size(i) for i in items]
        rec.items_read += len(items)
        rec.read_item_bytes += sum(sizes)
        unit = 1.0 if consistent else 0.5
        if per_item:
            rec.rru += sum(unit * max(1, math.ceil(s / 4096)) for s in sizes)
        else:
            rec.rru += unit * max(1, math.ceil(sum(sizes) / 4096))

    def _units(self, rec: Rec, req: dict[str, Any], parsed: dict[str, Any]) -> None:
        op = rec.op
        if op == "TransactWriteItems":
            for entry in req.get("TransactItems", []):
                (kind, body), = entry.items()
                if kind == "Put":
                    self._write(rec, body["Item"], _key(body["Item"]), 2)
                elif kind == "Delete":
                    self._write(rec, None, _key(body["Key"]), 2, delete=True)
                elif kind == "Update":
                    self._write(rec, None, _key(body["Key"]), 2)
                elif kind == "ConditionCheck":
                    rec.rru += 2 * max(1, math.ceil(self.sizes.get(_key(body["Key"]), 0) / 4096))
        elif op == "PutItem":
            self._write(rec, req["Item"], _key(req["Item"]), 1)
        elif op == "UpdateItem":
            new = parsed.get("Attributes") if rec.ok and req.get("ReturnValues") == "ALL_NEW" else None
            self._write(rec, new, _key(req["Key"]), 1)
        elif op == "DeleteItem":
            self._write(rec, None, _key(req["Key"]), 1, delete=True)
        elif op == "Query":
            self._read(rec, parsed.get("Items", []), bool(req.get("ConsistentRead")))
        elif op == "GetItem":
            item = parsed.get("Item")
            if item is not None:
                full = {**item, **{k: v for k, v in req["Key"].items()}}
                size = self.sizes.get(_key(full), item_size(item))
                rec.items_read += 1
                rec.read_item_bytes += size
                rec.rru += (1.0 if req.get("ConsistentRead") else 0.5) * max(1, math.ceil(size / 4096))
            else:
                rec.rru += 1.0 if req.get("ConsistentRead") else 0.5
        elif op == "BatchGetItem":  # each item rounded up to 4 KB on its own
            for name, items in (parsed.get("Responses") or {}).items():
                consistent = bool(req.get("RequestItems", {}).get(name, {}).get("ConsistentRead"))
                self._read(rec, items, consistent, per_item=True)

    # aggregation -----------------------------------------------------------------------------
    def take(self) -> list[Rec]:
        out, self.records = self.records, []
        return out


WRITE_OPS = {"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}
READ_OPS = {"Query", "GetItem", "BatchGetItem", "Scan", "TransactGetItems"}


@dataclass
class Totals:
    """Sums over a set of requests."""

    requests: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ddb_write_requests: int = 0
    ddb_write_bytes: int = 0        # request body bytes of write requests
    ddb_items_written: int = 0
    ddb_write_item_bytes: int = 0
    ddb_read_requests: int = 0
    ddb_read_bytes: int = 0         # response body bytes of read requests
    ddb_items_read: int = 0
    ddb_read_item_bytes: int = 0
    wru: float = 0.0
    gsi_wru: float = 0.0
    rru: float = 0.0
    sqs_requests: int = 0
    sfn_requests: int = 0
    failed: int = 0
    max_item: int = 0
    wru_by_kind: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @classmethod
    def of(cls, recs: list[Rec]) -> Totals:
        t = cls()
        for r in recs:
            t.requests[f"{r.service}:{r.op}"] += 1
            t.failed += 0 if r.ok else 1
            if r.service == "dynamodb":
                t.max_item = max(t.max_item, r.max_item)
                for k, v in r.wru_by_kind.items():
                    t.wru_by_kind[k] += v
                t.wru += r.wru
                t.gsi_wru += r.gsi_wru
                t.rru += r.rru
                if r.op in WRITE_OPS:
                    t.ddb_write_requests += 1
                    t.ddb_write_bytes += r.req_bytes
                    t.ddb_items_written += r.items_written
                    t.ddb_write_item_bytes += r.write_item_bytes
                elif r.op in READ_OPS:
                    t.ddb_read_requests += 1
                    t.ddb_read_bytes += r.resp_bytes
                    t.ddb_items_read += r.items_read
                    t.ddb_read_item_bytes += r.read_item_bytes
            elif r.service == "sqs":
                t.sqs_requests += 1
            elif r.service == "sfn":
                t.sfn_requests += 1
        return t

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("requests", "wru_by_kind")}
        out["requests"] = dict(self.requests)
        out["wru_by_kind"] = dict(self.wru_by_kind)
        return out


# --------------------------------------------------------------------------- tables


def table(headers: list[str], rows: list[list[Any]], title: str | None = None) -> str:
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = []
    if title:
        lines.append(f"\n{title}")
    lines.append("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        padded = (c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths, strict=False))
        lines.append("| " + " | ".join(padded) + " |")
    return "\n".join(lines)


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or text[0] in "-$.") and not text.startswith("--")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e9:
            return f"{int(value)}"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return str(value)


def ratio(a: float, b: float) -> str:
    if not b:
        return "n/a"
    return f"{a / b:.2f}x"

