"""Whose a session is, and when an id may name one: the single rule every path that creates a
session by an id, or reuses the session an id names, applies (docs/SECURITY.md, "Ids").

Holdpoint makes two kinds of ids: minted ones (random) and derived ones (a hash of who asked and
for what: an `Idempotency-Key`'s session and turn, a caller's MCP approvals session, a sub-agent's
child session, an API raise's interrupt). Both have the shape `<prefix>_<24 hex>`. Derived ids are
predictable by anyone who knows their inputs, so an id a caller chooses (an AG-UI `threadId` or
`runId`, a `turn_id`, an `interrupt_id`) may never take that shape for something that does not
exist yet: otherwise a caller could create, ahead of its owner, the session or turn Holdpoint
would later derive for someone else. And a path that finds a session already at a derived id
reuses it only when it is that principal's own, of the same agent and kind.
"""

from __future__ import annotations

import re

from holdpoint.core.state import Header, SessionKind

__all__ = ["RESERVED", "SessionKind", "principal_of", "reserved", "reuse_refusal"]

RESERVED = re.compile(r"(?:ses|turn|int)_[0-9a-f]{24}")
"""The shape of the session, turn and interrupt ids Holdpoint mints and derives (`core.state.mint`,
`core.state.derive`). Message and call ids are not reserved: a client's view echoes the ones it was
sent, and they name nothing outside their own session's tree."""


def reserved(chosen: str | None) -> bool:
    """Whether a caller-chosen id has the shape of one Holdpoint makes."""
    return chosen is not None and RESERVED.fullmatch(chosen) is not None


def principal_of(header: Header) -> str:
    """The principal that started a session: `user:NAME` when a client token did (its `end_user`),
    else `key:NAME` (the API key's subject). A sub-agent's child carries its parent's."""
    if header.end_user is not None:
        return f"user:{header.end_user}"
    return f"key:{(header.identity or {}).get('id') or ''}"


def reuse_refusal(header: Header, *, agent_id: str, kind: SessionKind, principal: str | None = None,
                  parent: dict[str, str] | None = None) -> str | None:
    """Why the session `header` describes may not be reused for this purpose (None: it may). A
    derived id names the `principal` it was derived for, so the session must be that principal's
    own; every reuse also checks the agent and the kind, and a sub-agent's child its parent."""
    if principal is not None and principal_of(header) != principal:
        return "it belongs to another principal"
    if header.agent_id != agent_id:
        return f"it runs agent {header.agent_id}, not {agent_id}"
    if header.kind != kind:
        return f"it is an {header.kind} session, not an {kind} session" if header.kind == "approvals" \
            else f"it is a {header.kind} session, not an {kind} session"
    if parent is not None and header.parent != parent:
        return "it is not this call's child session"
    return None
