"""The work queue's messages: one frozen class per kind, the one shape every producer writes and
the engine parses once, at its edge, before it dispatches on the class.

Producers: the queue adapter (`Kick`, a resume's `Wake`, the expiry `Wake` of a raise that never
got its execution), ParkBranch in template.yaml (`Park`, and the expiry's `Wake`), and EventBridge
Scheduler, which sends the message a durable timer was scheduled with (`Kick`, `Deadline`,
`InterruptTimer`, `ParkRetry`, `NotifyRetry`; aws/timers.py). tests/unit/test_queue_messages.py
checks the template's message bodies and the schedules' against these classes.

Parsing is as lenient as the engine always was: unknown fields are ignored, and a field older
executions did not send (`generation` of a park or wake) or the expiry's `outcome` has its default.
Stdlib only: the resume and notifier functions write messages without loading pydantic.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Union

from holdpoint.core.errors import MessageError
from holdpoint.core.jsontypes import JsonObject

WakeOutcome = Literal["resumed", "expired"]
TimerName = Literal["remind", "escalate"]


@dataclass(frozen=True)
class Kick:
    """A session has work due (a commit, or a plain durable timer): run its step loop."""

    KIND: ClassVar[str] = "kick"
    tenant: str
    session_id: str


@dataclass(frozen=True)
class Park:
    """The pause started for this interrupt reports what ends it (`token`, opaque here: the parking
    adapter keeps it and ends the pause with it); no run follows. `generation` is the raise the
    pause was started for (None: one older than it). Under which key the queue carries `token` is
    the queue adapter's to know (aws/queue.py: ParkBranch's key)."""

    KIND: ClassVar[str] = "park"
    tenant: str
    session_id: str
    interrupt_id: str
    token: str
    generation: int | None = None


@dataclass(frozen=True)
class Wake:
    """A resolved interrupt's branch wakes (`resumed`, from the resume) or its execution timed out
    (`expired`, ParkBranch's Expire state); one wake per generation is applied."""

    KIND: ClassVar[str] = "wake"
    tenant: str
    session_id: str
    interrupt_id: str
    outcome: WakeOutcome = "resumed"
    generation: int | None = None


@dataclass(frozen=True)
class Deadline:
    """A tool call's attempt timer fired (R12): the attempt times out unless it has finished."""

    KIND: ClassVar[str] = "deadline"
    tenant: str
    session_id: str
    call_id: str
    attempt: int


@dataclass(frozen=True)
class InterruptTimer:
    """A5: a reminder or the escalation of one raise of an interrupt; it makes nothing due."""

    KIND: ClassVar[str] = "interrupt_timer"
    tenant: str
    session_id: str
    interrupt_id: str
    generation: int
    timer: TimerName
    index: int


@dataclass(frozen=True)
class ParkRetry:
    """A park Step Functions refused (the open-execution ceiling, or a throttle) is due to be tried
    again: attempt `attempt` of the interrupt's raise `generation`; it also carries the expiry of a
    raise that never got its execution."""

    KIND: ClassVar[str] = "park_retry"
    tenant: str
    session_id: str
    interrupt_id: str
    generation: int
    attempt: int


@dataclass(frozen=True)
class NotifyRetry:
    """A notification delivery's next attempt is due (its backoff timer fired)."""

    KIND: ClassVar[str] = "notify"
    tenant: str
    session_id: str
    key: str
    attempt: int


SessionMessage = Kick | Park | Wake | Deadline | InterruptTimer | ParkRetry
"""What the runner handles: a step of one session's loop."""
WorkMessage = SessionMessage | NotifyRetry
CLASSES: tuple[type[WorkMessage], ...] = (Kick, Park, Wake, Deadline, InterruptTimer, ParkRetry, NotifyRetry)
BY_KIND: dict[str, type[WorkMessage]] = {cls.KIND: cls for cls in CLASSES}


_HINTS: dict[type[WorkMessage], dict[str, object]] = {}


def body(message: WorkMessage) -> JsonObject:
    """The message as a JSON object: its `kind`, then its fields by name (the queue adapter names
    them as the queue carries them)."""
    return {"kind": message.KIND, **dataclasses.asdict(message)}


def _value(name: str, hint: Any, raw: Any) -> Any:
    """One field, coerced as the engine always read it: integers by `int()`, strings as sent."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    if raw is None and type(None) in options:
        return None
    kind = next(o for o in options if o is not type(None))
    if typing.get_origin(kind) is Literal:
        if raw not in typing.get_args(kind):
            raise MessageError(f"{name} must be one of {list(typing.get_args(kind))}, not {raw!r}")
        return raw
    if kind is int:
        if isinstance(raw, bool):
            raise MessageError(f"{name} must be an integer")
        try:
            return int(raw)
        except (TypeError, ValueError) as exc:
            raise MessageError(f"{name} must be an integer") from exc
    if not isinstance(raw, str):
        raise MessageError(f"{name} must be a string")
    return raw


def parse(data: Mapping[str, Any]) -> WorkMessage:
    """The message a JSON object holds, by its `kind`, its fields by name (the queue adapter reads
    a queue body into this); raises `MessageError` naming what is wrong."""
    kind = data.get("kind")
    cls = BY_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError(f"unknown work message kind {kind!r}")
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, typing.get_type_hints(cls))
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = f.name
        if key in data:
            values[f.name] = _value(key, hints[f.name], data[key])
        elif f.default is dataclasses.MISSING:
            raise MessageError(f"{cls.KIND} message has no {key}")
    return cls(**values)
