"""Slack as a notify channel: post an interrupt's message with its options as Block Kit buttons
(the official `slack_sdk`), and turn a click on one of them into a resume.

A notify entry `{slack: {channel, bot_token, signing_secret, users?}}` names its secrets by
reference (`env:` or `secretsmanager:`, checked by `aws.secretrefs`); a literal secret is refused
where it is declared. Each button's `value` is sealed under the deployment's key and carries what
the click needs (tenant, session, interrupt and its generation, an expiry, the option's index,
the entry): a click is trusted only when Slack's request signature verifies against the signing
secret that sealed entry names, so neither the button nor the signature can be forged alone, and
it answers only the raise it was posted for, until that raise's expiry (`core.interrupts.
answerable_until`): a button of an earlier raise of the id, a replayed click of one, or a button
past its expiry is refused and records nothing. The option's value is read from the stored
interrupt at click time, so a button stays small whatever the option holds. The Web API's
base URL is `HOLDPOINT_SLACK_API_URL` (Slack's own by default), so tests point the real client at
a fake. The notifier installs the channel as `notify.slack` (`channels`).

A message follows its interrupt (S1): the post's `{channel, ts}` is kept (`ports.PostedMessages`)
under the interrupt, its generation and a digest of the Slack declaration, and the interrupt's
closing event (`interrupt.resolved`, `interrupt.expired`), however it was decided, updates that
message to say who decided what and when, without buttons (`slack_blocks.decided_blocks`, which a
click's own update uses too). This module delivers (posts, updates, verifies a click); what the
messages look like is `slack_blocks`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypedDict
from urllib.parse import parse_qs

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier

from holdpoint.aws import secretrefs
from holdpoint.aws.errors import Refused, SecretRefError, ThrottledCall, UnavailableCall
from holdpoint.core.answers import options_of
from holdpoint.core.digits import parse_digits
from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import answerable_until
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.notify import CLOSING
from holdpoint.core.state import Interrupt
from holdpoint.notify.slack_blocks import (
    Decided,
    button,
    decided_blocks,
    decided_by,
    escape,
    message_of,
    outcome_of,
    question_blocks,
    slack_time,
)
from holdpoint.notify.slack_config import SlackConfig, SlackNotify
from holdpoint.ports import DeliveryFailed, Posted, PostedMessages, Sealer, Throttled, Unavailable

logger = logging.getLogger(__name__)

API_URL_ENV = "HOLDPOINT_SLACK_API_URL"
DEFAULT_API_URL = "https://slack.com/api/"
SEAL_PURPOSE = "slack-action"
ACTION_PREFIX = "holdpoint:"
CHANGED = "this request has changed since this message was posted; nothing was recorded"
EXPIRED = "this request has expired; nothing was recorded"

class Responder(TypedDict):
    user: str


class SlackAnswer(TypedDict):
    """A click as the resume payload: the shape the upstream approval example reads."""

    status: Literal["resolved"]
    payload: JsonValue
    responder: Responder


@dataclass(frozen=True)
class Click:
    """A verified click: who clicked which option, on which message."""

    tenant: str
    session_id: str
    interrupt_id: str
    generation: int
    option: int
    user: str
    subject: str
    channel: str
    ts: str
    config: SlackConfig
    value: Any = None
    label: str = ""
    text: str = ""

    def choosing(self, stored: Interrupt | None) -> Click:
        """The click with its option's label and value and the message, from the interrupt as
        stored (not from the interaction, whose copy Slack has escaped); refused (409, nothing
        recorded) when the interrupt is now another raise than the one the button was posted for.
        None (no such interrupt) is left to the resume to answer."""
        if stored is not None and stored.generation != self.generation:
            raise Refusal("conflict", CHANGED, "payload.actions")
        payload = stored.payload if stored is not None else None
        options = options_of(payload)
        if not 0 <= self.option < len(options):
            raise Refusal("conflict", "the interrupt's options changed since this message was posted",
                          "payload.actions")
        return replace(self, value=options[self.option]["value"], label=str(options[self.option]["label"]),
                       text=message_of({"payload": payload, "reason": "interrupt"}))

    def resume_payload(self) -> SlackAnswer:
        """The option's value in the AG-UI envelope (a value is read as it is, `answers.given`)."""
        return {"status": "resolved", "payload": self.value, "responder": {"user": self.user}}


ReadInterrupt = Callable[[str, str, str], Interrupt | None]
"""`Interrupts.read_interrupt`: the interrupt as stored, with its whole payload."""

FAILURES = (ValueError, SecretRefError, SlackApiError, SlackClientError, Refused,
            ThrottledCall, UnavailableCall, OSError)
"""What keeps a post or an update from Slack: raised as `DeliveryFailed`, to be retried."""
GONE = ("message_not_found", "channel_not_found", "cant_update_message")
"""Slack's answers to an update of a message that is no longer there to update: nothing to retry."""


def sealed_for(prepared: JsonObject, interrupt: Interrupt) -> list[str] | None:
    """The button values `prepare` sealed, when sealed for this raise of the interrupt."""
    buttons = prepared.get("buttons")
    if prepared.get("generation") != interrupt.generation or not isinstance(buttons, list):
        return None
    values = [b for b in buttons if isinstance(b, str)]
    return values if len(values) == len(buttons) else None


def message_key(interrupt_id: str, generation: int, config: SlackConfig) -> str:
    """Where the message posted for one raise of an interrupt to one Slack declaration is kept."""
    digest = hashlib.sha256(json.dumps(config.model_dump(exclude_none=True), sort_keys=True,
                                       separators=(",", ":")).encode()).hexdigest()[:16]
    return f"slack#{interrupt_id}#{generation}#{digest}"


class SlackChannel:
    """The `notify.slack` channel (`ports.NotifyChannel`): an `interrupt.raised` notification
    becomes a message with the interrupt's options as buttons."""

    def __init__(self, sealer: Sealer, read_interrupt: ReadInterrupt | None = None,
                 client: Callable[[str], WebClient] | None = None, messages: PostedMessages | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.sealer = sealer
        self.read_interrupt = read_interrupt
        self.client = client or web_client
        self.messages = messages
        self.clock = clock

    def prepare(self, event: JsonObject, entry: JsonObject, interrupt: Interrupt | None) -> JsonObject:
        """A raise's buttons, sealed here, where the deployment's key is (the notifier, as it claims
        the delivery): a retried post runs in the engine, whose role may not read the key. Kept with
        the raise (`generation`) they were sealed for."""
        if event.get("type") != "interrupt.raised" or interrupt is None or interrupt.status != "open":
            return {}
        try:
            config = SlackNotify.model_validate({"slack": entry.get("slack")}).slack
        except ValueError:
            return {}  # the attempt refuses the entry, with its own error
        tenant, session_id = str(event["tenant"]), str(event["session_id"])
        sealed: list[JsonValue] = [self._seal(i, tenant, session_id, interrupt, config)
                                   for i, _ in enumerate(options_of(interrupt.payload))]
        return {"generation": interrupt.generation, "buttons": sealed}

    def deliver(self, event: Mapping[str, object], entry: Mapping[str, object], links: dict[str, str],
                prepared: JsonObject | None = None) -> None:
        """Post a raised interrupt that is still open (a notification carries only a summary of
        the payload, so the interrupt is read as stored) and keep the message; update the kept
        message once the interrupt closes; other events send nothing. Anything that keeps the
        post or the update from Slack raises `DeliveryFailed`, to be retried."""
        kind = event.get("type")
        if self.read_interrupt is None or (kind != "interrupt.raised" and kind not in CLOSING):
            return
        try:
            config = SlackNotify.model_validate({"slack": entry.get("slack")}).slack
            if kind == "interrupt.raised":
                self._raised(event, config, links, prepared or {})
            else:
                self._closed(event, config)
        except FAILURES as exc:
            raise DeliveryFailed(f"slack: {str(exc)[:300]}") from exc

    def _raised(self, event: Mapping[str, object], config: SlackConfig, links: dict[str, str],
                prepared: JsonObject) -> None:
        """Post once per raise: a retried attempt whose message was kept posts nothing again."""
        assert self.read_interrupt is not None
        tenant, session_id = str(event["tenant"]), str(event["session_id"])
        found = self.read_interrupt(tenant, session_id, str(event["interrupt_id"]))
        if found is None or found.status != "open":
            return
        key = message_key(found.interrupt_id, found.generation, config)
        if self.messages is not None and self.messages.posted(tenant, session_id, key) is not None:
            return
        sent = self.post(tenant, session_id, found, config, links, sealed_for(prepared, found))
        if self.messages is None:
            return
        self.messages.keep_posted(tenant, session_id, key, sent)
        after = self.read_interrupt(tenant, session_id, found.interrupt_id)
        if after is not None and after.generation == found.generation and after.status != "open":
            # Closed while this (retried) post was on its way: its closing event found no message.
            self._show_closed(tenant, config, sent, after)

    def _closed(self, event: Mapping[str, object], config: SlackConfig) -> None:
        """Update the message posted for the raise this event closes (none posted: nothing to do).
        The outcome is read off the interrupt as stored while it is that raise's; else the event says
        only how it closed."""
        assert self.read_interrupt is not None
        tenant, session_id, iid = str(event["tenant"]), str(event["session_id"]), str(event["interrupt_id"])
        found = self.read_interrupt(tenant, session_id, iid)
        generation = event.get("generation")
        if not isinstance(generation, int):
            generation = found.generation if found is not None else 0
        ref = self.messages.posted(tenant, session_id, message_key(iid, generation, config)) if self.messages else None
        if ref is None:
            return
        if found is not None and found.generation == generation and found.status != "open":
            self._show_closed(tenant, config, ref, found)
            return
        # Deleted after its retention, or raised again since: the event's own account.
        # A notification Holdpoint built: its responder an object or absent, its time ISO text.
        responder, at = event.get("responder"), event.get("at")
        user, subject = decided_by(responder if isinstance(responder, Mapping) else None, config.users)
        outcome = "Expired" if event.get("type") == "interrupt.expired" else "Answered"
        self._update(tenant, config, ref, "Holdpoint asked a question here.",
                     Decided(outcome=outcome, at=slack_time(at if isinstance(at, str) else None), user=user,
                             subject=subject))

    def _show_closed(self, tenant: str, config: SlackConfig, ref: Posted, closed: Interrupt) -> None:
        """Update a message with how the interrupt, as stored, closed."""
        user, subject = decided_by(closed.responder.to_item() if closed.responder else None, config.users)
        self._update(tenant, config, ref, message_of(closed.view()), Decided(
            outcome=outcome_of(closed), at=slack_time(closed.resolved_at),
            user=user, subject=subject))

    def _update(self, tenant: str, config: SlackConfig, ref: Posted, text: str, decided: Decided) -> None:
        """Replace a message's buttons with its decision; a message gone from Slack is left alone."""
        token = secretrefs.resolve(config.bot_token, tenant, "slack.bot_token") or ""
        fallback, blocks = decided_blocks(text, decided)
        try:
            self.client(token).chat_update(channel=ref.channel, ts=ref.ts, text=fallback, blocks=blocks)
        except SlackApiError as exc:
            if exc.response.get("error") not in GONE:
                raise
            logger.warning("slack message %s is gone; not updated", ref.ts)

    def post(self, tenant: str, session_id: str, interrupt: Interrupt, config: SlackConfig,
             links: Mapping[str, str] | None = None, sealed: list[str] | None = None) -> Posted:
        """Post `interrupt` to the declared channel, its buttons' values `sealed` ahead (`prepare`)
        or sealed now; where Slack put the message."""
        token = secretrefs.resolve(config.bot_token, tenant, "slack.bot_token") or ""
        text = message_of(interrupt.view())
        options = options_of(interrupt.payload)
        values = sealed if sealed is not None and len(sealed) == len(options) else [
            self._seal(i, tenant, session_id, interrupt, config) for i in range(len(options))]
        buttons = [button(f"{ACTION_PREFIX}{i}", str(option["label"]), values[i]) for i, option in enumerate(options)]
        blocks = question_blocks(text, f"{interrupt.reason} · session {session_id}", links, buttons,
                               interrupt.action.to_item() if interrupt.action else None)
        # `text` is the notification's and every fallback's: escaped, so no `<!channel>` or `<url|label>` is read
        sent = self.client(token).chat_postMessage(channel=config.channel, text=escape(text), blocks=blocks)
        return Posted(str(sent["channel"]), str(sent["ts"]))

    def _seal(self, index: int, tenant: str, session_id: str, interrupt: Interrupt, config: SlackConfig) -> str:
        """Option `index`'s button value, sealed to this raise (`g`) until it can no longer be
        answered (`x`); options_of's labels are text."""
        return self.sealer.seal(SEAL_PURPOSE, {
            "t": tenant, "s": session_id, "i": interrupt.interrupt_id, "g": interrupt.generation,
            "x": int(answerable_until(interrupt)), "n": index, "e": config.model_dump(exclude_none=True)})

    # -- a click --------------------------------------------------------------------------------

    def click(self, body: str, headers: Mapping[str, str]) -> Click:
        """The click an interaction request carries, once its Slack signature verifies and its
        button has not expired; a `Refusal` (4xx naming the problem) otherwise, before anything is
        recorded. A button sealed without a generation (posted before buttons carried one) cannot
        say which raise it answers and is refused as changed."""
        payload = interaction_payload(body)
        action = _holdpoint_action(payload)
        sealed = self.sealer.unseal(SEAL_PURPOSE, str(action.get("value", "")))
        if sealed is None:
            raise Refusal("validation_error", "the action is not a Holdpoint button", "payload.actions")
        config = SlackConfig.model_validate(sealed["e"])
        tenant = str(sealed["t"])
        secret = signing_secret(config, tenant)
        lowered = {k.lower(): v for k, v in headers.items()}
        stamp = lowered.get("x-slack-request-timestamp")
        if stamp is not None and parse_digits(stamp) is None:  # slack_sdk int()s it: `²` would be a 500
            raise Refusal("unauthorized", "the Slack request timestamp must be ASCII digits",
                          "x-slack-request-timestamp")
        if not SignatureVerifier(secret).is_valid(body, stamp,
                                                  lowered.get("x-slack-signature")):
            raise Refusal("unauthorized", "the Slack request signature is not valid", "x-slack-signature")
        generation, expires = sealed.get("g"), sealed.get("x")
        if not isinstance(generation, int) or not isinstance(expires, int):
            raise Refusal("conflict", CHANGED, "payload.actions")
        if self.clock() >= expires:
            raise Refusal("action_expired", EXPIRED, "payload.actions")
        user = str(_member(payload, "user").get("id") or "")
        subject = subject_of(config, user)
        container = _member(payload, "container")
        return Click(tenant=tenant, session_id=str(sealed["s"]), interrupt_id=str(sealed["i"]),
                     generation=generation, option=_option(sealed.get("n")), user=user, subject=subject,
                     channel=str(container.get("channel_id") or _member(payload, "channel").get("id") or ""),
                     ts=str(container.get("message_ts") or _member(payload, "message").get("ts") or ""),
                     config=config)

    def show_decision(self, click: Click, at: str) -> None:
        """Replace the buttons with who decided what, and when (the label is sent as plain text)."""
        self._update(click.tenant, click.config, Posted(click.channel, click.ts), click.text,
                     Decided(outcome=click.label, at=at, user=click.user))


def signing_secret(config: SlackConfig, tenant: str) -> str:
    """The signing secret the declaration names; one that cannot be read verifies nothing (401),
    as a click is answered for whoever sends it, never with a 5xx."""
    try:
        return secretrefs.resolve(config.signing_secret, tenant, "slack.signing_secret") or ""
    except (Throttled, Unavailable):
        raise  # AWS refused the read, about load: the edge answers 503, not an unsigned request
    except (SecretRefError, Refused):
        logger.warning("slack signing secret unavailable", exc_info=True)
        raise Refusal("unauthorized", "the Slack signing secret this button names is not available",
                      "x-slack-signature") from None


def web_client(token: str) -> WebClient:
    return WebClient(token=token, base_url=os.environ.get(API_URL_ENV) or DEFAULT_API_URL, timeout=10)


def interaction_payload(body: str) -> JsonObject:
    """The JSON `payload` field of Slack's form-encoded interaction request."""
    try:
        raw = parse_qs(body, strict_parsing=True).get("payload", [""])[0]
        payload = json.loads(raw)
    except ValueError:
        raise Refusal("validation_error", "the body is not a Slack interaction (form field `payload`)",
                      "payload") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise Refusal("validation_error", "only block_actions interactions are handled", "payload.type")
    return payload


def _member(payload: JsonObject, key: str) -> JsonObject:
    """An object member of Slack's payload (absent: empty); anything else fails as reading it would."""
    value = payload.get(key) or {}
    if not isinstance(value, dict):
        raise AttributeError(f"{type(value).__name__!r} object has no attribute 'get'")
    return value


def _holdpoint_action(payload: Mapping[str, object]) -> JsonObject:
    actions = payload.get("actions") or []
    if isinstance(actions, int | float):  # as iterating it would
        raise TypeError(f"{type(actions).__name__!r} object is not iterable")
    for action in actions if isinstance(actions, list) else []:  # a string's or an object's members are no action
        if isinstance(action, dict) and str(action.get("action_id", "")).startswith(ACTION_PREFIX):
            return action
    raise Refusal("validation_error", "the interaction has no Holdpoint action", "payload.actions")


def subject_of(config: SlackConfig, user: str) -> str:
    """The subject a click acts as: the mapped one, or `slack:<id>` when no map is declared."""
    if config.users is None:
        return f"slack:{user}"
    if user not in config.users:
        raise Refusal("forbidden", f"Slack user {user} is not mapped to an approver", "payload.user")
    return config.users[user]


def _option(value: object) -> int:
    """The button's option index as sealed (an int); anything else is not a button Holdpoint sealed."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise Refusal("validation_error", "the action is not a Holdpoint button", "payload.actions")
    return value
