"""Slack's Block Kit rendering of an interrupt: the question with its options as buttons, and the
decided message that replaces them (a click's update and a closing event's alike).

Rendering only: what posts, verifies and resumes is `outbound.slack`. Text a person typed is sent as
plain text, never as markup, so nothing in a message is read as a mention or a link but the links
Holdpoint adds and a Slack user id it mentions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.notify import declared_options

MAX_TEXT = 3000  # Block Kit's limit of a section's text
DEFAULT_OPTIONS: list[JsonObject] = [{"label": "Approve", "value": "approve"}, {"label": "Deny", "value": "deny"}]
"""The buttons of an interrupt whose payload names no `metadata.options`."""


def options_of(payload: object) -> list[JsonObject]:
    """`payload.metadata.options` as `{label, value}` (a bare option is both), or Approve/Deny."""
    return declared_options(payload) or DEFAULT_OPTIONS


def message_of(interrupt: Mapping[str, object]) -> str:
    payload = interrupt.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return str(payload["message"])[:MAX_TEXT]
    return f"Holdpoint needs an answer: {interrupt.get('reason', 'interrupt')}"[:MAX_TEXT]


@dataclass(frozen=True)
class Decided:
    """How an interrupt closed, as its message shows it: the outcome's words, who (a Slack user
    id to mention, or a subject shown as plain text; neither for an expiry) and when."""

    outcome: str
    at: str
    user: str = ""
    subject: str = ""


def slack_time(iso: str | None) -> str:
    """`2026-01-01T10:00:00.000Z` as the message shows a time: `2026-01-01 10:00:00 UTC`."""
    return f"{iso[:10]} {iso[11:19]} UTC" if iso and len(iso) >= 19 else "an unknown time"


def outcome_of(status: str, resolution: Any, payload: Any) -> str:
    """The closing answer in words: expired (with its `on_expiry` outcome), cancelled, the label of
    the option it chose, approved or denied; never the answer's own content beyond that."""
    answer = resolution if isinstance(resolution, dict) else {}
    if status == "expired":
        return {"approve": "Expired (approved)", "deny": "Expired (denied)"}.get(
            str(answer.get("on_expiry")), "Expired (cancelled)")
    if answer.get("status") == "cancelled":
        return "Cancelled"
    inner = answer["payload"] if answer.get("status") == "resolved" and "payload" in answer else resolution
    for option in options_of(payload):
        if inner == option["value"]:
            return str(option["label"])[:75]
    approved = inner["approved"] if isinstance(inner, dict) and "approved" in inner else answer.get("approved")
    return {True: "Approved", False: "Denied"}.get(approved, "Answered") if isinstance(approved, bool) else "Answered"


def decided_by(responder: Mapping[str, object] | None, users: Mapping[str, str] | None) -> tuple[str, str]:
    """(Slack user, subject) to show for whoever decided: the Slack user a `slack:` subject or a
    subject mapped from exactly one of the declaration's `users` names, else the subject with its
    origin."""
    who = responder or {}
    subject, origin = str(who.get("subject") or ""), str(who.get("origin") or "")
    if origin == "system" and subject == "expiry":
        return "", ""
    mapped = [user for user, mapped_to in (users or {}).items() if mapped_to == subject]
    if users is None and subject.startswith("slack:"):
        mapped = [subject.removeprefix("slack:")]
    if len(mapped) == 1 and all(c.isalnum() or c in "._-" for c in mapped[0]):
        return mapped[0], ""
    return "", f"{subject} ({origin})" if origin else subject


def decided_blocks(text: str, decided: Decided) -> tuple[str, list[JsonObject]]:
    """A decided message (the text and its blocks, no buttons): the one rendering of both a
    click's update and a closing event's. Only a Slack user id is sent as markup. Blocks are
    JSON objects: slack_sdk takes plain dicts."""
    if decided.user:
        said = f"by <@{decided.user}> at {decided.at}"
        by: JsonObject = {"type": "mrkdwn", "text": said}
    else:
        who = f"by {decided.subject} at " if decided.subject else "at "
        shown = f"{who}{decided.at}"[:MAX_TEXT]
        by = {"type": "plain_text", "text": shown, "emoji": False}
        said = escape(shown)
    fallback = f"{text}\n{escape(decided.outcome)} {said}"
    return fallback[:MAX_TEXT], [section(text), {"type": "context", "elements": [
        {"type": "plain_text", "text": decided.outcome[:75] or " ", "emoji": False}, by]}]


def escape(text: str) -> str:
    """Text Slack would read as markup (`<!channel>`, links) in a message's `text`, shown as typed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def section(text: str) -> JsonObject:
    """The message as plain text: nothing in it is read as Slack markup or a mention."""
    return {"type": "section", "text": {"type": "plain_text", "text": text or " ", "emoji": False}}


def context(text: str, links: Mapping[str, str] | None) -> JsonObject:
    elements: list[JsonValue] = [{"type": "plain_text", "text": text[:MAX_TEXT] or " "}]
    for name, url in (links or {}).items():
        elements.append({"type": "mrkdwn", "text": f"<{url}|{name}>"})
    return {"type": "context", "elements": elements[:10]}




def button(action_id: str, label: str, value: str) -> JsonObject:
    """One option's button: `value` is what a click sends back (sealed by the channel)."""
    return {"type": "button", "action_id": action_id, "value": value,
            "text": {"type": "plain_text", "text": label[:75]}}


def question_blocks(text: str, about: str, links: Mapping[str, str] | None,
                    buttons: list[JsonObject]) -> list[JsonObject]:
    """A raised interrupt's message: its text, what it is about with the links, and its buttons."""
    return [section(text), context(about, links), {"type": "actions", "block_id": "holdpoint",
                                                   "elements": [*buttons]}]
