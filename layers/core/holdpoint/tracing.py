"""One trace per turn, across its hops (docs/OPERATIONS.md, "Traces").

A turn crosses several invocations: the API's submit, the engine's step on the SQS kick, the
engine again on ParkBranch's `park` message, the resume (a request of its own, hours later
perhaps) and the engine on the `wake`. Lambda's own tracing (`Tracing: Active`, Powertools'
`Tracer` on every handler) gives each invocation its trace; a trace does not follow an SQS message
into a Lambda, a Step Functions park or a person's resume by itself. So each invocation's work on a
session is a *hop*: an X-Ray segment that continues the trace its input carries (a record's
`AWSTraceHeader`, a park message's `trace`, the park record's `trace` for the resume) or, for the
first hop of a turn, the invocation's own trace (`_X_AMZN_TRACE_ID`). Every message a hop sends
carries the hop's header on, and an HTTPS worker gets it as W3C `traceparent`.

Powertools' Tracer wraps every handler (`capture`) where tracing is on (in Lambda it traces, and
outside Lambda Powertools turns itself off); hops are made where a daemon address is set.
The hop in progress lives in a context variable (one per thread: each invocation has its own),
so the adapters that send (aws/queue.py, aws/parking.py, outbound/workers.py) read it without the
services passing it. Segments go to the X-Ray daemon over UDP (`AWS_XRAY_DAEMON_ADDRESS`, which
Lambda sets and the local stack's daemon emulator answers); with no daemon address, or
`POWERTOOLS_TRACE_DISABLED` true, no hop is made and nothing is sent or carried.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])
DAEMON_ENV = "AWS_XRAY_DAEMON_ADDRESS"
LAMBDA_TRACE_ENV = "_X_AMZN_TRACE_ID"
TRUE = ("1", "true", "yes", "on")

_TRACER: list[Any] = []  # Powertools' Tracer, built by the first handler to load where tracing is on


def tracer() -> Any:
    """Powertools' Tracer, built once; None where tracing is off, so an untraced function never
    imports the X-Ray SDK. Only botocore is patched (each AWS call a subsegment): Powertools'
    default patches every library the SDK knows, which costs ~115 ms of a cold start
    (docs/PERFORMANCE.md, (c))."""
    if not enabled():
        return None
    if not _TRACER:
        from aws_lambda_powertools import Tracer

        built = Tracer(auto_patch=False)  # service from POWERTOOLS_SERVICE_NAME
        built.patch(["botocore"])
        _TRACER.append(built)
    return _TRACER[0]


@dataclass(frozen=True)
class Header:
    """An X-Ray trace header (`Root=1-...;Parent=...;Sampled=1`): the trace and the span it continues."""

    root: str
    parent: str | None = None
    sampled: bool = True

    def text(self) -> str:
        parent = f";Parent={self.parent}" if self.parent else ""
        return f"Root={self.root}{parent};Sampled={1 if self.sampled else 0}"


def parse(text: str | None) -> Header | None:
    """A header as X-Ray writes it; None for none or one without a root."""
    if not text:
        return None
    parts = dict(p.strip().split("=", 1) for p in text.split(";") if "=" in p)
    root = parts.get("Root", "")
    if not root.startswith("1-"):
        return None
    return Header(root, parts.get("Parent") or None, parts.get("Sampled", "1") != "0")


def traceparent_of(root: str, span: str, sampled: bool = True) -> str:
    """The W3C `traceparent` for an X-Ray trace and span: X-Ray's `1-{8 hex}-{24 hex}` is W3C's
    32-hex trace id with the dashes taken out (X-Ray reads it back the same way)."""
    return f"00-{root[2:].replace('-', '')}-{span}-{'01' if sampled else '00'}"


@dataclass
class Hop:
    """One invocation's work on a session, as one segment of the turn's trace."""

    name: str
    header: Header
    id: str = field(default_factory=lambda: os.urandom(8).hex())
    start: float = field(default_factory=time.time)
    annotations: dict[str, str] = field(default_factory=dict)
    own_trace: str | None = None  # the invocation's trace, when the hop joined another (metadata)
    fault: bool = False

    def outgoing(self) -> str:
        """The header a message this hop sends carries: the same trace, this hop as the parent."""
        return Header(self.header.root, self.id, self.header.sampled).text()

    def document(self, end: float) -> dict[str, Any]:
        """The segment document X-Ray stores (docs.aws.amazon.com/xray: segment documents)."""
        doc: dict[str, Any] = {"name": self.name, "id": self.id, "trace_id": self.header.root,
                               "start_time": self.start, "end_time": end, "origin": "AWS::Lambda::Function",
                               "annotations": dict(self.annotations)}
        if self.header.parent:
            doc["parent_id"] = self.header.parent
        if self.own_trace and self.own_trace != self.header.root:
            doc["metadata"] = {"holdpoint": {"invocation_trace": self.own_trace}}
        if self.fault:
            doc["fault"] = True
        return doc


_CURRENT: ContextVar[Hop | None] = ContextVar("holdpoint_hop", default=None)


def enabled() -> bool:
    """Hops are made where a daemon listens and tracing is not turned off."""
    return bool(os.environ.get(DAEMON_ENV)) and os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in TRUE


def _new_root() -> str:
    return f"1-{int(time.time()):08x}-{os.urandom(12).hex()}"


def _starting(carried: str | None) -> tuple[Header, str | None]:
    """What a hop continues: its input's header, else the invocation's own trace, else a new one."""
    own = parse(os.environ.get(LAMBDA_TRACE_ENV))
    header = parse(carried) or own or Header(_new_root())
    return header, own.root if own else None


@contextmanager
def hop(name: str, carried: str | None = None, **annotations: str | None) -> Iterator[Hop | None]:
    """Run the block as hop `name` (annotated with `tenant`, `session_id`, ... when given); sends
    its segment when the block ends. Yields None, and costs nothing, where tracing is off."""
    if not enabled():
        yield None
        return
    header, own = _starting(carried)
    current = Hop(name, header, own_trace=own)
    annotate(current, **annotations)
    token = _CURRENT.set(current)
    try:
        yield current
    except BaseException:
        current.fault = True
        raise
    finally:
        _CURRENT.reset(token)
        if current.header.sampled:
            emit(current.document(time.time()))


def annotate(target: Hop | None = None, **annotations: str | None) -> None:
    """Annotate the hop in progress (and the handler's Powertools segment): X-Ray indexes them,
    so a session's traces are found by `session_id` (GetTraceSummaries' filter expression)."""
    current = target or _CURRENT.get()
    for key, value in annotations.items():
        if value is None:
            continue
        if current is not None:
            current.annotations[key] = str(value)
        if _TRACER:
            _TRACER[0].put_annotation(key=key, value=str(value))


def adopt(carried: str | None) -> None:
    """The hop in progress joins the trace `carried` names (the resume joins its parked turn's),
    before it has sent anything: what it sends from here on carries that trace."""
    current = _CURRENT.get()
    header = parse(carried)
    if current is not None and header is not None:
        current.header = header


def outgoing() -> str | None:
    """The header for a message the hop in progress sends; None outside a hop."""
    current = _CURRENT.get()
    return current.outgoing() if current is not None and current.header.sampled else None


def traceparent() -> str | None:
    """The W3C `traceparent` for a call the hop in progress makes; None outside a hop."""
    current = _CURRENT.get()
    if current is None or not current.header.sampled:
        return None
    return traceparent_of(current.header.root, current.id)


@dataclass(frozen=True)
class _Document:
    """A segment document as the SDK's emitter sends an entity (it calls `serialize`)."""

    body: dict[str, Any]

    def serialize(self) -> str:
        return json.dumps(self.body)


_EMITTERS: dict[str, Any] = {}


def emit(document: dict[str, Any]) -> None:
    """One segment to the daemon with the SDK's UDP emitter (the daemon's protocol; it never raises)."""
    from aws_xray_sdk.core.emitters.udp_emitter import UDPEmitter

    address = os.environ.get(DAEMON_ENV, "")
    emitter = _EMITTERS.get(address)
    if emitter is None:
        emitter = _EMITTERS.setdefault(address, UDPEmitter(address))
    emitter.send_entity(_Document(document))


def capture(handler: F) -> F:
    """The handler under Powertools' Tracer (its `## handler` subsegment, cold start, errors);
    the handler as it is where tracing is off."""
    built = tracer()
    return handler if built is None else cast(F, built.capture_lambda_handler(handler))
