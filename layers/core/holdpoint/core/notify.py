"""Notifications of the interrupt lifecycle: which events there are, what an agent may declare in
`notify`, and the one notification body every channel (EventBridge, webhooks, Slack, email) is given.

Pure: the notifier service reads the event items the session's own transaction wrote (the
outbox) and hands them here; nothing is looked up and no clock is read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from holdpoint.core import answers

NotifyEvent = Literal["interrupt.raised", "interrupt.answered", "interrupt.resolved", "interrupt.expired",
                      "interrupt.reminded", "interrupt.escalated"]
NOTIFY_EVENTS: tuple[str, ...] = ("interrupt.raised", "interrupt.answered", "interrupt.resolved",
                                  "interrupt.expired", "interrupt.reminded", "interrupt.escalated")
"""The lifecycle events published (EventBridge `detail-type`, webhook `type`)."""
WAITING = ("interrupt.raised", "interrupt.reminded", "interrupt.escalated")
"""Events about an interrupt still waiting for an answer: they carry its reason and one-click links."""
CLOSING = ("interrupt.resolved", "interrupt.expired")
"""Events that close an interrupt, however it was decided (S1: a Slack message follows them)."""
TIMER_EVENTS = ("interrupt.reminded", "interrupt.escalated")
"""A5's reminders and escalations, logged under the same names they are published as."""
ANSWERED = "interrupt.answered"
"""A2: an answer recorded on an open interrupt that it did not decide (a quorum still short). It is
no event-log entry: the outbox reads it off the interrupt item's own change (`aws.outbox`)."""

SUMMARY_CHARS = 1_024
"""A notification carries the interrupt payload as bounded JSON text, never the whole payload."""

def link_choices(payload: Any) -> dict[str, dict[str, Any]]:
    """One link per option a person is offered (`answers.options_of`): `approve` and `deny` for an
    interrupt that declares none, `option-<i>` for each declared one. Following a link answers with
    that option's value, as a Slack button, the console's option button and an MCP choice do (in
    the AG-UI envelope, so a value is read as it is, never as an envelope of its own)."""
    declared = answers.declared_options(payload)
    if not declared:
        return {str(o["label"]).lower(): {"label": o["label"], "answer": o["value"]} for o in answers.DEFAULT_OPTIONS}
    return {f"option-{i}": {"label": o["label"], "answer": {"status": "resolved", "payload": o["value"]}}
            for i, o in enumerate(declared)}

LINK_ORIGINS = ("worker", "client")
"""Links resume as a `client` caller (R17), so they are minted only for interrupts a client may clear."""


def kind_of(event: dict[str, Any]) -> str | None:
    """The lifecycle event an event-log entry is (`session.interrupted` -> `interrupt.raised`...),
    or None for an entry that is not one."""
    etype = event.get("type")
    if etype == "session.interrupted":
        return "interrupt.raised"
    if etype in TIMER_EVENTS or etype == ANSWERED:
        return str(etype)
    if etype == "session.interrupt_resumed":
        return "interrupt.expired" if (event.get("data") or {}).get("expired") else "interrupt.resolved"
    return None


def event_id(tenant: str, session_id: str, key: int | str) -> str:
    """Stable for one event-log entry (`key` its seq) or one recorded answer (`key` the interrupt,
    generation and answer count) however often the stream delivers it: consumers dedupe on it."""
    digest = hashlib.sha256(f"{tenant}/{session_id}/{key}".encode()).hexdigest()[:24]
    return f"evt_{digest}"


def summary(payload: Any, limit: int = SUMMARY_CHARS) -> str:
    """The payload as compact JSON text, cut to `limit` characters (with an ellipsis when cut)."""
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def notification(tenant: str, session_id: str, agent_id: str | None, event: dict[str, Any],
                 links: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The body every channel gets for one event-log entry (None when it is no lifecycle event):
    who, which interrupt, why, a bounded summary of the payload, and the one-click links."""
    kind = kind_of(event)
    if kind is None:
        return None
    data = event.get("data") or {}
    out: dict[str, Any] = {
        "event_id": event_id(tenant, session_id, event["key"] if kind == ANSWERED else int(event["seq"])),
        "type": kind,
        "at": event.get("at"),
        "tenant": tenant,
        "session_id": session_id,
        "agent_id": agent_id,
        "interrupt_id": data.get("interrupt_id"),
        "seq": event.get("seq"),
    }
    if kind == "interrupt.raised":
        out.update(origin=data.get("origin"), reason=data.get("reason"), summary=summary(data.get("payload")))
        if data.get("action"):  # A3: the tool, its arguments and the fingerprint an approval binds to
            out["action"] = data["action"]
        out["links"] = dict(links or {})
    elif kind in TIMER_EVENTS:  # A5: still waiting; `reminder`/`of` or `escalate_to`, and the links again
        out.update({k: data[k] for k in ("reason", "reminder", "of", "escalate_to", "after_secs") if k in data})
        out["links"] = dict(links or {})
    elif kind == ANSWERED:  # A2: who answered and how; the interrupt waits for the rest of its quorum
        out.update({k: data[k] for k in ("reason", "answer", "answers", "quorum") if k in data})
    else:  # CLOSING: who decided, how (the verdict, PROTOCOL.md §2.3.1), and which raise it closed (S1)
        out.update(responder=data.get("responder"), summary=summary(data.get("payload")))
        for key in ("verdict", "channel"):
            if data.get(key) is not None:
                out[key] = data[key]
        if "generation" in data:
            out["generation"] = data["generation"]
    return out


# --- what an agent declares (the models are `core.agent_config`'s NotifyEntry) -------------------

CHANNELS = {"url": "notify.webhook", "slack": "notify.slack", "email": "notify.email"}
"""The key that names a `notify` entry's channel, and the channel (dotted, so an error's `param`
reads `notify[0].url`, union tags being dropped from it)."""


def channel_of(entry: Any) -> str | None:
    """The channel a `notify` entry (a dict, or its model) is for, by the key that names it."""
    for key, channel in CHANNELS.items():
        if (key in entry) if isinstance(entry, dict) else getattr(entry, key, None) is not None:
            return channel
    return None


class Entry(Protocol):
    """A declared `notify` entry as `wants` reads it (`core.agent_config`'s NotifyEntry)."""

    @property
    def events(self) -> Sequence[str] | None: ...


def wants(entry: Entry, kind: str) -> bool:
    """Whether a declared entry asked for this event. A Slack entry that posts raised interrupts
    also gets their closing events, whatever it lists, to update its message (S1)."""
    events = entry.events
    if events is None:
        return kind in NOTIFY_EVENTS
    return kind in events or (kind in CLOSING and "interrupt.raised" in events
                              and channel_of(entry) == "notify.slack")
