"""DynamoDB single-table store (docs/ARCHITECTURE.md). Every change is one conditional write.

Session partition `T#{tenant}#S#{session}`:

| SK | item |
| --- | --- |
| `H` | header: version counter, head, seq, worker state |
| `H#A` | the agent config in force (written only when it changes) |
| `I#{id}` | interrupt (top level: `status`, `origin`, `generation`, `task_token`, index keys (A6), `ttl`) |
| `K#{id}` | call |
| `N#{id}` | tree node |
| `Q#{id}` | decision |
| `T#{id}` | turn |
| `E#{seq:012}` | event log, append-only; `etype` (its type) lets the stream filter pick interrupt events |
| `D#{event}#{n}` | a notification's delivery to the agent's `notify[n]` (`aws/deliveries.py`) |

Quota partition `T#{tenant}#QUOTA` (docs/SECURITY.md, "Quotas"): `OPEN` (the tenant's interrupts
holding a slot, `n`), `S#{epoch second}` (sessions created in that second, `n`, with a `ttl`), and
the stream wait leases (`aws/leases.py`).

State sorts at and after `H`, events before it, so a step reads state with one Query
and never pages through the event log.

Warm loads (docs/PERFORMANCE.md (a)). The state splits into a *head* (`H` .. `I$`: header, agent,
interrupts) and a *tail* (`K#`, `N#`, `Q#`, `T#`: calls, nodes, decisions, turns). The tail is
written only by `commit`, always together with the header; the head also changes outside it (the
resume flips an interrupt, and the park message stores its task token, without touching the
header). So a store with a `StateCache` keeps each session's tail as of a header version, and a
later load reads the head (one small Query), then only the tail keys the header's change log
(`chg`) lists since that version (BatchGetItem, strongly consistent). The header's `sum` (an XOR of
SHA-256 hashes of every tail item) proves the result: a cached tail that does not hash to it
(dropped, stale, from another version line, corrupted) is thrown away and the tail is read in full.
A writer that cannot vouch for the sum writes none (a `Put` of the header drops it), which turns
warm loads of the session off until a commit writes one again and a full read confirms it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, fields
from functools import reduce
from typing import Any

import boto3
from botocore.exceptions import ClientError

from holdpoint.core import interrupts as rules
from holdpoint.core import quotas
from holdpoint.core.state import Call, Decision, Event, Header, Interrupt, Record, SessionState, Turn
from holdpoint.core.tree import Node, Tree
from holdpoint.ports import MAX_SEQ, Conflict, InboxQuery, InboxRow, ResolveOutcome, SessionFilters, TooManyChanges

PREFIX = {Call: "K#", Decision: "Q#", Interrupt: "I#", Turn: "T#"}
AGENT_SK = "H#A"  # sorts right after the header "H", inside the state range a step loads
OFFLOAD_BYTES = 300_000  # bodies above this go to S3 (DynamoDB items stop at 400 KB)
MAX_TRANSACT_ITEMS = 100
HEAD_END = "I$"  # the head range is `H` .. `I$` (header, agent, interrupts); the tail sorts after it
LOG_VERSIONS = 4  # versions the header's change log covers: a cache further behind reads the tail in full
LOG_CHARS = 1200  # and at most this much of it, so the header (rewritten by every commit) stays small
MAX_DELTA_KEYS = 100  # more changed keys than this and reading the whole tail is cheaper
CACHE_ENV = "HOLDPOINT_STATE_CACHE"  # sessions a container keeps warm; 0 turns the cache off


INTERRUPT_DEFAULTS = {f.name: f.default for f in fields(Interrupt) if f.default is not MISSING}
INTERRUPT_DEFAULTS["reminded"] = []  # the one list field (a default_factory)
"""An interrupt item's body leaves out the fields at these values; loading fills them in again."""


def agent_digest(agent: Any) -> str:
    return hashlib.sha256(json.dumps(agent, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def session_pk(tenant: str, session_id: str) -> str:
    return f"T#{tenant}#S#{session_id}"


def inbox_pk(tenant: str) -> str:
    """The Inbox index's partition: a tenant's open interrupts (sparse, all attributes projected)."""
    return f"T#{tenant}#OPEN"


def sessions_pk(tenant: str) -> str:
    return f"T#{tenant}#LIST"


LIST_READS = 5  # Query pages one listing page may read when filters skip rows (a cursor resumes after)
LIST_KEYS = ("GSI2PK", "GSI2SK", "PK", "SK")
LIST_ATTRS = {"agent_id": "ag", "status": "st", "owner": "ow"}  # the listing's row on the header: short names


def listing_attrs(state: SessionState) -> dict[str, Any]:
    """The header's `Sessions` GSI keys (`GSI2SK` is `{created_at}#{session}`: newest first) and
    the row a listing shows, under short names (`ag`, `st`, `ow`; `sub` only on a sub-agent's
    session), because every commit rewrites the header and pays for its bytes. DynamoDB writes
    the index only when one of these changes (the keys never do), so a commit pays an index write
    only when the session's status changes. A head-only load has no tree to read the status from:
    its commit keeps the status it loaded."""
    h = state.header
    status = state.listed_status if state.head_only and state.listed_status else rules.status(state)
    out: dict[str, Any] = {"GSI2PK": _s(sessions_pk(h.tenant)), "GSI2SK": _s(f"{h.created_at}#{h.session_id}"),
                           "ag": _s(h.agent_id), "st": _s(status)}
    owner = (h.identity or {}).get("id")
    if owner:
        out["ow"] = _s(str(owner))
    if h.ancestry:
        out["sub"] = {"BOOL": True}
    return out
def quota_pk(tenant: str) -> str:
    return f"T#{tenant}#QUOTA"


SESSION_COUNT_TTL = 3600  # seconds a per-second creation counter is kept before DynamoDB's TTL may drop it


def history_pk(tenant: str) -> str:
    """The History index's partition: every interrupt of the tenant, whatever its status (A6). It
    projects only what the inbox filters on, so it is written when an interrupt is raised and
    when its status changes, not by every rewrite of the item."""
    return f"T#{tenant}#ALL"


MAX_INBOX_PAGES = 10  # a filtered inbox page reads at most this many index pages, then hands a cursor


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _load(cls: type, body: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in body.items() if k in names})


def dynamodb_client() -> Any:
    return boto3.client("dynamodb")


# --- the warm-load cache ------------------------------------------------------------------


def canonical(item: dict[str, Any]) -> str:
    """An item as one immutable string: what the cache keeps and what the header's `sum` hashes."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def item_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "big")


def tail_digest(texts: Any) -> int:
    """XOR of the items' hashes: independent of order, and updated by XOR-ing old and new items out and in."""
    return reduce(lambda acc, text: acc ^ item_hash(text), texts, 0)


def is_tail(sk: str) -> bool:
    return sk > HEAD_END


@dataclass
class Cached:
    """A session's tail as of header `version`: SK -> canonical item text."""

    version: int
    items: dict[str, str]

    def size(self) -> int:
        return sum(len(text) for text in self.items.values())


@dataclass
class Head:
    """The header's `version`, `sum` and change log as the last load of the session read them:
    what a commit conditions on and carries forward."""

    version: int
    sum: str | None
    log: list[Any]


class StateCache:
    """Per container, least recently used first out, bounded by sessions and by bytes kept. Locked:
    the local stack's front end serves requests on threads that share one store."""

    def __init__(self, max_sessions: int = 32, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_sessions = max_sessions
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], Cached] = OrderedDict()
        self._bytes: dict[tuple[str, str], int] = {}
        self._heads: OrderedDict[tuple[str, str], Head] = OrderedDict()
        self._lock = threading.RLock()

    def head(self, key: tuple[str, str]) -> Head | None:
        with self._lock:
            return self._heads.get(key)

    def note(self, key: tuple[str, str], head: Head) -> None:
        with self._lock:
            self._heads[key] = head
            self._heads.move_to_end(key)
            while len(self._heads) > self.max_sessions:
                self._heads.popitem(last=False)

    def get(self, key: tuple[str, str]) -> Cached | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: tuple[str, str], entry: Cached) -> None:
        size = entry.size()
        with self._lock:
            self.drop_tail(key)
            if size > self.max_bytes:
                return
            self._entries[key] = entry
            self._bytes[key] = size
            while len(self._entries) > self.max_sessions or sum(self._bytes.values()) > self.max_bytes:
                oldest, _ = self._entries.popitem(last=False)
                self._bytes.pop(oldest, None)

    def drop_tail(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._bytes.pop(key, None)

    def drop(self, key: tuple[str, str]) -> None:
        with self._lock:
            self.drop_tail(key)
            self._heads.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


def head_of(header: dict[str, Any]) -> Head:
    return Head(int(header["version"]["N"]), header.get("sum", {}).get("S"),
                json.loads(header["chg"]["S"]) if "chg" in header else [])


def cache_from_env() -> StateCache | None:
    sessions = int(os.environ.get(CACHE_ENV, "32") or 0)
    return StateCache(max_sessions=sessions) if sessions > 0 else None


def _nothing(state: SessionState) -> None:
    """No one to tell of a commit."""


class Store:
    def __init__(self, table: str | None = None, client: Any = None, s3: Any = None,
                 cache: StateCache | bool = True, limits: quotas.Quotas | None = None) -> None:
        """`cache`: a `StateCache` to keep loaded tails in, False for none, True for one sized
        by `HOLDPOINT_STATE_CACHE` (on by default: a warm container reads only what changed).
        `limits`: the quotas a commit enforces (by default the environment's, `HOLDPOINT_QUOTA_*`)."""
        self.table = table or os.environ["TABLE_NAME"]
        self.limits = limits or quotas.from_env(os.environ)
        self.client = client or dynamodb_client()
        self._s3 = s3
        self.bucket = os.environ.get("PAYLOAD_BUCKET", "")
        self.cache: StateCache | None = cache_from_env() if cache is True else cache or None
        if isinstance(cache, StateCache):  # an empty cache is falsy (it has a length)
            self.cache = cache
        self.committed: Callable[[SessionState], None] = _nothing
        """Called after each successful commit (the live push, services/live.py)."""

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
        agent item and the interrupts (`H` .. `I$`), for steps that touch nothing else: a load
        that does not grow with the tree. Such a state has no nodes, calls or decisions, so only
        code that needs none of them may be given one. With a cache, a full load reads the head
        and then only the tail items changed since the cached version (module docstring)."""
        pk = session_pk(tenant, session_id)
        if head_only:
            items = self._query(pk, "H", HEAD_END)
            if items and items[0]["SK"]["S"] == "H" and self.cache is not None:
                self.cache.note((self.table, pk), head_of(items[0]))
        elif self.cache is not None:
            items = self._warm(pk)
        else:
            items = self._query(pk, "H")
        if not items or items[0]["SK"]["S"] != "H":
            return None
        state = self._decode(items)
        state.held = quotas.slots(state)
        state.head_only = head_only
        state.now = time.time()  # the time of the load; a service with its own clock overrides it
        return state

    def _query(self, pk: str, low: str, high: str | None = None, *, after: bool = False) -> list[dict[str, Any]]:
        """Every item of the partition from `low` (or after it) up to `high`, strongly consistent."""
        if high is not None:
            condition = "PK = :pk AND SK BETWEEN :lo AND :hi"
        else:
            condition = "PK = :pk AND SK > :lo" if after else "PK = :pk AND SK >= :lo"
        values = {":pk": _s(pk), ":lo": _s(low), **({":hi": _s(high)} if high is not None else {})}
        kwargs: dict[str, Any] = {"TableName": self.table, "KeyConditionExpression": condition,
                                  "ExpressionAttributeValues": values, "ConsistentRead": True}
        items: list[dict[str, Any]] = []
        while True:
            page = self.client.query(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _warm(self, pk: str) -> list[dict[str, Any]]:
        """Head, then the tail from the cache plus what changed since; the whole tail on any doubt."""
        assert self.cache is not None
        key = (self.table, pk)
        entry = self.cache.get(key)
        if entry is None:  # cold: the one Query of the whole state, kept for the next load
            items = self._query(pk, "H")
            head = [item for item in items if not is_tail(item["SK"]["S"])]
            tail = [item for item in items if is_tail(item["SK"]["S"])]
        else:
            head, tail = self._query(pk, "H", HEAD_END), []
        if not head or head[0]["SK"]["S"] != "H":
            self.cache.drop(key)
            return []
        note = head_of(head[0])
        texts = self._delta(pk, entry, note) if entry is not None else None
        if texts is None:
            if entry is not None:
                tail = self._query(pk, HEAD_END, after=True)
            self._remember(key, note, {item["SK"]["S"]: canonical(item) for item in tail})
            return head + tail
        self.cache.put(key, Cached(note.version, texts))
        self.cache.note(key, note)
        return head + [json.loads(texts[sk]) for sk in sorted(texts)]

    def _delta(self, pk: str, entry: Cached, head: Head) -> dict[str, str] | None:
        """The tail at the header's version: `entry` with the keys the log lists since its version
        read again, or None when the log does not reach back that far or the result does not hash
        to the header's `sum`."""
        version, header_sum = head.version, head.sum
        if header_sum is None or entry.version > version:
            return None
        listed = {int(v): keys for v, keys in head.log}
        if any(v not in listed for v in range(entry.version + 1, version + 1)):
            return None
        changed = sorted({sk for v in range(entry.version + 1, version + 1) for sk in listed[v]})
        if len(changed) > MAX_DELTA_KEYS:
            return None
        fetched = self._get_many(pk, changed)
        if len(fetched) != len(changed):
            return None
        texts = {**entry.items, **{item["SK"]["S"]: canonical(item) for item in fetched}}
        return texts if tail_digest(texts.values()) == int(header_sum, 16) else None

    def _get_many(self, pk: str, sks: list[str]) -> list[dict[str, Any]]:
        """The partition's items with these sort keys, strongly consistent."""
        return self._batch_get([{"PK": _s(pk), "SK": _s(sk)} for sk in sks], consistent=True)

    def _batch_get(self, keys: list[dict[str, Any]], *, consistent: bool) -> list[dict[str, Any]]:
        """BatchGetItem, 100 keys a request, until nothing is left unprocessed."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self.table: {"Keys": keys[start:start + 100], "ConsistentRead": consistent}}
            while request:
                page = self.client.batch_get_item(RequestItems=request)
                out.extend(page.get("Responses", {}).get(self.table, []))
                request = page.get("UnprocessedKeys") or {}
        return out

    def _remember(self, key: tuple[str, str], head: Head, texts: dict[str, str]) -> None:
        """Keep a tail read in full, unless the header's `sum` says it is not the tail at that
        version (a commit landed between the two reads). Without a `sum` the tail is kept
        unverified: a warm load uses it only once a header with a `sum` vouches for it, and a
        commit from it writes a `sum` but keeps nothing (the next load checks that `sum`)."""
        assert self.cache is not None
        if head.sum is not None and tail_digest(texts.values()) != int(head.sum, 16):
            self.cache.drop(key)
            return
        self.cache.put(key, Cached(head.version, texts))
        self.cache.note(key, head)

    def _decode(self, items: list[dict[str, Any]]) -> SessionState:
        header_body = self.body(items[0])
        header = _load(Header, header_body)
        header.version = int(items[0]["version"]["N"])
        state = SessionState(header=header, tree=Tree(head_id=header.head_id),
                             listed_status=items[0].get("st", {}).get("S"))
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
        if "ttl" in item:
            body["ttl"] = int(item["ttl"]["N"])
        if "approvals" in item:  # A2: appended by the resume's conditional update, one JSON text each
            body["approvals"] = [json.loads(a["S"]) for a in item["approvals"]["L"]]
        if "task_token" in item:  # set by the park message's conditional update (`store_task_token`)
            body["task_token"] = item["task_token"]["S"]
        interrupt: Interrupt = _load(Interrupt, body)
        interrupt.rev = int(item.get("rev", {"N": "0"})["N"])
        return interrupt

    def _record_item(self, pk: str, record: Record, tenant: str, session_id: str,
                     agent_id: str | None = None) -> dict[str, Any]:
        body = asdict(record)
        body.pop("rev", None)
        body.pop("approvals", None)  # an interrupt's answers live in their own attribute (A2)
        token = body.pop("task_token", None)  # so does its task token (`store_task_token`)
        if isinstance(record, Interrupt):  # rewritten often and read whole: unset fields stay out
            body = {k: v for k, v in body.items() if v != INTERRUPT_DEFAULTS.get(k, ...)}
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
            item["generation"] = _n(record.generation)  # the resume conditions on it (A1)
            if record.owner:
                item["owner"] = _s(record.owner)
            if record.resolution is not None:
                item["resolution"] = _s(json.dumps(record.resolution))
            if record.responder is not None:
                item["responder"] = _s(json.dumps(record.responder))
            if record.resolved_at:
                item["resolved_at"] = _s(record.resolved_at)
            if record.approvals:
                item["approvals"] = {"L": [_s(json.dumps(a)) for a in record.approvals]}
            if token:
                item["task_token"] = _s(token)
            item.update(self._index_attrs(record, tenant, session_id, agent_id))
        return item

    @staticmethod
    def _index_attrs(record: Interrupt, tenant: str, session_id: str, agent_id: str | None) -> dict[str, Any]:
        """A6: the Inbox index while open, the History index always (both newest first), the
        attributes the inbox filters on, and the TTL of a closed interrupt the agent keeps a while."""
        order = _s(f"{record.created_at}#{session_id}#{record.interrupt_id}")
        out: dict[str, Any] = {"GSI3PK": _s(history_pk(tenant)), "GSI3SK": order, "reason": _s(record.reason)}
        if record.status == "open":
            out.update({"GSI1PK": _s(inbox_pk(tenant)), "GSI1SK": order})
        if agent_id:
            out["agent_id"] = _s(agent_id)
        if record.expires_at:
            out["expires_at"] = _s(record.expires_at)
        if record.ttl is not None and record.status != "open":
            out["ttl"] = _n(record.ttl)
        return out

    def commit(self, state: SessionState) -> int:
        """Write what the step changed in one transaction, conditioned on the header version.
        With a verified cached tail at that version it also writes the tail's new `sum` and the
        change log (conditioned on the `sum` it read, so the cache it updates is the truth), and
        moves the cache to the new version; any failure drops the session's cache, so the reload
        after a conflict reads everything."""
        if not state.changed:
            return 0
        h = state.header
        pk = session_pk(h.tenant, h.session_id)
        key = (self.table, pk)
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
        listing = listing_attrs(state)
        header_item = {
            "PK": _s(pk),
            "SK": _s("H"),
            "version": _n(h.version + 1),
            **self.body_attrs(pk, "H", header_body),
            **listing,
        }
        header_op: dict[str, Any] = {"TableName": self.table, "Item": header_item}
        ops.append({"Put": header_op})
        tail: dict[str, str] = {}
        for node in state.new_nodes:
            body = {"id": node.id, "parent_id": node.parent_id, "message": node.message, "order": node.order}
            item = {"PK": _s(pk), "SK": _s(f"N#{node.id}"), **self.body_attrs(pk, f"N#{node.id}", body)}
            tail[item["SK"]["S"]] = canonical(item)
            ops.append({"Put": {"TableName": self.table, "Item": item,
                                "ConditionExpression": "attribute_not_exists(SK)"}})
        for dirty_key, record in state.dirty.items():
            item = self._record_item(pk, record, h.tenant, h.session_id, h.agent_id)
            if is_tail(item["SK"]["S"]):
                tail[item["SK"]["S"]] = canonical(item)
            if dirty_key in state.new_keys and record.rev == 0:
                ops.append({"Put": {"TableName": self.table, "Item": item,
                                    "ConditionExpression": "attribute_not_exists(SK)"}})
            else:
                ops.append({"Put": {"TableName": self.table, "Item": item,
                                    "ConditionExpression": "rev = :r",
                                    "ExpressionAttributeValues": {":r": _n(record.rev)}}})
        for event in state.events:
            ops.append({"Put": {"TableName": self.table,
                                "Item": {"PK": _s(pk), "SK": _s(f"E#{event.seq:012d}"), "etype": _s(event.type),
                                         **self.body_attrs(pk, f"E#{event.seq:012d}", event.wire())},
                                "ConditionExpression": "attribute_not_exists(SK)"}})
        after = self._next_tail(key, state, header_op, tail)
        held = quotas.slots(state)
        counted = self._quota_ops(state, held)
        ops.extend(op for op, _, _ in counted)
        if len(ops) > MAX_TRANSACT_ITEMS:
            raise TooManyChanges(f"a step may change at most {MAX_TRANSACT_ITEMS} items, this one {len(ops)}")
        try:
            self.client.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            self._forget(key)
            refused = quota_refusal(exc, len(ops) - len(counted), counted)
            if refused is not None:
                raise refused from None
            if exc.response["Error"]["Code"] in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                raise Conflict(str(exc)) from exc
            raise
        except BaseException:
            self._forget(key)  # the write may or may not have happened
            raise
        h.version += 1
        state.held = held
        state.agent_digest = digest
        state.listed_status = listing["st"]["S"]
        if self.cache is not None:
            item = header_op["Item"]
            self.cache.note(key, head_of(item))
            if after is not None:
                self.cache.put(key, after)
            else:
                self.cache.drop_tail(key)
        self.committed(state)
        return len(ops)

    def _quota_ops(self, state: SessionState, held: frozenset[str]) -> list[tuple[dict[str, Any], str, int]]:
        """The quota counters the commit moves, in its own transaction (docs/SECURITY.md, "Quotas"):
        the tenant's interrupts holding a slot (`ADD` the change, conditioned to stay within the
        limit when it grows), and a new top-level session's count in its second. The session's own
        limit needs no counter: its commits are serialized by the header's version, so the count of
        its interrupts is exact here. Each op comes with the limit it enforces and the limit's value."""
        h, limits = state.header, self.limits
        delta = len(held - state.held) - len(state.held - held)
        out: list[tuple[dict[str, Any], str, int]] = []
        if delta > 0 and len(held) > limits.open_interrupts_per_session:
            raise quotas.QuotaExceeded("open_interrupts_per_session", limits.open_interrupts_per_session)
        if delta != 0:
            update: dict[str, Any] = {"TableName": self.table, "UpdateExpression": "ADD n :d",
                                      "Key": {"PK": _s(quota_pk(h.tenant)), "SK": _s("OPEN")},
                                      "ExpressionAttributeValues": {":d": _n(delta)}}
            if delta > 0:
                room = limits.open_interrupts_per_tenant - delta
                if room < 0:
                    raise quotas.QuotaExceeded("open_interrupts_per_tenant", limits.open_interrupts_per_tenant)
                update["ConditionExpression"] = "attribute_not_exists(n) OR n <= :room"
                update["ExpressionAttributeValues"][":room"] = _n(room)
            out.append(({"Update": update}, "open_interrupts_per_tenant", limits.open_interrupts_per_tenant))
        if not state.exists and not h.parent:  # a sub-agent's session is its parent's work, not a new one
            second = int(time.time())
            out.append(({"Update": {
                "TableName": self.table, "Key": {"PK": _s(quota_pk(h.tenant)), "SK": _s(f"S#{second}")},
                "UpdateExpression": "ADD n :one SET #ttl = :ttl",
                "ConditionExpression": "attribute_not_exists(n) OR n < :limit",
                "ExpressionAttributeNames": {"#ttl": "ttl"},
                "ExpressionAttributeValues": {":one": _n(1), ":ttl": _n(second + SESSION_COUNT_TTL),
                                              ":limit": _n(limits.sessions_per_second)}}},
                "sessions_per_second", limits.sessions_per_second))
        return out

    def _forget(self, key: tuple[str, str]) -> None:
        if self.cache is not None:
            self.cache.drop(key)

    def _next_tail(self, key: tuple[str, str], state: SessionState, header_op: dict[str, Any],
                   written: dict[str, str]) -> Cached | None:
        """Set the header's condition and, when the store can vouch for the tail it replaces, the
        new `sum` and change log; return the cache entry for the new version, if any.

        - A new session's tail is empty: its `sum` is exact.
        - A tail cached at the version being replaced that hashes to the header's `sum` (and the
          commit is conditioned on that `sum`): the new `sum` is exact; the cache moves on.
        - A tail read in full at that version under a header with no `sum`: the new `sum` is
          written but the tail is not kept; the next load reads it in full and checks it.
        - Nothing written to the tail: the `sum` is carried over, conditioned on it.
        - Otherwise no `sum`: warm loads read the tail in full until a commit can vouch again."""
        h = state.header
        new_version = h.version + 1
        if not state.exists:
            header_op["ConditionExpression"] = "attribute_not_exists(PK)"
            return self._stamp(header_op, Head(h.version, None, []), 0, written)
        header_op["ConditionExpression"] = "version = :v"
        header_op["ExpressionAttributeValues"] = {":v": _n(h.version)}
        head = self.cache.head(key) if self.cache is not None else None
        entry = self.cache.get(key) if self.cache is not None else None
        if head is None or head.version != h.version:
            return None
        entry = entry if entry is not None and entry.version == h.version else None
        if head.sum is not None:
            header_op["ConditionExpression"] = "version = :v AND #sum = :sum"
            header_op["ExpressionAttributeNames"] = {"#sum": "sum"}
            header_op["ExpressionAttributeValues"][":sum"] = _s(head.sum)
        if not written:
            if head.sum is None:
                return None
            kept = entry if entry is not None and tail_digest(entry.items.values()) == int(head.sum, 16) else None
            self._stamp(header_op, head, int(head.sum, 16), written)
            return Cached(new_version, kept.items) if kept is not None else None
        if entry is None:
            return None
        digest = tail_digest(entry.items.values())
        if head.sum is not None and digest != int(head.sum, 16):
            return None  # the cached tail is not what it was read as: vouch for nothing
        if head.sum is None:
            header_op["ConditionExpression"] = "version = :v AND attribute_not_exists(#sum)"
            header_op["ExpressionAttributeNames"] = {"#sum": "sum"}
        for sk in written:
            if sk in entry.items:
                digest ^= item_hash(entry.items[sk])
        self._stamp(header_op, head, digest, written)
        return Cached(new_version, {**entry.items, **written}) if head.sum is not None else None

    @staticmethod
    def _stamp(header_op: dict[str, Any], head: Head, digest: int, written: dict[str, str]) -> Cached:
        """Write `digest` with the new items hashed in as the header's `sum`, and the change log."""
        for text in written.values():
            digest ^= item_hash(text)
        new_version = head.version + 1
        log = [*head.log, [new_version, sorted(written)]][-LOG_VERSIONS:]
        while len(log) > 1 and len(json.dumps(log, separators=(",", ":"))) > LOG_CHARS:
            log = log[1:]
        header_op["Item"]["sum"] = _s(f"{digest:032x}")
        header_op["Item"]["chg"] = _s(json.dumps(log, separators=(",", ":")))
        return Cached(new_version, dict(written))

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[dict[str, Any]]:
        if after_seq >= MAX_SEQ:  # nothing after the last key: never a BETWEEN whose bounds are inverted
            return []
        page = self.client.query(
            TableName=self.table,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :a AND :b",
            ExpressionAttributeValues={":pk": _s(session_pk(tenant, session_id)),
                                       ":a": _s(f"E#{max(after_seq, 0) + 1:012d}"), ":b": _s(f"E#{MAX_SEQ:012d}")},
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

    def read_interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None:
        """The interrupt as it is now (one strongly consistent GetItem): the resume checks its
        status, owner, origin and response schema before it writes anything."""
        got = self.client.get_item(TableName=self.table, ConsistentRead=True,
                                   Key={"PK": _s(session_pk(tenant, session_id)), "SK": _s(f"I#{interrupt_id}")})
        item = got.get("Item")
        return self._interrupt(item, self.body(item)) if item else None

    def resolve_interrupt(self, tenant: str, session_id: str, interrupt_id: str, *, resolution: Any,
                          responder: dict[str, Any], allowed_origins: list[str], at: str,
                          owner: str | None = None, generation: int | None = None,
                          approval: dict[str, Any] | None = None, seen: int | None = None,
                          ttl: int | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """R7: flip `open -> resolved` exactly once, out of the open inbox (A6: with `ttl`, kept
        until then). Returns (outcome, the interrupt as it now is)
        with outcome `resolved`, `noop` (stale, unknown or duplicate: no interrupt when unknown),
        `forbidden` (its origin outranks the caller), `not_found` (another owner's session),
        `changed` (A1: open again under another `generation` than the one the caller checked) or
        `raced` (A2: another answer was recorded since the caller read `seen` of them). `approval`
        is appended to the interrupt's answers in the same write."""
        values: dict[str, Any] = {
            ":resolved": _s("resolved"),
            ":res": _s(json.dumps(resolution)),
            ":who": _s(json.dumps(responder)),
            ":at": _s(at),
        }
        update = "SET #s = :resolved, rev = rev + :one, resolution = :res, responder = :who, resolved_at = :at"
        if ttl is not None:  # A6: kept listable until then
            update += ", #ttl = :ttl"
            values[":ttl"] = _n(ttl)
        return self._answer(tenant, session_id, interrupt_id, update + " REMOVE GSI1PK, GSI1SK", values,
                            allowed_origins=allowed_origins, owner=owner, generation=generation,
                            approval=approval, seen=seen, done="resolved")

    def record_approval(self, tenant: str, session_id: str, interrupt_id: str, *, approval: dict[str, Any],
                        seen: int, allowed_origins: list[str], owner: str | None = None,
                        generation: int | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """A2: append one answer to an open interrupt that it does not yet decide (a quorum still
        short), conditioned on the interrupt being open, of the generation checked, with exactly
        the `seen` answers the caller read (answers are only ever appended, so the same count is the
        same list, which the caller checked holds none of this subject's). Outcomes as
        `resolve_interrupt`, `recorded` for success."""
        return self._answer(tenant, session_id, interrupt_id, "SET rev = rev + :one", {},
                            allowed_origins=allowed_origins, owner=owner, generation=generation,
                            approval=approval, seen=seen, done="recorded")

    def store_task_token(self, tenant: str, session_id: str, interrupt_id: str, token: str,
                         generation: int | None = None) -> Interrupt | None:
        """Keep the ParkBranch execution's task token on its interrupt: one conditional UpdateItem
        of the interrupt item alone (nothing else in the session changes, so no header write and
        no transaction), bumping its `rev` so an engine commit that read the item before the token
        landed conflicts instead of writing it back without it. Returns the interrupt as it now
        is; for a token it already holds (a redelivered park message), or from an execution of
        another `generation` of the interrupt, the failed condition writes nothing and returns it as
        it is; None when there is no such interrupt."""
        condition = "attribute_exists(SK) AND (attribute_not_exists(task_token) OR task_token <> :token)"
        values = {":token": _s(token), ":one": _n(1)}
        if generation is not None:  # an item written before `generation` was an attribute has none
            condition += " AND (generation = :gen OR attribute_not_exists(generation))"
            values[":gen"] = _n(generation)
        new, old = self._update_interrupt(tenant, session_id, interrupt_id,
                                          "SET task_token = :token, rev = rev + :one", condition, values)
        item = new if new is not None else old
        return self._interrupt(item, self.body(item)) if item else None

    def _update_interrupt(self, tenant: str, session_id: str, interrupt_id: str, update: str, condition: str,
                          values: dict[str, Any], names: dict[str, str] | None = None,
                          ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """One conditional UpdateItem of an interrupt item: (the item as written, {}) or, when the
        condition fails, (None, the item as it was; {} if there is none)."""
        try:
            out = self.client.update_item(
                TableName=self.table,
                Key={"PK": _s(session_pk(tenant, session_id)), "SK": _s(f"I#{interrupt_id}")},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **({"ExpressionAttributeNames": names} if names else {}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return None, exc.response.get("Item") or {}
        return out["Attributes"], {}

    def _answer(self, tenant: str, session_id: str, interrupt_id: str, update: str, values: dict[str, Any], *,
                allowed_origins: list[str], owner: str | None, generation: int | None,
                approval: dict[str, Any] | None, seen: int | None,
                done: ResolveOutcome) -> tuple[ResolveOutcome, Interrupt | None]:
        """The one conditional UpdateItem of a resume: `update` if the interrupt is still open (and
        all the conditions the caller checked still hold); on a failed condition, why, from the item
        as it was."""
        names = {"#s": "status", **({"#ttl": "ttl"} if "#ttl" in update else {})}  # TTL is a reserved word
        values = {**values, ":open": _s("open"), ":one": _n(1)}
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
        if generation is not None:
            # An item written before `generation` was a top-level attribute has none; raising it
            # again rewrites the item with one, so a re-raise is still seen.
            values[":gen"] = _n(generation)
            condition += " AND (generation = :gen OR attribute_not_exists(generation))"
        if approval is not None:
            update = update.replace("SET ", "SET approvals = list_append(if_not_exists(approvals, :none), :mine), ", 1)
            values[":none"] = {"L": []}
            values[":mine"] = {"L": [_s(json.dumps(approval))]}
        if seen is not None:
            values[":seen"] = _n(seen)
            condition += (" AND (attribute_not_exists(approvals) OR size(approvals) = :seen)" if seen == 0
                          else " AND size(approvals) = :seen")
        new, old = self._update_interrupt(tenant, session_id, interrupt_id, update, condition, values, names)
        if new is None:
            return self._unresolved(old, owner, generation, seen)
        return done, self._interrupt(new, self.body(new))

    def _unresolved(self, old: dict[str, Any], owner: str | None, generation: int | None,
                    seen: int | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
        """Why the resume's conditional update failed, from the item as it was."""
        if owner is not None and old and old.get("owner", {}).get("S") != owner:
            return "not_found", None
        found = self._interrupt(old, self.body(old)) if old else None
        if found is not None and found.status == "open":
            if generation is not None and found.generation != generation:
                return "changed", found
            if seen is not None and len(found.approvals) != seen:
                return "raced", found
            return "forbidden", found
        return "noop", found

    def inbox(self, tenant: str, limit: int, cursor: dict[str, Any] | None, query: InboxQuery | None = None,
              keep: Callable[[InboxRow], bool] | None = None) -> tuple[list[InboxRow], dict[str, Any] | None]:
        """A6: a page of the tenant's interrupts, newest first: open ones from the Inbox index,
        the others from History (then their items, in one BatchGetItem); `older_than` is a key
        condition, the other filters a FilterExpression, `keep` the caller's own test. A filtered
        page reads up to MAX_INBOX_PAGES index pages; the cursor then resumes after the last item
        listed."""
        query = query or InboxQuery()
        kwargs = self._inbox_query(tenant, query)
        kwargs["Limit"] = limit
        history = query.status != "open"

        def rows_of(items: list[dict[str, Any]]) -> list[tuple[dict[str, Any], InboxRow | None]]:
            if history:  # the History index holds keys and filter attributes: read the items
                items = self._whole(items)
            out = []
            for item in items:
                row = self._inbox_row(item)
                kept = not status_changed(query, row) and (keep is None or keep(row))
                out.append((item, row if kept else None))
            return out

        keys = ("PK", "SK", "GSI3PK", "GSI3SK") if history else ("PK", "SK", "GSI1PK", "GSI1SK")
        return self._pages(kwargs, cursor, limit, MAX_INBOX_PAGES, keys, rows_of)

    def _pages(self, kwargs: dict[str, Any], cursor: dict[str, Any] | None, limit: int, reads: int,
               keys: tuple[str, ...], rows_of: Callable[[list[dict[str, Any]]], list[tuple[dict[str, Any], Any]]],
               ) -> tuple[list[Any], dict[str, Any] | None]:
        """A filtered, paged index Query: pages from `cursor` until `limit` rows are kept (`rows_of`
        gives each item its row, or None to skip it) or `reads` pages are read. The cursor is the
        `keys` of the last row returned, so the next page starts right after it; None when nothing
        is left."""
        rows: list[Any] = []
        start = cursor
        for _ in range(reads):
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = self.client.query(**kwargs)
            start = page.get("LastEvaluatedKey")
            pairs = rows_of(page.get("Items", []))
            for i, (item, row) in enumerate(pairs):
                if row is None:
                    continue
                rows.append(row)
                if len(rows) == limit:
                    more = start is not None or i < len(pairs) - 1
                    return rows, ({k: item[k] for k in keys} if more else None)
            if start is None:
                break
        return rows, start

    def _inbox_query(self, tenant: str, query: InboxQuery) -> dict[str, Any]:
        """Open interrupts from the Inbox index; closed or all from History, filtered on `status`."""
        index, pk_name, sk_name, pk = ("Inbox", "GSI1PK", "GSI1SK", inbox_pk(tenant))
        if query.status != "open":
            index, pk_name, sk_name, pk = ("History", "GSI3PK", "GSI3SK", history_pk(tenant))
        condition, values = f"{pk_name} = :pk", {":pk": _s(pk)}
        if query.created_before:
            condition += f" AND {sk_name} < :before"
            values[":before"] = _s(query.created_before)
        filters, names = [], {}
        status = query.status if query.status in ("resolved", "expired") else None
        for attr, value, op in (("agent_id", query.agent_id, "="), ("reason", query.reason, "="),
                                ("expires_at", query.expiring_by, "<="), ("status", status, "=")):
            if value is not None:
                filters.append(f"#{attr} {op} :{attr}")
                names[f"#{attr}"] = attr
                values[f":{attr}"] = _s(value)
        kwargs: dict[str, Any] = {"TableName": self.table, "IndexName": index, "KeyConditionExpression": condition,
                                  "ExpressionAttributeValues": values, "ScanIndexForward": False}
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
            kwargs["ExpressionAttributeNames"] = names
        return kwargs

    def _whole(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items behind index entries, in the entries' order (one gone since, TTL, is left out)."""
        keys = [{"PK": e["PK"], "SK": e["SK"]} for e in entries]
        found = {(i["PK"]["S"], i["SK"]["S"]): i for i in self._batch_get(keys, consistent=False)}
        return [found[k] for k in ((e["PK"]["S"], e["SK"]["S"]) for e in entries) if k in found]

    def _inbox_row(self, item: dict[str, Any]) -> InboxRow:
        body = self.body(item)
        interrupt = self._interrupt(item, dict(body))
        return InboxRow(session_id=item["PK"]["S"].split("#S#", 1)[1], agent_id=item.get("agent_id", {}).get("S"),
                        interrupt=interrupt, body=body)

    def sessions(self, tenant: str, limit: int, cursor: dict[str, Any] | None,
                 filters: SessionFilters) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The tenant's sessions, newest first, from the `Sessions` GSI: one Query page when
        nothing is filtered; with filters, pages of 100 until `limit` rows match or `LIST_READS`
        pages are read. The cursor is the keys of the last row returned, so the next page starts
        right after it; None when nothing is left."""
        conditions: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {":pk": _s(sessions_pk(tenant))}
        for field_name, value in (("agent_id", filters.agent_id), ("status", filters.status), ("owner", filters.owner)):
            if value is not None:
                attr = LIST_ATTRS[field_name]
                names[f"#{attr}"] = attr
                values[f":{attr}"] = _s(value)
                conditions.append(f"#{attr} = :{attr}")
        if filters.top_level is not None:
            conditions.append("attribute_not_exists(#sub)" if filters.top_level else "attribute_exists(#sub)")
            names["#sub"] = "sub"
        kwargs: dict[str, Any] = {"TableName": self.table, "IndexName": "Sessions", "ScanIndexForward": False,
                                  "KeyConditionExpression": "GSI2PK = :pk", "ExpressionAttributeValues": values,
                                  "Limit": 100 if conditions else limit}
        if conditions:
            kwargs["FilterExpression"] = " AND ".join(conditions)
        if names:
            kwargs["ExpressionAttributeNames"] = names
        return self._pages(kwargs, cursor, limit, LIST_READS, LIST_KEYS,
                           lambda items: [(item, session_row(item)) for item in items])

    # --- agents and keys ---------------------------------------------------------------

    def put_agent(self, tenant: str, agent_id: str, config: dict[str, Any]) -> None:
        self.client.put_item(TableName=self.table, Item={
            "PK": _s(f"T#{tenant}#A#{agent_id}"), "SK": _s("AGENT"), "body": _s(json.dumps(config))})

    def get_agent(self, tenant: str, agent_id: str) -> dict[str, Any] | None:
        got = self.client.get_item(TableName=self.table, Key={"PK": _s(f"T#{tenant}#A#{agent_id}"),
                                                              "SK": _s("AGENT")})
        item = got.get("Item")
        return json.loads(item["body"]["S"]) if item else None

    def put_api_key(self, key_hash: str, tenant: str, subject: str, origin: str,
                    groups: list[str] | None = None) -> None:
        item = {"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY"), "tenant": _s(tenant), "subject": _s(subject),
                "origin": _s(origin), "status": _s("active")}
        if groups:
            item["groups"] = _s(json.dumps(groups))  # A2: the approver groups the key's holder is in
        self.client.put_item(TableName=self.table, Item=item)

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

    def get_api_key(self, key_hash: str) -> dict[str, Any] | None:
        got = self.client.get_item(TableName=self.table, Key={"PK": _s(f"KEY#{key_hash}"), "SK": _s("KEY")})
        item = got.get("Item")
        if not item or item.get("status", {}).get("S") != "active":
            return None
        out: dict[str, Any] = {k: item[k]["S"] for k in ("tenant", "subject", "origin")}
        out["groups"] = json.loads(item["groups"]["S"]) if "groups" in item else []
        return out


def quota_refusal(exc: ClientError, first: int,
                  counted: list[tuple[dict[str, Any], str, int]]) -> quotas.QuotaExceeded | None:
    """A transaction cancelled by a quota counter's condition alone (its CancellationReasons say
    which item failed, in the order written; the counters are last): the limit it enforces. A
    cancellation that any other item shares is a conflict: reload and recompute."""
    if exc.response["Error"]["Code"] != "TransactionCanceledException" or not counted:
        return None
    reasons = [r.get("Code") or "None" for r in exc.response.get("CancellationReasons") or []]
    if len(reasons) < first + len(counted) or any(code != "None" for code in reasons[:first]):
        return None
    for code, (_, limit, allowed) in zip(reasons[first:], counted, strict=True):
        if code == "ConditionalCheckFailed":
            return quotas.QuotaExceeded(limit, allowed)
    return None


def session_row(item: dict[str, Any]) -> dict[str, Any]:
    """A listing row, from the attributes the `Sessions` GSI projects."""
    return {"session_id": item["PK"]["S"].split("#S#", 1)[1], "agent_id": item.get("ag", {}).get("S"),
            "status": item.get("st", {}).get("S"), "created_at": item["GSI2SK"]["S"].split("#", 1)[0],
            "owner": item.get("ow", {}).get("S"), "top_level": "sub" not in item}


def status_changed(query: InboxQuery, row: InboxRow) -> bool:
    """An item read after its index entry whose status is no longer the one asked for (raised
    again since): left out rather than listed under the wrong status."""
    return query.status not in ("open", "all") and row.interrupt.status != query.status


def event_from(body: dict[str, Any]) -> Event:
    return Event(seq=body["seq"], type=body["type"], data=body["data"], at=body["at"])
