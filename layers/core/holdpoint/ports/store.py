"""The store's ports: sessions (state, events, listings), interrupts (reads, resolutions, the
inbox), the directory (agents and API keys) and the identity providers, and the frozen records they take and give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from holdpoint.core.answers import Answer, Responder
from holdpoint.core.edits import Edit
from holdpoint.core.identity import IdentityProvider
from holdpoint.core.interrupts import Checked
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Event, Interrupt, SessionState

MAX_SEQ = 10**12 - 1
"""The highest event seq a store represents (the table's event sort keys have 12 digits): the edge
refuses a larger `after_seq` or `Last-Event-ID` (400), and a store reads nothing after it."""


ResolveOutcome = Literal["resolved", "recorded", "noop", "forbidden", "not_found", "changed", "raced", "expired"]


InboxStatus = Literal["open", "resolved", "expired", "all"]




@dataclass(frozen=True, slots=True)
class SessionFilters:
    """What `GET /v1/sessions` narrows the tenant's sessions to; None leaves a field open."""

    agent_id: str | None = None
    status: str | None = None
    top_level: bool | None = None
    end_user: str | None = None  # a client token sees only the sessions its subject started
    attention: bool = False  # only sessions whose delivery is retrying or failed (core/attention), newest first


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session of a `GET /v1/sessions` page, as the listing keeps it (not the whole session)."""

    session_id: str
    agent_id: str | None
    status: str | None
    created_at: str
    owner: str | None
    top_level: bool
    attention: JsonObject | None = None  # {kind, reason, since}: only the attention listing reads it

    def wire(self) -> JsonObject:
        out: JsonObject = {"session_id": self.session_id, "agent_id": self.agent_id, "status": self.status,
                           "created_at": self.created_at, "owner": self.owner, "top_level": self.top_level}
        if self.attention is not None:
            out["attention"] = self.attention
        return out


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
    what the caller `checked` on the interrupt it read still holds. With `edit` (A3), the answer
    approves the edited action, appended to the interrupt's edits in the same write."""

    where: InterruptRef
    checked: Checked
    approval: Answer
    edit: Edit | None = None


@dataclass(frozen=True, slots=True)
class Resolve:
    """R7: the one write that closes an open interrupt (`open -> resolved`), with the deciding
    answer appended (`approval`, A2), if what the caller `checked` still holds. A6: a closed
    interrupt stays listable until `kept_until` (epoch seconds; None: for good)."""

    where: InterruptRef
    checked: Checked
    resolution: Any  # the answer the worker receives, any JSON value
    responder: Responder
    at: str
    approval: Answer | None = None
    kept_until: int | None = None
    edit: Edit | None = None  # A3: the approver's edit the deciding approval binds


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An active API key, found by its hash: whose it is and the approver groups its holder is in (A2)."""

    tenant: str
    subject: str
    origin: str
    groups: tuple[str, ...] = ()


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


class IdentityProviders(Protocol):
    """Each tenant's identity provider, and the one tenant an (issuer, client id) pair belongs to."""

    def identity_provider(self, tenant: str) -> IdentityProvider | None: ...

    def declare_identity_provider(self, tenant: str, provider: IdentityProvider) -> str | None:
        """Make `provider` the tenant's (replacing the one it had): None when done, else the
        other tenant that holds its (issuer, client id), and nothing is written."""
        ...

    def provider_for(self, issuer: str, client_id: str) -> tuple[str, IdentityProvider] | None:
        """The tenant that declared this issuer for this client id, with its declaration."""
        ...


class Principals(Directory, IdentityProviders, Protocol):
    """What the authorizer reads: API keys by hash, and the providers by issuer."""


class SessionsAndAgents(Sessions, Directory, Protocol):
    """What starting and running a session reads: its state and its agent's configuration."""


class SessionsAndInterrupts(Sessions, Interrupts, Protocol):
    """What a resume reads and writes: the interrupt, and whether its session exists."""


class SessionStore(Sessions, Interrupts, Directory, IdentityProviders, Protocol):
    """All three on one table: what a storage backend implements (`aws/store.py`,
    `memory/store.py`), and what a service that reaches all three (the engine's steps, an A2A or
    AG-UI run) is given."""
