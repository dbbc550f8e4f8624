"""Quotas (docs/SECURITY.md, "Quotas"): what one tenant, one session or one caller may hold at
once. The limits are template parameters passed to every function as environment variables; the
counting rules are here, the counters are conditional writes in the adapters."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from holdpoint.core import claims
from holdpoint.core.digits import parse_digits
from holdpoint.core.errors import QuotaExceeded
from holdpoint.core.state import Interrupt, SessionState


@dataclass(frozen=True)
class Quotas:
    """The limits in force. Defaults are the template's."""

    open_interrupts_per_tenant: int = 10_000
    open_interrupts_per_session: int = 20
    open_interrupts_per_end_user: int = 100
    open_interrupts_per_api_key: int = 5_000
    sessions_per_second: int = 50
    sessions_per_second_per_end_user: int = 5
    sessions_per_second_per_api_key: int = 50
    stream_waits_per_caller: int = 4
    stream_waits_per_tenant: int = 200
    stream_waits_total: int = 750
    live_followers_per_session: int = 100
    live_connections_per_caller: int = 100


END_USER_RAISE_EXPIRES_IN = 7 * 86_400
"""An interrupt an end user raises (the API, MCP) with no expiry of its own or its agent's expires
after this long, so one she abandons gives its slot of her share back."""

ENV_PREFIX = "HOLDPOINT_QUOTA_"
"""`open_interrupts_per_tenant` is read from `HOLDPOINT_QUOTA_OPEN_INTERRUPTS_PER_TENANT`, and so on."""

LEASE_SECS = 30
"""A stream wait lease nobody gives back (its function crashed or timed out) expires this long
after it was taken: longer than the API function's 29 s timeout, so no request holding it still waits."""

MAX_FOLLOWED = 20
"""The sessions one live connection follows at most, so its fan-out per commit stays bounded."""


def env_name(limit: str) -> str:
    return ENV_PREFIX + limit.upper()


def from_env(environ: Mapping[str, str]) -> Quotas:
    """The limits the environment sets; a missing, empty or unreadable one keeps its default."""
    values: dict[str, int] = {}
    for f in fields(Quotas):
        value = parse_digits(environ.get(env_name(f.name), ""))
        if value:
            values[f.name] = value
    return Quotas(**values)


def holds_slot(interrupt: Interrupt) -> bool:
    """An interrupt holds a slot of its session's and its tenant's open interrupts from its raise
    until the engine applies its wake: open, or resolved and not yet delivered. A system hold (a
    budget stop, R17) is never refused, so it holds none."""
    return interrupt.origin != "system" and (interrupt.status == "open" or not interrupt.woken)


def slots(state: SessionState) -> frozenset[str]:
    """The interrupts of the session that hold a slot."""
    return frozenset(i.interrupt_id for i in state.interrupts.values() if holds_slot(i))


@dataclass(frozen=True)
class Counter:
    """One quota counter a commit moves: the tenant's (`principal` None) or one principal's share of
    it, by `delta`, refused (429 naming `limit`) past `allowed`."""

    principal: str | None
    delta: int
    limit: str
    allowed: int


def holder(state: SessionState, interrupt: Interrupt) -> str:
    """Whose share an interrupt's slot counts against: its requester (`user:NAME` or `key:NAME`; a
    bare name recorded before principals were is a key's), else the session's principal. An end
    user's raises, on her sessions or through MCP, are hers; a worker's are the turn's requester's."""
    who = interrupt.requester
    if who is None:
        return claims.principal_of(state.header)
    return who if who.startswith(("user:", "key:")) else f"key:{who}"


def share(limits: Quotas, principal: str, kind: str) -> tuple[str, int]:
    """A principal's share of the tenant's pool `kind` (`open_interrupts`, `sessions_per_second`):
    an end user's is small, an API key's its own (docs/SECURITY.md, "Quotas")."""
    who = "end_user" if principal.startswith("user:") else "api_key"
    name = f"{kind}_per_{who}"
    return name, int(getattr(limits, name))


def open_counters(state: SessionState, slots: frozenset[str], limits: Quotas) -> list[Counter]:
    """The tenant's open-interrupt counter and each principal's share of it that the commit moves
    (the session's own limit needs no counter: its commits are serialized by the header's version).
    `QuotaExceeded` at once for a share or the session's limit the change alone passes."""
    gained, lost = slots - state.quota_slots, state.quota_slots - slots
    delta = len(gained) - len(lost)
    if delta > 0 and len(slots) > limits.open_interrupts_per_session:
        raise QuotaExceeded("open_interrupts_per_session", limits.open_interrupts_per_session)
    moves: dict[str, int] = {}
    for iid, step in [*((i, 1) for i in gained), *((i, -1) for i in lost)]:
        who = holder(state, state.interrupts[iid])
        moves[who] = moves.get(who, 0) + step
    out = [Counter(None, delta, "open_interrupts_per_tenant", limits.open_interrupts_per_tenant)] if delta else []
    for who, step in sorted(moves.items()):
        if step:
            name, allowed = share(limits, who, "open_interrupts")
            out.append(Counter(who, step, name, allowed))
    for counter in out:
        if counter.delta > counter.allowed:
            raise QuotaExceeded(counter.limit, counter.allowed)
    return out


def session_counters(state: SessionState, limits: Quotas) -> list[Counter]:
    """A new top-level session counts in its second against the tenant's rate and its principal's
    share of it; a sub-agent's session is its parent's work, not a new one."""
    if state.exists or state.header.parent:
        return []
    who = claims.principal_of(state.header)
    name, allowed = share(limits, who, "sessions_per_second")
    return [Counter(None, 1, "sessions_per_second", limits.sessions_per_second), Counter(who, 1, name, allowed)]


def live_leases(leases: Mapping[str, float], now: float) -> dict[str, float]:
    """The leases (id -> expiry, epoch seconds) that have not expired at `now`."""
    return {lease: expiry for lease, expiry in leases.items() if expiry > now}


def seconds_until(expiry: float, now: float) -> int:
    """A refused caller's `retry_after`: the whole seconds until `expiry`, at least one."""
    return max(1, math.ceil(expiry - now))


def check_room(limit: str, allowed: int, live: Mapping[str, float], now: float) -> None:
    """`QuotaExceeded` when a holder's live leases fill `allowed`, told to retry when the first expires."""
    if len(live) >= allowed:
        raise QuotaExceeded(limit, allowed, seconds_until(min(live.values(), default=now), now))


def shares(total: int, holders: int) -> list[int]:
    """`total` split over at most `holders` holders, the first ones taking the remainder; they add up to it."""
    count = min(holders, total)
    return [total // count + (1 if i < total % count else 0) for i in range(count)]


def past_limit(limit: str, allowed: int, count: int) -> QuotaExceeded | None:
    """A counted quota's refusal: the new item is written first, then the live items counted, and past
    `allowed` its writer backs out (racing writers may all back out; none ever pass the limit)."""
    return QuotaExceeded(limit, allowed) if count > allowed else None
