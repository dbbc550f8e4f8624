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

The hop in progress lives in a context variable (one per thread: each invocation has its own),
so the adapters that send (aws/queue.py, aws/parking.py, outbound/workers.py) read it without the
services passing it. Powertools' Tracer wraps every handler (`capture`) on this module's provider
(`Provider`): its default, the X-Ray SDK's recorder, is not in Lambda's runtime and its import
costs more of a cold start than tracing may (bench/README.md (c)). Segments go to the X-Ray
daemon in its UDP protocol (`AWS_XRAY_DAEMON_ADDRESS`, which Lambda sets and the local stack's
daemon emulator answers); with no daemon address, or `POWERTOOLS_TRACE_DISABLED` true, no Tracer is
built, no hop is made and nothing is sent or carried.
"""

from __future__ import annotations

import json
import os
import socket
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
PROTOCOL_HEADER = '{"format":"json","version":1}'
"""The X-Ray daemon's UDP protocol: this line, a newline, then one segment document."""


def enabled() -> bool:
    """Tracing is on where a daemon listens and it is not turned off."""
    return bool(os.environ.get(DAEMON_ENV)) and os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() not in TRUE


# -- trace headers ----------------------------------------------------------------------------


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


def _new_id() -> str:
    return os.urandom(8).hex()


def _new_root() -> str:
    return f"1-{int(time.time()):08x}-{os.urandom(12).hex()}"


# -- sending ----------------------------------------------------------------------------------

_SOCKET: list[socket.socket] = []


def daemon_address() -> tuple[str, int]:
    """`AWS_XRAY_DAEMON_ADDRESS`: `host:port`, or `tcp:host:port udp:host:port` (the UDP one)."""
    text = os.environ.get(DAEMON_ENV, "127.0.0.1:2000")
    udp = [part[4:] for part in text.split() if part.startswith("udp:")]
    host, _, port = (udp[0] if udp else text.split()[0]).rpartition(":")
    return host or "127.0.0.1", int(port)


def emit(document: dict[str, Any]) -> None:
    """One segment document to the daemon; a lost one never fails the work it describes. What JSON
    cannot hold goes as its text: Powertools keeps a raised exception itself in the metadata."""
    if not _SOCKET:
        _SOCKET.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    try:
        _SOCKET[0].sendto(f"{PROTOCOL_HEADER}\n{json.dumps(document, default=str)}".encode(), daemon_address())
    except (OSError, ValueError, TypeError):
        return


# -- Powertools' Tracer -----------------------------------------------------------------------


class Subsegment:
    """The handler's subsegment as Powertools' Tracer writes it (annotations, metadata, its error),
    a child of the invocation's Lambda segment (Powertools' `BaseSegment`)."""

    def __init__(self, name: str, parent: Header) -> None:
        self.name, self.parent = name, parent
        self.id = _new_id()
        self.start = time.time()
        self.annotations: dict[str, Any] = {}
        self.metadata: dict[str, dict[str, Any]] = {}
        self.fault = False

    def close(self, end_time: int | None = None) -> None:
        return None

    def add_subsegment(self, subsegment: Any) -> None:
        return None

    def remove_subsegment(self, subsegment: Any) -> None:
        return None

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.metadata.setdefault(namespace, {})[key] = value

    def add_exception(self, exception: BaseException, stack: Any, remote: bool = False) -> None:
        self.fault = True
        self.metadata.setdefault("error", {})["exception"] = f"{type(exception).__name__}: {exception}"

    def document(self, end: float) -> dict[str, Any]:
        doc = {"type": "subsegment", "name": self.name, "id": self.id, "trace_id": self.parent.root,
               "parent_id": self.parent.parent, "start_time": self.start, "end_time": end,
               "annotations": self.annotations, "metadata": self.metadata}
        return {**doc, "fault": True} if self.fault else doc


_HANDLER: ContextVar[Subsegment | None] = ContextVar("holdpoint_handler", default=None)


class Provider:
    """Powertools' `BaseProvider` on this module's sender: `capture_lambda_handler`'s `## handler`
    subsegment (cold start, service, response or error), sent when it ends, under the invocation's
    Lambda segment (`_X_AMZN_TRACE_ID`). Nothing is patched: AWS calls are no subsegments."""

    @contextmanager
    def in_subsegment(self, name: str | None = None, **kwargs: Any) -> Iterator[Subsegment]:
        own = parse(os.environ.get(LAMBDA_TRACE_ENV))
        sub = Subsegment(name or "## handler", own or Header(_new_root()))
        token = _HANDLER.set(sub)
        try:
            yield sub
        except BaseException:
            sub.fault = True
            raise
        finally:
            _HANDLER.reset(token)
            if own is not None and own.parent and own.sampled:  # outside Lambda: no segment to join
                emit(sub.document(time.time()))

    def in_subsegment_async(self, name: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("no handler of Holdpoint's is async")

    def put_annotation(self, key: str, value: Any) -> None:
        current = _HANDLER.get()
        if current is not None:
            current.put_annotation(key, value)

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        current = _HANDLER.get()
        if current is not None:
            current.put_metadata(key, value, namespace)

    def patch(self, modules: Any) -> None:
        return None

    def patch_all(self) -> None:
        return None


_TRACER: list[Any] = []


def tracer() -> Any:
    """Powertools' Tracer on `Provider`, built once; None where tracing is off."""
    if not enabled():
        return None
    if not _TRACER:
        from aws_lambda_powertools import Tracer

        _TRACER.append(Tracer(provider=Provider(), disabled=False, auto_patch=False))  # type: ignore[arg-type]
    return _TRACER[0]


def capture(handler: F) -> F:
    """The handler under Powertools' Tracer (its `## handler` subsegment, cold start, errors; not
    its response, which holds sessions' content and may pass a datagram's 64 KB); the handler as
    it is where tracing is off."""
    built = tracer()
    return handler if built is None else cast(F, built.capture_lambda_handler(handler, capture_response=False))


# -- hops -------------------------------------------------------------------------------------


@dataclass
class Hop:
    """One invocation's work on a session, as one segment of the turn's trace."""

    name: str
    header: Header
    id: str = field(default_factory=_new_id)
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


def invocation() -> Header | None:
    """The invocation's own trace, at the handler's subsegment in progress (else Lambda's segment)."""
    own = parse(os.environ.get(LAMBDA_TRACE_ENV))
    handler = _HANDLER.get()
    if own is not None and handler is not None:
        return Header(own.root, handler.id, own.sampled)
    return own


@contextmanager
def hop(name: str, carried: str | None = None, **annotations: str | None) -> Iterator[Hop | None]:
    """Run the block as hop `name` (annotated with `tenant`, `session_id`, ... when given): it
    continues `carried`, else the invocation's trace, else a new one, and sends its segment when
    the block ends. Yields None, and costs nothing, where tracing is off."""
    if not enabled():
        yield None
        return
    own = invocation()
    current = Hop(name, parse(carried) or own or Header(_new_root()), own_trace=own.root if own else None)
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
    """Annotate the hop in progress (and the handler's subsegment): X-Ray indexes annotations,
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
