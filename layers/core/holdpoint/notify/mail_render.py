"""An interrupt's email, rendered: the Subject line, a plain text part and an HTML part, each
saying the same things: the question (as Slack shows it, `slack_blocks.message_of`), the action
and its arguments, who may answer (the frozen policy, `approvals.waiting_for`), the expiry and what
it answers, and one signed link per option.

Everything interpolated came from a worker, a model or an end user: in the HTML part it is
HTML-escaped (attributes quoted, so a link is only ever an `href` Holdpoint minted); the Subject
has its control characters (CR, LF, ...) replaced by spaces and is cut to `SUBJECT_CHARS`, so no
header can be injected; every argument and the question are cut to a bound, so a huge argument
makes a long email, never an unbounded one. Pure: the channel (`mail`) sends what this renders.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

from holdpoint.core.approvals import waiting_for
from holdpoint.core.bound_action import argument_pairs
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.notify import link_choices
from holdpoint.core.state import Interrupt
from holdpoint.notify.slack_blocks import message_of

SUBJECT_CHARS = 120
"""A Subject line past this is cut (with an ellipsis): mail clients show less anyway."""
VALUE_CHARS = 500
"""One argument's value, as JSON text, is cut past this."""
MAX_ARGUMENTS = 40
"""Arguments shown; the rest are counted ("and 3 more")."""
CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")
"""What may not reach a header line: CR and LF above all (a header injection), and the other controls."""
HEADINGS = {"interrupt.raised": "Approval needed", "interrupt.reminded": "Reminder: approval needed",
            "interrupt.escalated": "Escalated: approval needed"}


@dataclass(frozen=True)
class Email:
    subject: str
    text: str
    html: str

    def fields(self) -> JsonObject:
        return {"subject": self.subject, "text": self.text, "html": self.html}


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def one_line(text: str, limit: int) -> str:
    """`text` safe for a header: no control character (each run is one space), at most `limit` characters."""
    return cut(" ".join(CONTROL.sub(" ", text).split()), limit)


@dataclass(frozen=True)
class Shown:
    """What the message says, as plain strings (escaped per part when rendered)."""

    heading: str
    question: str
    reason: str
    session: str
    action: tuple[str, str, list[tuple[str, str]], int] | None  # tool, fingerprint, (name, value)s, not shown
    who: str
    expiry: str
    links: list[tuple[str, str]]  # (label, url)


def render(event: JsonObject, interrupt: Interrupt, links: dict[str, str]) -> Email:
    """The email of one waiting event (raised, reminded, escalated) of `interrupt`, with `links`."""
    shown = _shown(event, interrupt, links)
    subject = one_line(f"{shown.heading}: {shown.question}", SUBJECT_CHARS)
    return Email(subject=subject, text=_text(shown), html=_html(shown))


def _shown(event: JsonObject, interrupt: Interrupt, links: dict[str, str]) -> Shown:
    choices = link_choices(interrupt.payload)
    return Shown(
        heading=HEADINGS.get(str(event.get("type")), "Approval needed"),
        question=message_of(interrupt.view()), reason=interrupt.reason,
        session=f"{event.get('agent_id') or ''} · session {event.get('session_id')}",
        action=_action(interrupt), who=who_may_answer(interrupt), expiry=expiry_of(interrupt),
        links=[(str(choices[key]["label"]) if key in choices else key, url) for key, url in links.items()])


def _action(interrupt: Interrupt) -> tuple[str, str, list[tuple[str, str]], int] | None:
    """The bound action (A3): its tool, fingerprint and arguments as (name, bounded JSON value)."""
    if interrupt.action is None:
        return None
    pairs = [(name, json.dumps(v, ensure_ascii=False)) for name, v in argument_pairs(interrupt.action.arguments)]
    shown = [(one_line(name, 80), cut(value, VALUE_CHARS)) for name, value in pairs[:MAX_ARGUMENTS]]
    return interrupt.action.tool, interrupt.action.fingerprint, shown, len(pairs) - len(shown)


def who_may_answer(interrupt: Interrupt) -> str:
    """The frozen policy in words: the named approvers and groups still to answer, how many
    approvals are needed, and whether the requester is barred."""
    waiting = waiting_for(interrupt)
    subjects, groups, needed = waiting["subjects"], waiting["groups"], waiting["approvals"]
    named = ([str(s) for s in subjects] if isinstance(subjects, list) else []) + (
        [f"group {g}" for g in groups] if isinstance(groups, list) else [])
    who = ", ".join(named) if named else "anyone the agent's approval policy admits"
    out = f"{who}; {needed} approval{'s' if needed != 1 else ''} needed"
    if interrupt.policy is not None and interrupt.policy.forbid_requester and interrupt.requester:
        out += f"; not the requester ({interrupt.requester})"
    return out


def expiry_of(interrupt: Interrupt) -> str:
    if not interrupt.expires_at:
        return "This request does not expire."
    return f"Expires at {interrupt.expires_at}; then it answers {interrupt.on_expiry or 'cancel'}."


def _text(s: Shown) -> str:
    lines = [s.heading, "", s.question, "", f"Reason: {one_line(s.reason, 200)}", f"Asked by: {s.session}"]
    if s.action is not None:
        tool, fingerprint, pairs, more = s.action
        lines += ["", f"Action: {one_line(tool, 80)}"] + [f"  {name}: {value}" for name, value in pairs]
        lines += [f"  and {more} more"] if more else []
        lines += [f"  fingerprint: {fingerprint}"]
    lines += ["", f"Who may answer: {s.who}", s.expiry, ""]
    lines += [f"{label}: {url}" for label, url in s.links] or ["Answer in the inbox."]
    lines += ["", "Each link opens a page that asks you to confirm; one answer counts, on any channel."]
    return "\n".join(lines) + "\n"


def _html(s: Shown) -> str:
    e = html.escape
    parts = [f"<h1>{e(s.heading)}</h1>", f"<p>{e(s.question)}</p>",
             f"<p>Reason: {e(one_line(s.reason, 200))}<br>Asked by: {e(s.session)}</p>"]
    if s.action is not None:
        tool, fingerprint, pairs, more = s.action
        rows = "".join(f"<tr><th>{e(name)}</th><td><code>{e(value)}</code></td></tr>" for name, value in pairs)
        parts.append(f"<p>Action: <code>{e(tool)}</code></p><table>{rows}</table>")
        parts += [f"<p>and {more} more</p>"] if more else []
        parts.append(f"<p>Fingerprint: <code>{e(fingerprint)}</code></p>")
    parts += [f"<p>Who may answer: {e(s.who)}</p>", f"<p>{e(s.expiry)}</p>"]
    buttons = " ".join(f'<a href="{e(url, quote=True)}">{e(label)}</a>' for label, url in s.links)
    parts.append(f"<p>{buttons}</p>" if buttons else "<p>Answer in the inbox.</p>")
    parts.append("<p>Each link opens a page that asks you to confirm; one answer counts, on any channel.</p>")
    return "<!DOCTYPE html><html><body>" + "".join(parts) + "</body></html>"
