"""The ports: what the services need from the outside world, as interfaces.

The services are written against these; the adapters in `holdpoint.aws`, `holdpoint.outbound`
and `holdpoint.llm` implement them, and the entry points (the Lambda handlers, the admin CLI,
the local stack) wire one to the other. A new storage backend implements `SessionStore`; a new
LLM provider is one more `holdpoint.llm` module behind `Llm`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from holdpoint.core.messages import Park, WorkMessage
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.core.state import Interrupt, SessionState

MAX_SEQ = 10**12 - 1
"""The highest event seq a store represents (the table's event sort keys have 12 digits): the edge
refuses a larger `after_seq` or `Last-Event-ID` (400), and a store reads nothing after it."""

ResolveOutcome = Literal["resolved", "recorded", "noop", "forbidden", "not_found", "changed", "raced"]
InboxStatus = Literal["open", "resolved", "expired", "all"]


@dataclass(frozen=True)
class SessionFilters:
    """What `GET /v1/sessions` narrows the tenant's sessions to; None leaves a field open."""

    agent_id: str | None = None
    status: str | None = None
    top_level: bool | None = None
    end_user: str | None = None  # a client token sees only the sessions its subject started


@dataclass(frozen=True)
class InboxQuery:
    """A6: which interrupts an inbox page lists. Times are ISO 8601 as interrupts record them."""

    status: InboxStatus = "open"
    agent_id: str | None = None
    reason: str | None = None
    created_before: str | None = None  # `older_than`: raised before this time
    expiring_by: str | None = None  # `expiring_within`: `expires_at` at or before this time


@dataclass(frozen=True)
class InboxRow:
    """One interrupt of an inbox page: where it lives, and its whole record (`body` keeps the
    fields other rules add to the record)."""

    session_id: str
    agent_id: str | None
    interrupt: Interrupt
    body: dict[str, Any]


class Conflict(Exception):
    """The session changed since it was loaded: reload and recompute."""


class Interfered(Conflict):
    """Another transaction was writing one of the items at the same moment (DynamoDB's
    `TransactionConflict`): no condition failed and nothing was written; the same write may be sent again."""


class TooManyChanges(ValueError):
    """One step would change more items than one transaction holds; nothing was written."""


class TooLarge(ValueError):
    """A record is larger than the store can hold (an item over its size limit); nothing was written."""


class Throttled(Exception):
    """The store refused the request for now (its throughput is exhausted); nothing was written."""


class Unavailable(Exception):
    """An AWS service failed the call (a 5xx, or no answer) after its client's retries: try later."""


class WorkerUnavailable(Exception):
    """The worker did not answer usefully (timeout, 5xx, not a JSON object): retry the decision."""


class WorkerDeferred(Exception):
    """The worker took the decision and will answer later through `POST /v1/workers/submit` (an
    HTTPS worker answered 202; an in-process one raised this)."""


class LlmError(Exception):
    """An LLM call failed; `retryable` says whether another attempt may help."""

    def __init__(self, message: str, code: str = "provider_error", retryable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable


class StreamStopped(Exception):  # noqa: N818 (a stop the caller asked for, not a failure)
    """A streamed LLM call was stopped by its caller (its `OnDelta` answered False): no reply."""


class SessionStore(Protocol):
    """Sessions, agents and API keys, every change one conditional write. The records are the
    core's; what a store keeps to write them back (revisions, digests, what it read) stays in the
    state's opaque `snapshot`. A listing's cursor is an opaque string the store alone reads. A
    failed write raises `Conflict`, `TooLarge`, `TooManyChanges` or `Throttled`, never the store's
    own errors."""

    def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> SessionState | None: ...

    def commit(self, state: SessionState) -> int: ...

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[dict[str, Any]]: ...

    def session_exists(self, tenant: str, session_id: str, end_user: str | None = None) -> bool:
        """Whether the session exists (and, with `end_user`, was started by that end user)."""

    def read_interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None: ...

    def resolve_interrupt(self, tenant: str, session_id: str, interrupt_id: str, *, resolution: Any,
                          responder: dict[str, Any], allowed_origins: list[str], at: str,
                          owner: str | None = None, generation: int | None = None,
                          approval: dict[str, Any] | None = None, seen: int | None = None,
                          kept_until: int | None = None) -> tuple[ResolveOutcome, Interrupt | None]: ...

    def record_approval(self, tenant: str, session_id: str, interrupt_id: str, *, approval: dict[str, Any],
                        seen: int, allowed_origins: list[str], owner: str | None = None,
                        generation: int | None = None) -> tuple[ResolveOutcome, Interrupt | None]: ...

    def inbox(self, tenant: str, limit: int, cursor: str | None, query: InboxQuery | None = None,
              keep: Callable[[InboxRow], bool] | None = None) -> tuple[list[InboxRow], str | None]: ...

    def sessions(self, tenant: str, limit: int, cursor: str | None,
                 filters: SessionFilters) -> tuple[list[dict[str, Any]], str | None]: ...

    def get_agent(self, tenant: str, agent_id: str) -> dict[str, Any] | None: ...

    def put_agent(self, tenant: str, agent_id: str, config: dict[str, Any]) -> None: ...

    def get_api_key(self, key_hash: str) -> dict[str, Any] | None: ...


class WaitLeases(Protocol):
    """Concurrent stream waits, per caller and per tenant (`aws/leases.py`): `held` raises
    `core.quotas.QuotaExceeded` when a limit is reached, and gives the lease back however the block ends."""

    def held(self, tenant: str, caller: str) -> AbstractContextManager[None]: ...


class WorkQueue(Protocol):
    def kick(self, tenant: str, session_id: str, version: int) -> None: ...


class ParkRefused(Exception):
    """Step Functions would not start the park's execution now: the account-region's open-execution
    ceiling (`ExecutionLimitExceeded`) or a throttle. The interrupt stays open; the park is retried."""


@dataclass(frozen=True)
class Parked:
    """Where one raise's pause stands, as its Parking keeps it: started, or refused `waits` times
    (a `ParkRetry` timer then tries again), or neither (the step loop starts it)."""

    started: bool = False
    waits: int = 0


class Parking(Protocol):
    """Durable pauses, one per raise of an interrupt, with the record of each kept by the parking
    itself (its handles never reach the session's state). Every method is idempotent: a retried
    or duplicated call changes nothing more. `park` raises `ParkRefused` when there is no capacity
    for one (`timeout_seconds`: what is left of the expiry, for a park started late); `wait`
    records the refusal; `hold` keeps what the started pause reported (`Park`), `end` ends that
    pause now and `forget` drops what `hold` kept of it; `release` wakes a resolved interrupt's
    branch and ends its pause; `expire` puts the expiry's wake on the queue for a raise with no pause."""

    def status(self, tenant: str, session_id: str, interrupt: Interrupt) -> Parked: ...

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None: ...

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None: ...

    def hold(self, message: Park) -> None: ...

    def end(self, message: Park) -> None: ...

    def forget(self, message: Park) -> None: ...

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None: ...

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None: ...


@dataclass(frozen=True)
class ParkRecord:
    """What a Parking adapter keeps for one raise (`ParkRecords`): the pause's `handle` once started
    (Step Functions: the execution's ARN), the refusals to start it, the `token` that ends it, and
    the `trace` of the hop that started it (opaque: the resume's hop joins it, holdpoint/tracing.py)."""

    handle: str | None = None
    waits: int = 0
    token: str | None = None
    trace: str | None = None


class ParkRecords(Protocol):
    """A Parking adapter's own records, one per (interrupt, generation), each field written once by
    a conditional write (a retry or a duplicate writes nothing): `waiting` only raises the count and
    only before the start, `drop` removes the record only while it holds `token` and no handle."""

    def read(self, tenant: str, session_id: str, interrupt_id: str, generation: int) -> ParkRecord | None: ...

    def started(self, tenant: str, session_id: str, interrupt_id: str, generation: int, handle: str) -> None: ...

    def waiting(self, tenant: str, session_id: str, interrupt_id: str, generation: int, attempt: int) -> None: ...

    def hold(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...

    def drop(self, tenant: str, session_id: str, interrupt_id: str, generation: int, token: str) -> None: ...


class ParkQueue(Protocol):
    """The work queue's wake and expiry messages, as a Parking adapter sends them."""

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...

    def expire(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None: ...


class KeptParking:
    """The half of a `Parking` adapter that is its own records (`ParkRecords`) and the work queue,
    the same for the Step Functions adapter and its in-memory twin; a subclass starts and ends
    the pauses (`start`, `complete`) and names its records and queue."""

    def kept(self) -> ParkRecords:
        raise NotImplementedError

    def wakes(self) -> ParkQueue:
        raise NotImplementedError

    def start(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> str:
        """Start (or find) the pause; its handle."""
        raise NotImplementedError

    def complete(self, token: str, output: dict[str, Any]) -> bool:
        """End the pause `token` holds; False when it is spent already (a no-op)."""
        raise NotImplementedError

    def joined(self, record: ParkRecord | None) -> None:
        """The resume found the raise's record (its trace, when the adapter traces): no-op here."""

    def status(self, tenant: str, session_id: str, interrupt: Interrupt) -> Parked:
        found = self.kept().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        return Parked(started=found.handle is not None, waits=found.waits) if found else Parked()

    def park(self, tenant: str, session_id: str, interrupt: Interrupt, timeout_seconds: int | None = None) -> None:
        """Start the raise's pause (`ParkRefused`: not now), then record it started."""
        handle = self.start(tenant, session_id, interrupt, timeout_seconds)
        self.kept().started(tenant, session_id, interrupt.interrupt_id, interrupt.generation, handle)

    def wait(self, tenant: str, session_id: str, interrupt: Interrupt, attempt: int) -> None:
        self.kept().waiting(tenant, session_id, interrupt.interrupt_id, interrupt.generation, attempt)

    def hold(self, message: Park) -> None:
        """Keep the park message's token on its raise's record (one conditional write)."""
        self.kept().hold(message.tenant, message.session_id, message.interrupt_id, message.generation or 0,
                         message.hold)

    def end(self, message: Park) -> None:
        self.complete(message.hold, {"interrupt_id": message.interrupt_id})

    def forget(self, message: Park) -> None:
        self.kept().drop(message.tenant, message.session_id, message.interrupt_id, message.generation or 0,
                         message.hold)

    def release(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """Wake a resolved interrupt's branch, then end its pause. The wake goes first, straight
        onto the work queue, and the engine starts while the end is in flight. A crash between the
        two leaves the pause waiting; its timeout then sends a wake the engine finds already
        applied, and a retried resume ends it sooner (docs/ARCHITECTURE.md, "Parking"). The token
        is read here, once, after the resolve's write and before the wake: a park message stored
        before it is seen, and one stored after it finds the interrupt resolved and ends the pause
        itself; the wake then carries the trace of the turn that parked (`joined`)."""
        found = self.kept().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        self.joined(found)
        self.wakes().wake(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
        if found is not None and found.token:
            self.complete(found.token, {"interrupt_id": interrupt.interrupt_id})

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """The expiry the pause's timeout would send, for a raise whose pause never started."""
        self.wakes().expire(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)


@dataclass(frozen=True)
class Span:
    """One hop of a trace as the tracing backend stored it: its trace, ids, name, epoch times and
    annotations (`kind`: the work message an engine hop ran)."""

    trace_id: str
    id: str
    parent_id: str | None
    name: str
    start: float
    end: float
    annotations: dict[str, str]


class Traces(Protocol):
    """A session's hops, found by their `tenant` and `session_id` annotations (holdpoint/tracing.py)."""

    def of_session(self, tenant: str, session_id: str, since: float, until: float) -> list[Span]: ...


class Timers(Protocol):
    """Durable timers: `message` reaches the work queue after `seconds`; `key` names the timer
    within the message's session, so asking twice for one key is one timer."""

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None: ...


class Sealer(Protocol):
    """Tamper-evident tokens under the deployment's key."""

    def seal(self, purpose: str, payload: dict[str, Any]) -> str: ...

    def unseal(self, purpose: str, token: str) -> dict[str, Any] | None: ...


class DeliveryFailed(Exception):
    """A notification channel did not take the notification; it is retried on a durable timer."""


class EventPublisher(Protocol):
    """The lifecycle event bus (EventBridge): raises when the event was not accepted."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None: ...


class NotifyChannel(Protocol):
    """One kind of `notify` entry (a webhook, Slack): hand one notification to one declared entry,
    with the one-click links minted for it; raise `DeliveryFailed` to have it retried."""

    def deliver(self, event: dict[str, Any], entry: dict[str, Any], links: dict[str, str]) -> None: ...


class Deliveries(Protocol):
    """One record per (event, entry), every step of it a conditional write: a delivery starts once
    and each retry runs once, however often the stream or the timer repeats itself."""

    def claim(self, tenant: str, session_id: str, key: str, record: dict[str, Any]) -> bool: ...

    def begin(self, tenant: str, session_id: str, key: str, attempt: int) -> dict[str, Any] | None: ...

    def finish(self, tenant: str, session_id: str, key: str, attempt: int, status: str,
               error: str | None = None) -> None: ...

    def waiting(self, tenant: str, session_id: str, key: str) -> tuple[dict[str, Any], int] | None:
        """The record and its failed attempt when it waits for its retry (`retrying`), else None."""
        ...

    def read(self, tenant: str, session_id: str, key: str) -> dict[str, Any] | None:
        """The record's `status`, `attempt` and `last_error`, or None."""
        ...

    def dead_letter(self, record: dict[str, Any]) -> None: ...


class PostedMessages(Protocol):
    """Where a chat channel keeps the message it posted for an interrupt (Slack's `{channel, ts}`),
    so the message can be updated once the interrupt closes (S1). The first message kept wins."""

    def keep_posted(self, tenant: str, session_id: str, key: str, ref: dict[str, str]) -> None: ...

    def posted(self, tenant: str, session_id: str, key: str) -> dict[str, str] | None: ...


class PushConfigs(Protocol):
    """A2A push notification configs (PROTOCOL.md §8), one record per (task, config id) in the
    task's session: `{id, url, token?, authentication?}`. Setting the same config again is a
    no-op, a changed one replaces it; deleting a missing one is a no-op."""

    def put(self, tenant: str, session_id: str, turn_id: str, config: dict[str, Any], limit: int) -> bool:
        """Keep the config; False (nothing written) when it is a new id and the task holds `limit`
        already. Atomic with concurrent puts and deletes: the task never holds more than `limit`."""
        ...

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> dict[str, Any] | None: ...

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[dict[str, Any]]:
        """A task's configs, oldest id first (every task's in the session when `turn_id` is None),
        each with its `turn_id`."""
        ...

    def delete(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> None: ...


Worker = Callable[[dict[str, Any] | None, dict[str, Any], str], dict[str, Any] | None]
"""Ask the agent's worker (agent config, decision request, the session's tenant) for its answer;
`None` is a `null` answer (the engine applies its own continuation)."""

Llm = Callable[[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]], str, str], LlmOutcome]
"""Run one LLM call (agent config, request, prompt messages, call id, the session's tenant) to an
`llm.finished`-shaped outcome; the tenant scopes the provider's secret references."""

OnDelta = Callable[[str], bool]
"""Takes the next piece of a streamed reply's text as the provider hands it over; False stops the
stream (the provider stops reading and raises `StreamStopped`)."""

LlmStream = Callable[[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]], str, str, OnDelta], LlmOutcome]
"""`Llm` with the reply's text handed to `OnDelta` as it arrives; the outcome is the same whole reply."""

Clock = Callable[[], float]
"""Epoch seconds."""


class Connections(Protocol):
    """WebSocket connections and the sessions each follows (`aws/connections.py`): one item per
    (session, connection), found by the session, gone with the connection's 2-hour lifetime."""

    def open(self, connection_id: str, tenant: str, expires: int, caller: str = "") -> None:
        """`QuotaExceeded` when `caller` holds its limit of open connections."""
        ...

    def subscribe(self, tenant: str, session_id: str, connection_id: str, expires: int,
                  fmt: str = "events") -> bool:
        """`QuotaExceeded` when the session has its limit of followers."""
        ...

    def following(self, tenant: str, session_id: str) -> list[str]: ...

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        """Connection id -> the subscription's format (`events` or `ag-ui`)."""
        ...

    def drop(self, tenant: str, session_id: str, connection_id: str) -> None: ...

    def disconnect(self, connection_id: str) -> None: ...


class Frames(Protocol):
    """API Gateway's `@connections` management API: `post` is False when the connection is gone (410)."""

    def post(self, connection_id: str, frame: dict[str, Any]) -> bool: ...

    def close(self, connection_id: str) -> None:
        """DeleteConnection: API Gateway closes the socket (a gone one is no error)."""
        ...
