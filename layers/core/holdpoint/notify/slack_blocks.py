"""Slack's Block Kit rendering of an interrupt: the question with its options as buttons, and the
decided message that replaces them (a click's update and a closing event's alike).

Rendering only: what posts, verifies and resumes is `slack`. Text a person typed is sent as
plain text, never as markup, so nothing in a message is read as a mention or a link but the links
Holdpoint adds and a Slack user id it mentions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from holdpoint.core.answers import declared_options
from holdpoint.core.approvals import outcome
from holdpoint.core.bound_action import argument_pairs
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import Interrupt

MAX_TEXT = 3000  # Block Kit's limit of a section's text


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


WORDS = {"approved": "Approved", "denied": "Denied", "cancelled": "Cancelled", "answered": "Answered"}


def outcome_of(closed: Interrupt) -> str:
    """The closing answer in words, from its verdict (`approvals.outcome`, the one reading every
    view shares): expired (with its outcome), the label of the declared option it chose, or
    approved, denied, cancelled, answered; never the answer's own content beyond that."""
    decided = outcome(closed)
    if decided.expired:
        return f"Expired ({decided.verdict})"
    if decided.verdict != "cancelled":
        for option in declared_options(closed.payload):
            if option["value"] == closed.resolution:
                return str(option["label"])[:75]
    return WORDS[decided.verdict]


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
    fallback = f"{escape(text)}\n{escape(decided.outcome)} {said}"
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


def action_text(action: Mapping[str, object] | None) -> str:
    """The tool call an approval binds to (A3), as plain text: `send_email(to: "bob")`, fingerprint."""
    if not action:
        return ""
    pairs = argument_pairs(str(action.get("arguments") or "{}"))
    shown = ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    return f"Action: {action.get('tool')}({shown})\nfingerprint {action.get('fingerprint')}"[:MAX_TEXT]


def question_blocks(text: str, about: str, links: Mapping[str, str] | None,
                    buttons: list[JsonObject], action: Mapping[str, object] | None = None) -> list[JsonObject]:
    """A raised interrupt's message: its text, the action it approves (as plain text), what it is
    about with the links, and its buttons."""
    shown = [section(action_text(action))] if action else []
    return [section(text), *shown, context(about, links), {"type": "actions", "block_id": "holdpoint",
                                                           "elements": [*buttons]}]
