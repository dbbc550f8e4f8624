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

from holdpoint.core.interrupts import Checked
from holdpoint.core.messages import Park, WorkMessage
from holdpoint.core.outcomes import LlmOutcome
from holdpoint.core.push import PushRecord
from holdpoint.core.state import Event, Interrupt, SessionState

MAX_SEQ = 10**12 - 1
"""The highest event seq a store represents (the table's event sort keys have 12 digits): the edge
refuses a larger `after_seq` or `Last-Event-ID` (400), and a store reads nothing after it."""

ResolveOutcome = Literal["resolved", "recorded", "noop", "forbidden", "not_found", "changed", "raced"]
InboxStatus = Literal["open", "resolved", "expired", "all"]

JsonObject = dict[str, Any]
"""A JSON object a port carries through without reading it (an agent's configuration, an answer,
a sealed payload, a frame): its shape is the wire model's or the core rule's that made it."""


@dataclass(frozen=True, slots=True)
class SessionFilters:
    """What `GET /v1/sessions` narrows the tenant's sessions to; None leaves a field open."""

    agent_id: str | None = None
    status: str | None = None
    top_level: bool | None = None
    end_user: str | None = None  # a client token sees only the sessions its subject started


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session of a `GET /v1/sessions` page, as the listing keeps it (not the whole session)."""

    session_id: str
    agent_id: str | None
    status: str | None
    created_at: str
    owner: str | None
    top_level: bool

    def wire(self) -> JsonObject:
        return {"session_id": self.session_id, "agent_id": self.agent_id, "status": self.status,
                "created_at": self.created_at, "owner": self.owner, "top_level": self.top_level}


@dataclass(frozen=True, slots=True)
class InboxQuery:
    """A6: which interrupts an inbox page lists. Times are ISO 8601 as interrupts record them."""

    status: InboxStatus = "open"
    agent_id: str | None = None
    reason: str | None = None
    created_before: str | None = None  # `older_than`: raised before this time
    expiring_by: str | None = None  # `expiring_within`: `expires_at` at or before this time


@dataclass(frozen=True, slots=True)
class InboxRow:
    """One interrupt of an inbox page: where it lives, and its whole record (`body` keeps the
    fields other rules add to the record)."""

    session_id: str
    agent_id: str | None
    interrupt: Interrupt
    body: JsonObject


@dataclass(frozen=True, slots=True)
class InterruptRef:
    """Where one interrupt lives: its tenant, its session and its id."""

    tenant: str
    session_id: str
    interrupt_id: str


@dataclass(frozen=True, slots=True)
class AddAnswer:
    """A2: one answer appended to an open interrupt that it does not yet decide, written only while
    what the caller `checked` on the interrupt it read still holds."""

    where: InterruptRef
    checked: Checked
    approval: JsonObject


@dataclass(frozen=True, slots=True)
class Resolve:
    """R7: the one write that closes an open interrupt (`open -> resolved`), with the deciding
    answer appended (`approval`, A2), if what the caller `checked` still holds. A6: a closed
    interrupt stays listable until `kept_until` (epoch seconds; None: for good)."""

    where: InterruptRef
    checked: Checked
    resolution: Any  # the answer the worker receives, any JSON value
    responder: JsonObject
    at: str
    approval: JsonObject | None = None
    kept_until: int | None = None


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An active API key, found by its hash: whose it is and the approver groups its holder is in (A2)."""

    tenant: str
    subject: str
    origin: str
    groups: tuple[str, ...] = ()


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


class Sessions(Protocol):
    """A session's state, its event log and the tenant's session listing. The records are the
    core's; what a store keeps to write them back (revisions, digests, what it read) stays in the
    state's opaque `snapshot`, and a listing's cursor is an opaque string the store alone reads. A
    failed commit raises `Conflict`, `TooLarge`, `TooManyChanges` or `Throttled`, never the
    store's own errors."""

    def load(self, tenant: str, session_id: str, *, head_only: bool = False) -> SessionState | None: ...

    def commit(self, state: SessionState) -> int: ...

    def events(self, tenant: str, session_id: str, after_seq: int, limit: int) -> list[Event]:
        """The first `limit` events after `after_seq`, in seq order."""
        ...

    def session_exists(self, tenant: str, session_id: str, end_user: str | None = None) -> bool:
        """Whether the session exists (and, with `end_user`, was started by that end user)."""
        ...

    def sessions(self, tenant: str, limit: int, cursor: str | None,
                 filters: SessionFilters) -> tuple[list[SessionRow], str | None]: ...


class Interrupts(Protocol):
    """The interrupts read and answered outside a commit: the resume's read, its one conditional
    write (R7, A2), and the tenant's inbox (A6). A refused write says why (`ResolveOutcome`, the
    one rule `core.interrupts.refused`), with the interrupt as it is now unless it is `not_found`."""

    def read_interrupt(self, tenant: str, session_id: str, interrupt_id: str) -> Interrupt | None: ...

    def resolve_interrupt(self, change: Resolve) -> tuple[ResolveOutcome, Interrupt | None]: ...

    def record_approval(self, change: AddAnswer) -> tuple[ResolveOutcome, Interrupt | None]: ...

    def inbox(self, tenant: str, limit: int, cursor: str | None, query: InboxQuery | None = None,
              keep: Callable[[InboxRow], bool] | None = None) -> tuple[list[InboxRow], str | None]: ...


class Directory(Protocol):
    """The tenant's agents (each one's configuration as declared) and the API keys (by hash)."""

    def get_agent(self, tenant: str, agent_id: str) -> JsonObject | None: ...

    def put_agent(self, tenant: str, agent_id: str, config: JsonObject) -> None: ...

    def get_api_key(self, key_hash: str) -> ApiKey | None:
        """The key, if it exists and is not revoked."""
        ...


class SessionsAndAgents(Sessions, Directory, Protocol):
    """What starting and running a session reads: its state and its agent's configuration."""


class SessionsAndInterrupts(Sessions, Interrupts, Protocol):
    """What a resume reads and writes: the interrupt, and whether its session exists."""


class SessionStore(Sessions, Interrupts, Directory, Protocol):
    """All three on one table: what a storage backend implements (`aws/store.py`,
    `memory/store.py`), and what a service that reaches all three (the engine's steps, an A2A or
    AG-UI run) is given."""


class WaitLeases(Protocol):
    """Concurrent stream waits, per caller and per tenant (`aws/leases.py`): `held` raises
    `core.errors.QuotaExceeded` when a limit is reached, and gives the lease back however the block ends."""

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
    (Step Functions: the execution's ARN), the refusals to start it, and the `token` that ends it."""

    handle: str | None = None
    waits: int = 0
    token: str | None = None


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
        is read here, once, after the resolve's write: a park message stored before it is seen."""
        self.wakes().wake(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)
        found = self.kept().read(tenant, session_id, interrupt.interrupt_id, interrupt.generation)
        if found is not None and found.token:
            self.complete(found.token, {"interrupt_id": interrupt.interrupt_id})

    def expire(self, tenant: str, session_id: str, interrupt: Interrupt) -> None:
        """The expiry the pause's timeout would send, for a raise whose pause never started."""
        self.wakes().expire(tenant, session_id, interrupt.interrupt_id, interrupt.dedup_key, interrupt.generation)


class Timers(Protocol):
    """Durable timers: `message` reaches the work queue after `seconds`; `key` names the timer
    within the message's session, so asking twice for one key is one timer."""

    def schedule(self, seconds: float, message: WorkMessage, key: str) -> None: ...


class Sealer(Protocol):
    """Tamper-evident tokens under the deployment's key. A payload is its purpose's own claims (a
    link's, a cursor's), and only that purpose reads it back, checking each field it takes."""

    def seal(self, purpose: str, payload: JsonObject) -> str: ...

    def unseal(self, purpose: str, token: str) -> JsonObject | None: ...


class DeliveryFailed(Exception):
    """A notification channel did not take the notification; it is retried on a durable timer."""


class EventPublisher(Protocol):
    """The lifecycle event bus (EventBridge): raises when the event was not accepted."""

    def publish(self, detail_type: str, detail: JsonObject) -> None: ...


class NotifyChannel(Protocol):
    """One kind of `notify` entry (a webhook, Slack): hand one notification (`core.notify`'s, as
    published) to one declared entry (as its delivery record keeps it, re-checked by the channel),
    with the one-click links minted for it; raise `DeliveryFailed` to have it retried."""

    def deliver(self, event: JsonObject, entry: JsonObject, links: dict[str, str]) -> None: ...


@dataclass(frozen=True, slots=True)
class DeliveryState:
    """Where one delivery stands (`Deliveries.read`): `sending`, `retrying`, `delivered` or `dead`,
    at attempt `attempt`, with the last failed attempt's error."""

    status: str
    attempt: int
    last_error: str | None = None


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

    def read(self, tenant: str, session_id: str, key: str) -> DeliveryState | None: ...

    def dead_letter(self, record: dict[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class Posted:
    """A message a chat channel posted: Slack's channel id and the message's `ts`."""

    channel: str
    ts: str


class PostedMessages(Protocol):
    """Where a chat channel keeps the message it posted for an interrupt (Slack's `{channel, ts}`),
    so the message can be updated once the interrupt closes (S1). The first message kept wins."""

    def keep_posted(self, tenant: str, session_id: str, key: str, ref: Posted) -> None: ...

    def posted(self, tenant: str, session_id: str, key: str) -> Posted | None: ...


class PushConfigs(Protocol):
    """A2A push notification configs (PROTOCOL.md §8), one record per (task, config id) in the
    task's session (`core.push.PushRecord`). Setting the same config again is a no-op, a changed
    one replaces it; deleting a missing one is a no-op."""

    def put(self, tenant: str, session_id: str, turn_id: str, config: PushRecord, limit: int) -> bool:
        """Keep the config; False (nothing written) when it is a new id and the task holds `limit`
        already. Atomic with concurrent puts and deletes: the task never holds more than `limit`."""
        ...

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> PushRecord | None: ...

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[PushRecord]:
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
    """API Gateway's `@connections` management API: `post` sends one live frame (services/live.py)
    as its JSON, and is False when the connection is gone (410)."""

    def post(self, connection_id: str, frame: JsonObject) -> bool: ...

    def close(self, connection_id: str) -> None:
        """DeleteConnection: API Gateway closes the socket (a gone one is no error)."""
        ...
