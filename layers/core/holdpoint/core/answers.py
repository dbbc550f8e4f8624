"""What an answer to an interrupt means, whichever channel carried it (PROTOCOL.md, "One answer").

Every channel (the API, the CLI and the console over it, AG-UI, A2A, MCP, Slack, links) hands the
resume path a raw answer. This module reads it once, for all of them:

- the **payload** is the answer the person gave: an AG-UI envelope `{status, payload, responder}`
  is unwrapped wherever it arrives, so the worker sees the same shape whatever was used;
- the **verdict** says what the answer decides: it approves only when it says so
  (`approved: true`, or an option that declares `approved: true`). Under an approver policy an
  answer that says neither is refused, never guessed; without one it is plainly `answered`.

Pure: no clock, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from holdpoint.core.errors import Refusal
from holdpoint.core.jsontypes import JsonObject, JsonValue

Verdict = Literal["approved", "denied", "cancelled", "answered"]
"""`approved`/`denied`: the answer says so; `cancelled`: the person dismissed the question (AG-UI
`cancelled`, A2A `CancelTask`, an MCP elicitation declined) or it expired with `on_expiry: cancel`;
`answered`: an answer with no verdict, taken only where no approver policy is in force."""
VERDICTS: tuple[Verdict, ...] = ("approved", "denied", "cancelled", "answered")
DENIALS: frozenset[str] = frozenset({"denied", "cancelled"})
"""The verdicts a quorum counts as a denial (`deny_resolves`): a dismissal is never an approval."""

Channel = Literal["api", "agui", "a2a", "mcp", "slack", "link", "expiry"]
"""How an answer arrived: the channel Holdpoint can vouch for (the CLI and the console answer
through the API, so they are `api`); `expiry` for the answer an expiry gives (R16, A5)."""

CHANNELS: tuple[Channel, ...] = ("api", "agui", "a2a", "mcp", "slack", "link", "expiry")


def as_verdict(value: object) -> Verdict | None:
    """A verdict as a record stores it, or None for anything else (a record from before verdicts)."""
    return next((v for v in VERDICTS if v == value), None)


def as_channel(value: object) -> Channel | None:
    return next((c for c in CHANNELS if c == value), None)


ENVELOPE_STATUSES = frozenset({"resolved", "cancelled"})
ENVELOPE_KEYS = frozenset({"status", "payload", "responder"})
"""AG-UI's answer shape: an object with a `status` of `resolved` or `cancelled` and nothing but
these keys. Any other object (an expiry's `{status, reason, ...}` included) is a plain answer."""

MAX_OPTIONS = 25
"""Options past this many are not offered (Block Kit's limit of elements in one actions block)."""

CANCELLED: JsonObject = {"status": "cancelled"}
"""A dismissal in the envelope every channel reads: A2A's `CancelTask`, MCP's declined elicitation."""
APPROVE: JsonObject = {"approved": True}
DENY: JsonObject = {"approved": False}
DEFAULT_OPTIONS: tuple[JsonObject, ...] = (
    {"label": "Approve", "value": APPROVE, "approved": True},
    {"label": "Deny", "value": DENY, "approved": False},
)
"""What every channel offers for an interrupt that declares no options: the same two answers on
Slack's buttons, the links, the console's buttons and the CLI's `approve`/`deny`."""


@dataclass(frozen=True)
class Given:
    """A raw answer read: the payload the person gave (`None` when none was sent), whether they
    dismissed the question, and the JSON path of the payload in what was sent (for errors)."""

    payload: JsonValue
    cancelled: bool = False
    param: str = "payload"

    @property
    def empty(self) -> bool:
        """No answer was sent: nothing to record but that (PROTOCOL.md, "No silent decline")."""
        return self.payload is None and not self.cancelled


def is_envelope(raw: JsonValue) -> bool:
    return isinstance(raw, dict) and raw.get("status") in ENVELOPE_STATUSES and set(raw) <= ENVELOPE_KEYS


def given(raw: JsonValue) -> Given:
    """A raw answer as the person gave it: the inner payload of an AG-UI envelope, else itself."""
    if isinstance(raw, dict) and is_envelope(raw):
        return Given(raw.get("payload"), cancelled=raw["status"] == "cancelled", param="payload.payload")
    return Given(raw)


def declared_options(payload: JsonValue) -> list[JsonObject]:
    """`payload.metadata.options` as `{label, value, approved?}` (a bare option is both label and
    value; `approved` kept when the option declares it as a boolean); [] when none are declared."""
    meta = payload.get("metadata") if isinstance(payload, dict) else None
    raw = meta.get("options") if isinstance(meta, dict) else None
    if not isinstance(raw, list):
        return []
    out: list[JsonObject] = []
    for option in raw[:MAX_OPTIONS]:
        if isinstance(option, dict) and "value" in option:
            item: JsonObject = {"label": str(option.get("label", option["value"])), "value": option["value"]}
            if isinstance(option.get("approved"), bool):
                item["approved"] = option["approved"]
        else:
            item = {"label": option if isinstance(option, str) else json.dumps(option), "value": option}
        out.append(item)
    return out


def options_of(payload: JsonValue) -> list[JsonObject]:
    """The options a person is offered: the declared ones, else Approve and Deny."""
    return declared_options(payload) or [dict(o) for o in DEFAULT_OPTIONS]


def _said(value: JsonValue) -> bool | None:
    """`approved` as an answer states it: a boolean on an object, else nothing."""
    flag = value.get("approved") if isinstance(value, dict) else None
    return flag if isinstance(flag, bool) else None


def option_verdict(option: JsonObject) -> bool | None:
    """Whether choosing an option approves: its own `approved`, else its value's; None: neither says."""
    flag = option.get("approved")
    return flag if isinstance(flag, bool) else _said(option.get("value"))


def _canonical(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def says(payload: JsonValue, options: list[JsonObject]) -> bool | None:
    """True/False when the answer approves or denies, None when it says neither: its own
    `approved`, else the `approved` of the declared option whose value it is."""
    flag = _said(payload)
    if flag is not None:
        return flag
    text = _canonical(payload)
    for option in options:
        if _canonical(option.get("value")) == text:
            return option_verdict(option)
    return None


def verdict(answer: Given, options: list[JsonObject], *, under_policy: bool) -> Verdict:
    """What an answer decides. Under an approver policy an answer that neither approves nor
    denies is refused (400 `invalid_resume` naming the payload): the rule fails closed."""
    if answer.cancelled:
        return "cancelled"
    flag = says(answer.payload, options)
    if flag is not None:
        return "approved" if flag else "denied"
    if under_policy:
        what = "no answer" if answer.payload is None else "an answer that neither approves nor denies"
        raise Refusal("invalid_resume", f"this interrupt asks for an approval (an approver policy is in force) and "
                      f"got {what}: send {{\"approved\": true}} or {{\"approved\": false}}"
                      + (", or the value of one of its options" if options else ""), param=answer.param)
    return "answered"


def options_problem(payload: JsonValue) -> str | None:
    """Why the options an interrupt declares cannot serve an approval (each must say whether it
    approves), naming the first that does not; None when they can (or none are declared)."""
    for i, option in enumerate(declared_options(payload)):
        if option_verdict(option) is None:
            return f"payload.metadata.options[{i}]"
    return None


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer as an interrupt records it (its `approvals`): who, the verdict as `status`, the
    payload the person gave, their comment, when, and by which channel."""

    subject: str
    origin: str
    status: Verdict
    payload: JsonValue = None
    comment: str | None = None
    at: str = ""
    channel: Channel | None = None

    def to_item(self) -> JsonObject:
        return {"subject": self.subject, "origin": self.origin, "status": self.status, "payload": self.payload,
                "comment": self.comment, "at": self.at, "channel": self.channel}

    def summary(self) -> JsonObject:
        """What `interrupt.resumed` and the notifications repeat of it: all but the payload."""
        return {"subject": self.subject, "origin": self.origin, "status": self.status, "channel": self.channel,
                "comment": self.comment, "at": self.at}

    @classmethod
    def from_item(cls, item: JsonValue) -> Answer:
        """An answer as stored; a status from before verdicts reads as `answered` (as `outcome` does)."""
        body = item if isinstance(item, dict) else {}
        comment = body.get("comment")
        return cls(subject=str(body.get("subject", "")), origin=str(body.get("origin", "")),
                   status=as_verdict(body.get("status")) or "answered", payload=body.get("payload"),
                   comment=comment if isinstance(comment, str) else None, at=str(body.get("at", "")),
                   channel=as_channel(body.get("channel")))


@dataclass(frozen=True, slots=True)
class Responder:
    """Who closed an interrupt: the deciding answer's subject and origin, or the expiry's."""

    subject: str
    origin: str

    def to_item(self) -> JsonObject:
        return {"subject": self.subject, "origin": self.origin}

    @classmethod
    def from_item(cls, item: JsonValue) -> Responder | None:
        if not isinstance(item, dict):
            return None
        return cls(subject=str(item.get("subject", "")), origin=str(item.get("origin", "")))


EXPIRY_RESPONDER = Responder(subject="expiry", origin="system")
"""The responder of an interrupt its expiry closed (R16, A5)."""
OnExpiry = Literal["cancel", "deny", "approve"]
"""A5: what an expiry answers (an interrupt's `on_expiry`, an agent's `interrupt_on_expiry`)."""
MAX_COMMENT = 2_000
"""A resume's `comment` is at most this many characters (400 `param: comment` beyond)."""


def expiry_verdict(on_expiry: str | None) -> Verdict:
    """The verdict of an expiry's answer (R16, A5): `cancel`, the default, dismisses the question."""
    if on_expiry == "approve":
        return "approved"
    return "denied" if on_expiry == "deny" else "cancelled"
