"""One session's loaded state and the changes a step makes to it.

A step loads the session, mutates this object through its methods (which note
what is new or dirty), and the store commits exactly those items in one
conditional transaction. Replaying a step against a newer version fails the
version check and is recomputed, so effects never double.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from holdpoint.core.answers import Answer, OnExpiry, Responder
from holdpoint.core.bound_action import BoundAction
from holdpoint.core.edits import Edit
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.messages import Kick, WorkMessage
from holdpoint.core.policy import Approvers, Policy
from holdpoint.core.tree import Node, Tree

if TYPE_CHECKING:
    from holdpoint.core.agent_config import AgentConfig

CallKind = Literal["llm_call", "tool_call", "sub_agent"]
CallStatus = Literal["open", "settled", "voided"]
CallHandler = Literal["engine", "worker", "client"]  # who runs it: the engine, the worker, the client
InterruptStatus = Literal["open", "resolved", "expired"]
Delivery = Literal["delivered", "none", "failed"]
"""Where a closed interrupt's answer stands with the worker: its `interrupt.resumed` answered, none
to deliver (it parked a branch the session had left, R8), or its delivery failed for good; unset
while it waits to be delivered."""
DecisionStatus = Literal["pending", "delivered", "failed"]
DecisionVia = Literal["worker", "submit"]
TurnStatus = Literal["queued", "running", "suspended", "done", "failed"]
EffectKind = Literal["start_park", "kick", "timer", "spawn", "notify_parent", "send"]
SessionKind = Literal["conversation", "approvals", "run"]
"""A conversation runs turns on the engine; an approvals session only holds the interrupts an
agent elsewhere raises over MCP (PROTOCOL.md §9); a run session those an external run raises for
its answers to be delivered to a target the agent declares (PROTOCOL.md §10)."""

def iso(epoch_secs: float) -> str:
    return datetime.fromtimestamp(epoch_secs, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def iso_ms(epoch_secs: float) -> str:
    """A timestamp as events and records carry it: ISO 8601, UTC, milliseconds."""
    return datetime.fromtimestamp(epoch_secs, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch(iso_text: str) -> float:
    """The epoch seconds of a timestamp `iso`/`iso_ms` wrote."""
    return datetime.fromisoformat(iso_text.replace("Z", "+00:00")).timestamp()


def mint(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def derive(prefix: str, *parts: Any) -> str:
    """A deterministic id, so replaying the step that mints it mints the same id."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:24]
    return f"{prefix}_{digest}"


@dataclass
class Header:
    tenant: str
    session_id: str
    agent_id: str
    version: int = 0
    head_id: str | None = None
    seq: int = 0
    counter: int = 0
    state: Any = None
    agent_item: JsonObject | None = None
    """The config in force as stored (its own item, written only when it changes): stores read and
    write this; every other reader reads `agent`, the same config typed."""
    identity: dict[str, Any] = field(default_factory=dict)
    end_user: str | None = None  # the client token's subject that started it (None: an API key did)
    kind: SessionKind = "conversation"
    ancestry: list[str] = field(default_factory=list)
    created_at: str = ""
    active_turn: str | None = None
    last_turn: str | None = None
    turn_queue: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    budget: float | None = None
    parent: dict[str, Any] | None = None  # {session_id, call_id} of a sub-agent's parent
    attention: JsonObject | None = None  # {kind, reason, since}: a delivery retrying or failed (core/attention)
    run: dict[str, Any] | None = None  # a run session's {id, target, deliver, state, callback} (bridges/runs)
    _agent: AgentConfig | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def agent(self) -> AgentConfig | None:
        """The config in force, typed. Parsed on first read, once per load: a handler that never
        reads it (a resume, a link) never loads the models (bench/README.md (c))."""
        if self._agent is None and self.agent_item is not None:
            from holdpoint.core.agent_config import AgentConfig

            self._agent = AgentConfig.from_item(self.agent_item)
        return self._agent

    @agent.setter
    def agent(self, config: AgentConfig | None) -> None:
        self._agent, self.agent_item = config, config.to_item() if config is not None else None

    def config(self) -> AgentConfig:
        """The config in force, or the empty one (a session started without an agent)."""
        from holdpoint.core.agent_config import config_of

        return config_of(self.agent)


@dataclass
class Call:
    id: str
    kind: CallKind
    anchor: str | None
    turn_id: str | None
    order: int
    status: CallStatus = "open"
    handler: CallHandler = "engine"
    name: str | None = None
    arguments: str | None = None
    request: dict[str, Any] | None = None
    attempt: int = 1
    group: str | None = None
    ok: bool | None = None
    result: Any = None
    error: Any = None
    message: JsonObject | None = None
    usage: JsonObject | None = None
    node_id: str | None = None
    retry: JsonObject | None = None
    not_before: float | None = None
    started_at: float | None = None
    deadline_at: float | None = None
    child_session_id: str | None = None

    def wire(self) -> JsonObject:
        out: JsonObject = {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "attempt": self.attempt,
            "handler": self.handler,
        }
        for key in ("anchor", "name", "arguments"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.deadline_at is not None:
            out["deadline"] = iso(self.deadline_at)
        if self.child_session_id is not None:
            out["session_id"] = self.child_session_id
        return out


_TYPED = frozenset({"policy", "escalate_to", "action", "responder", "approvals", "edits"})
"""The interrupt's fields of a frozen type, each kept in its own JSON form (`to_item`)."""


@dataclass
class Interrupt:
    interrupt_id: str
    origin: str
    reason: str
    anchor: str | None
    created_at: str
    dedup_key: str
    status: InterruptStatus = "open"
    payload: Any = None
    expires_in: int | None = None
    expires_at: str | None = None
    call_id: str | None = None
    turn_id: str | None = None
    raised_by: str | None = None
    resolution: Any = None
    responder: Responder | None = None
    resolved_at: str | None = None
    woken: bool = False
    generation: int = 0
    owner: str | None = None
    end_user: str | None = None  # the session's `end_user` at the raise: the only end user who reaches it
    response_schema: Any = None  # A1: the JSON Schema a resume payload must satisfy
    action: BoundAction | None = None  # A3: what an approval approves
    # A2: the effective approver policy frozen at raise time, the subject that started the turn,
    # the answers recorded, and the escalation approvers admitted once `escalated` is set (by the
    # A5 escalation timer).
    policy: Policy | None = None
    requester: str | None = None
    approvals: tuple[Answer, ...] = ()
    escalate_to: Approvers | None = None
    escalated: bool = False
    on_expiry: OnExpiry | None = None  # A5: None is `cancel`
    remind_after: list[int] | None = None  # A5: reminder delays (s), counted from parking
    escalate_after: int | None = None  # A5: escalation delay (s)
    reminded: list[int] = field(default_factory=list)  # A5: indexes of the reminders that fired
    retention_days: int | None = None  # A6: the agent's retention for the closed interrupt
    kept_until: int | None = None  # A6: epoch seconds the closed interrupt is kept until
    delivery: Delivery | None = None  # a closed interrupt's answer with the worker (None: waiting)
    receipt: str | None = None  # its signed approval receipt (core/receipts.py), made once by its wake
    # A3: the bound tool's `input` schema an approver's edit must satisfy (kept at the raise where
    # the policy allows edits), and the edits made, oldest first; `action` is the last one's.
    edit_schema: Any = None
    edits: tuple[Edit, ...] = ()

    def to_item(self) -> JsonObject:
        """The record as stores keep it: JSON, each typed part in its own JSON form."""
        out: JsonObject = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _TYPED:
                value = [a.to_item() for a in value] if f.name in ("approvals", "edits") else (
                    None if value is None else value.to_item())
            out[f.name] = list(value) if isinstance(value, list) else value
        return out

    @classmethod
    def from_item(cls, body: Mapping[str, Any]) -> Interrupt:
        """A record as `to_item` wrote it (a field it does not know is left out)."""
        known = {f.name for f in fields(cls)}
        data = {key: v for key, v in body.items() if key in known}
        data["policy"] = Policy.from_item(data["policy"]) if data.get("policy") else None
        data["escalate_to"] = Approvers.from_item(data["escalate_to"]) if data.get("escalate_to") else None
        data["action"] = BoundAction.from_item(data.get("action"))
        data["responder"] = Responder.from_item(data.get("responder"))
        data["approvals"] = tuple(Answer.from_item(a) for a in data.get("approvals") or ())
        data["edits"] = tuple(e for e in (Edit.from_item(x) for x in data.get("edits") or ()) if e is not None)
        if data["edits"]:  # A3: the approval binds the action as last edited
            data["action"] = data["edits"][-1].action
        return cls(**data)

    def view(self) -> JsonObject:
        out: JsonObject = {
            "interrupt_id": self.interrupt_id,
            "origin": self.origin,
            "reason": self.reason,
            "payload": self.payload,
            "created_at": self.created_at,
        }
        if self.anchor is not None:
            out["anchor"] = self.anchor
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.response_schema is not None:
            out["response_schema"] = self.response_schema
        if self.action is not None:
            out["action"] = self.action.to_item()
        if self.policy is not None:
            out["policy"] = self.policy.to_item()
        if self.requester is not None:
            out["requester"] = self.requester
        if self.approvals:
            out["approvals"] = [a.to_item() for a in self.approvals]
        if self.edits:  # A3: the audit keeps the action as raised, each edit and who made it
            out["edits"] = [e.to_item() for e in self.edits]
        if self.escalate_to is not None:
            out["escalate_to"] = self.escalate_to.to_item()
            out["escalated"] = self.escalated
        for key in ("on_expiry", "remind_after", "escalate_after"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass
class Decision:
    id: str
    order: int
    trigger: dict[str, Any]
    anchor: str | None
    turn_id: str | None
    priority: int = 1  # 0 goes to the front of the queue (interrupt.resumed)
    status: DecisionStatus = "pending"
    call_id: str | None = None
    interrupt_id: str | None = None
    attempts: int = 0
    not_before: float | None = None
    first_at: float | None = None
    via: DecisionVia | None = None  # how the answer arrived, once it has
    last_error: str | None = None  # why its last delivery failed, while it waits to be retried


@dataclass
class Turn:
    id: str
    order: int
    status: TurnStatus = "running"
    created_at: str = ""
    data: Any = None
    error: Any = None
    input: JsonObject | None = None  # a queued turn's input, started when the turn before it ends
    requester: str | None = None  # A2: the principal (`key:NAME`, `user:NAME`) whose input started the turn
    digest: str | None = None  # the request body's digest, for a turn an `Idempotency-Key` named


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a session's event log, as committed and as a store reads it back."""

    seq: int
    type: str
    data: JsonObject
    at: str

    def wire(self) -> JsonObject:
        return {"seq": self.seq, "type": self.type, "at": self.at, "data": self.data}


@dataclass
class Effect:
    """An external call to make after the commit (intent first, effect second)."""

    kind: EffectKind
    interrupt_id: str | None = None
    seconds: float = 0.0
    key: str | None = None
    data: dict[str, Any] | None = None
    message: WorkMessage | None = None  # a timer's


Record = Call | Interrupt | Decision | Turn


@dataclass
class SessionState:
    header: Header
    tree: Tree = field(default_factory=Tree)
    calls: dict[str, Call] = field(default_factory=dict)
    interrupts: dict[str, Interrupt] = field(default_factory=dict)
    decisions: dict[str, Decision] = field(default_factory=dict)
    turns: dict[str, Turn] = field(default_factory=dict)
    exists: bool = True
    new_nodes: list[Node] = field(default_factory=list)
    dirty: dict[tuple[str, str], Record] = field(default_factory=dict)
    new_keys: set[tuple[str, str]] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    now: float = 0.0  # the step's time (epoch seconds), set by whoever loads or creates the state
    quota_slots: frozenset[str] = frozenset()  # the interrupts counted against the quotas as stored (core/quotas.py)
    snapshot: object = None  # what the store that loaded the state keeps about it; opaque here

    @classmethod
    def new(cls, tenant: str, session_id: str, agent_id: str, *, now: float, **kw: Any) -> SessionState:
        header = Header(tenant=tenant, session_id=session_id, agent_id=agent_id, created_at=iso_ms(now), **kw)
        return cls(header=header, exists=False, now=now)

    # --- bookkeeping -------------------------------------------------------------

    @property
    def changed(self) -> bool:
        return bool(self.new_nodes or self.dirty or self.events or not self.exists)

    def tick(self) -> int:
        self.header.counter += 1
        return self.header.counter

    def touch(self, record: Record) -> None:
        self.dirty[(type(record).__name__, record_key(record))] = record

    def put(self, record: Record) -> None:
        key = (type(record).__name__, record_key(record))
        self.new_keys.add(key)
        self.dirty[key] = record
        if isinstance(record, Call):
            self.calls[record.id] = record
        elif isinstance(record, Interrupt):
            self.interrupts[record.interrupt_id] = record
        elif isinstance(record, Decision):
            self.decisions[record.id] = record
        elif isinstance(record, Turn):
            self.turns[record.id] = record

    def schedule(self, seconds: float, key: str, message: WorkMessage | None = None) -> None:
        """A durable timer, after the commit: in `seconds`, `message` (a plain `kick` by default)
        reaches the engine. `key` names the timer, so asking again for the same key is one timer."""
        message = message or Kick(self.header.tenant, self.header.session_id)
        self.effects.append(Effect(kind="timer", seconds=seconds, key=key, message=message))

    def emit(self, type_: str, **data: Any) -> None:
        self.header.seq += 1
        self.events.append(Event(seq=self.header.seq, type=type_, data=data, at=iso_ms(self.now)))

    def add_node(self, node_id: str, parent_id: str | None, message: dict[str, Any]) -> Node:
        """Append a node; the head follows when the node extends it."""
        message = {**message, "id": node_id}
        node = Node(id=node_id, parent_id=parent_id, message=message, order=self.tree.next_order())
        self.tree.add(node)
        self.new_nodes.append(node)
        if parent_id == self.tree.head_id:
            self.tree.head_id = node_id
            self.header.head_id = node_id
        return node

    def move_head(self, node_id: str | None) -> None:
        if node_id != self.tree.head_id:
            previous = self.tree.head_id
            self.tree.head_id = node_id
            self.header.head_id = node_id
            self.emit("head.moved", head_id=node_id, previous_head_id=previous)

    def enqueue(
        self,
        trigger: dict[str, Any],
        *,
        anchor: str | None,
        turn_id: str | None,
        key: tuple[Any, ...],
        priority: int = 1,
        call_id: str | None = None,
        interrupt_id: str | None = None,
    ) -> Decision:
        """Queue a decision; its id derives from `key` so a replayed step queues the same one."""
        decision = Decision(
            id=self.decision_id(key),
            order=self.tick(),
            trigger=trigger,
            anchor=anchor,
            turn_id=turn_id,
            priority=priority,
            call_id=call_id,
            interrupt_id=interrupt_id,
        )
        if decision.id in self.decisions:
            return self.decisions[decision.id]
        self.put(decision)
        return decision

    def decision_id(self, key: tuple[Any, ...]) -> str:
        """The id `enqueue` gives the decision queued under `key`."""
        return derive("dec", self.header.tenant, self.header.session_id, *key)

    def pending_decisions(self) -> list[Decision]:
        return sorted(
            (d for d in self.decisions.values() if d.status == "pending"), key=lambda d: (d.priority, d.order)
        )

    def open_calls(self) -> list[Call]:
        return sorted((c for c in self.calls.values() if c.status == "open"), key=lambda c: c.order)

    def open_interrupts(self) -> list[Interrupt]:
        return sorted(
            (i for i in self.interrupts.values() if i.status == "open"), key=lambda i: (i.created_at, i.interrupt_id)
        )


def record_key(record: Record) -> str:
    if isinstance(record, Interrupt):
        return record.interrupt_id
    return record.id

