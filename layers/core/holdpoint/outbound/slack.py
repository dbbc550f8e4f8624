"""Slack as a notify channel: post an interrupt's message with its options as Block Kit buttons
(the official `slack_sdk`), and turn a click on one of them into a resume.

A notify entry `{slack: {channel, bot_token, signing_secret, users?}}` names its secrets by
reference (`env:` or `secretsmanager:`, checked by `aws.secretrefs`); a literal secret is refused
where it is declared. Each button's `value` is sealed under the deployment's key and carries what
the click needs (tenant, session, interrupt, the option's index, the entry): a click is trusted
only when Slack's request signature verifies against the signing secret that sealed entry names,
so neither the button nor the signature can be forged alone. The option's value is read from the
stored interrupt at click time, so a button stays small whatever the option holds. The Web API's
base URL is `HOLDPOINT_SLACK_API_URL` (Slack's own by default), so tests point the real client at
a fake. The notifier installs the channel as `notify.slack` (`outbound.channels`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any
from urllib.parse import parse_qs

from botocore.exceptions import ClientError
from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier

from holdpoint.aws import secretrefs
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import error_param
from holdpoint.core.notify import declared_options
from holdpoint.core.protocol import Wire
from holdpoint.core.state import Interrupt
from holdpoint.ports import DeliveryFailed, Sealer

logger = logging.getLogger(__name__)

API_URL_ENV = "HOLDPOINT_SLACK_API_URL"
DEFAULT_API_URL = "https://slack.com/api/"
SEAL_PURPOSE = "slack-action"
ACTION_PREFIX = "holdpoint:"
MAX_TEXT = 3000  # Block Kit's limit of a section's text
MAX_DECLARATION_CHARS = 1200
"""A declaration travels sealed in every button's value, which Slack caps at 2,000 characters."""
DEFAULT_OPTIONS: list[dict[str, Any]] = [{"label": "Approve", "value": "approve"}, {"label": "Deny", "value": "deny"}]
"""The buttons of an interrupt whose payload names no `metadata.options`."""

SlackId = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9._-]+$")]
Subject = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class SlackConfig(Wire):
    """`{channel, bot_token, signing_secret, users?}`: where to post, and how to trust a click."""

    channel: Annotated[str, StringConstraints(min_length=1, max_length=80, pattern=r"^[#A-Za-z0-9._-]+$")]
    bot_token: str = Field(description="`env:NAME` or `secretsmanager:NAME` of the bot's xoxb- token")
    signing_secret: str = Field(description="`env:NAME` or `secretsmanager:NAME` of the app's signing secret")
    users: Annotated[dict[SlackId, Subject], Field(max_length=100)] | None = Field(
        default=None, description="Slack user id -> the subject whose approver rights a click uses; "
        "when given, a click by anyone else is refused")

    @field_validator("bot_token", "signing_secret")
    @classmethod
    def _reference(cls, value: str) -> str:
        if not isinstance(value, str) or not value.startswith(("env:", "secretsmanager:")):
            raise ValueError("must be `env:NAME` or `secretsmanager:NAME`, never the secret itself")
        return value

    @model_validator(mode="after")
    def _fits_a_button(self) -> SlackConfig:
        if len(json.dumps(self.model_dump(exclude_none=True), separators=(",", ":"))) > MAX_DECLARATION_CHARS:
            raise ValueError(f"the Slack declaration is over {MAX_DECLARATION_CHARS} characters as JSON "
                             "(it is sealed into every button); map fewer users")
        return self


class SlackNotify(Wire):
    """The Slack part of a notify entry `{slack: {...}, events?}` (`core.protocol.SlackEntry`)."""

    slack: SlackConfig

    def check(self, tenant: str) -> None:
        """The tenant-scoped reference rules (secretrefs), as a 400 naming the field."""
        for field in ("bot_token", "signing_secret"):
            why = secretrefs.check(getattr(self.slack, field), tenant, f"slack.{field}")
            if why:
                raise Refusal("validation_error", why, f"slack.{field}")


@dataclass(frozen=True)
class Click:
    """A verified click: who clicked which option, on which message."""

    tenant: str
    session_id: str
    interrupt_id: str
    option: int
    user: str
    subject: str
    channel: str
    ts: str
    config: SlackConfig
    value: Any = None
    label: str = ""
    text: str = ""

    def choosing(self, payload: Any) -> Click:
        """The click with its option's label and value and the message, from the interrupt's
        payload as stored (not from the interaction, whose copy Slack has escaped)."""
        options = options_of(payload)
        if not 0 <= self.option < len(options):
            raise Refusal("conflict", "the interrupt's options changed since this message was posted",
                          "payload.actions")
        return replace(self, value=options[self.option]["value"], label=options[self.option]["label"],
                       text=message_of({"payload": payload, "reason": "interrupt"}))

    def resume_payload(self) -> dict[str, Any]:
        """The shape the upstream approval example reads."""
        return {"status": "resolved", "payload": self.value, "responder": {"user": self.user}}


def options_of(payload: Any) -> list[dict[str, Any]]:
    """`payload.metadata.options` as `{label, value}` (a bare option is both), or Approve/Deny."""
    return declared_options(payload) or DEFAULT_OPTIONS


def message_of(interrupt: Mapping[str, Any]) -> str:
    payload = interrupt.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return str(payload["message"])[:MAX_TEXT]
    return f"Holdpoint needs an answer: {interrupt.get('reason', 'interrupt')}"[:MAX_TEXT]


ReadInterrupt = Callable[[str, str, str], Interrupt | None]
"""`SessionStore.read_interrupt`: the interrupt as stored, with its whole payload."""


class SlackChannel:
    """The `notify.slack` channel (`ports.NotifyChannel`): an `interrupt.raised` notification
    becomes a message with the interrupt's options as buttons."""

    def __init__(self, sealer: Sealer, read_interrupt: ReadInterrupt | None = None,
                 client: Callable[[str], WebClient] | None = None) -> None:
        self.sealer = sealer
        self.read_interrupt = read_interrupt
        self.client = client or web_client

    def deliver(self, event: dict[str, Any], entry: dict[str, Any], links: dict[str, str]) -> None:
        """Post a raised interrupt that is still open (a notification carries only a summary of
        the payload, so the interrupt is read as stored); other events post nothing. Anything
        that keeps the post from Slack raises `DeliveryFailed`, to be retried."""
        if event.get("type") != "interrupt.raised" or self.read_interrupt is None:
            return
        try:
            config = SlackNotify.model_validate({"slack": entry.get("slack")}).slack
            found = self.read_interrupt(str(event["tenant"]), str(event["session_id"]), str(event["interrupt_id"]))
            if found is None or found.status != "open":
                return
            self.post(str(event["tenant"]), str(event["session_id"]), found.view(), config, links)
        except (ValueError, secretrefs.SecretRefError, SlackApiError, SlackClientError, ClientError,
                OSError) as exc:
            raise DeliveryFailed(f"slack: {str(exc)[:300]}") from exc

    def post(self, tenant: str, session_id: str, interrupt: Mapping[str, Any], config: SlackConfig,
             links: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Post `interrupt` (its view) to the declared channel; Slack's `{channel, ts}` of the message."""
        token = secretrefs.resolve(config.bot_token, tenant, "slack.bot_token") or ""
        text = message_of(interrupt)
        buttons = [self._button(i, option, tenant, session_id, interrupt, config)
                   for i, option in enumerate(options_of(interrupt.get("payload")))]
        blocks = [section(text), context(f"{interrupt.get('reason', '')} · session {session_id}", links),
                  {"type": "actions", "block_id": "holdpoint", "elements": buttons}]
        sent = self.client(token).chat_postMessage(channel=config.channel, text=text, blocks=blocks)
        return {"channel": sent["channel"], "ts": sent["ts"]}

    def _button(self, index: int, option: dict[str, Any], tenant: str, session_id: str,
                interrupt: Mapping[str, Any], config: SlackConfig) -> dict[str, Any]:
        sealed = self.sealer.seal(SEAL_PURPOSE, {
            "t": tenant, "s": session_id, "i": interrupt["interrupt_id"], "n": index,
            "e": config.model_dump(exclude_none=True)})
        return {"type": "button", "action_id": f"{ACTION_PREFIX}{index}", "value": sealed,
                "text": {"type": "plain_text", "text": option["label"][:75]}}

    # -- a click --------------------------------------------------------------------------------

    def click(self, body: str, headers: Mapping[str, str]) -> Click:
        """The click an interaction request carries, once its Slack signature verifies; a
        `Refusal` (4xx naming the problem) otherwise, before anything is recorded."""
        payload = interaction_payload(body)
        action = _holdpoint_action(payload)
        sealed = self.sealer.unseal(SEAL_PURPOSE, str(action.get("value", "")))
        if sealed is None:
            raise Refusal("validation_error", "the action is not a Holdpoint button", "payload.actions")
        config = SlackConfig.model_validate(sealed["e"])
        tenant = str(sealed["t"])
        secret = signing_secret(config, tenant)
        lowered = {k.lower(): v for k, v in headers.items()}
        if not SignatureVerifier(secret).is_valid(body, lowered.get("x-slack-request-timestamp"),
                                                  lowered.get("x-slack-signature")):
            raise Refusal("unauthorized", "the Slack request signature is not valid", "x-slack-signature")
        user = str((payload.get("user") or {}).get("id") or "")
        subject = subject_of(config, user)
        container = payload.get("container") or {}
        return Click(tenant=tenant, session_id=str(sealed["s"]), interrupt_id=str(sealed["i"]),
                     option=int(sealed["n"]), user=user, subject=subject,
                     channel=str(container.get("channel_id") or (payload.get("channel") or {}).get("id") or ""),
                     ts=str(container.get("message_ts") or (payload.get("message") or {}).get("ts") or ""),
                     config=config)

    def show_decision(self, click: Click, at: str) -> None:
        """Replace the buttons with who decided what, and when (the label is sent as plain text)."""
        token = secretrefs.resolve(click.config.bot_token, click.tenant, "slack.bot_token") or ""
        decided = f"{click.label} by <@{click.user}> at {at}"
        self.client(token).chat_update(channel=click.channel, ts=click.ts, text=f"{click.text}\n{decided}", blocks=[
            section(click.text),
            {"type": "context", "elements": [{"type": "plain_text", "text": click.label[:75], "emoji": False},
                                             {"type": "mrkdwn", "text": f"by <@{click.user}> at {at}"}]}])


def check_declaration(slack: Any, tenant: str, field: str) -> None:
    """A declared `{slack: {...}}` entry, at `field` (`notify[0]`): a 400 naming the first field
    at fault, a literal secret or another tenant's among them; nothing is recorded."""
    try:
        declared = SlackNotify.model_validate({"slack": slack})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Refusal("validation_error", str(first["msg"]).removeprefix("Value error, "),
                      f"{field}.{error_param(tuple(first['loc']))}") from None
    try:
        declared.check(tenant)
    except Refusal as exc:
        raise Refusal("validation_error", exc.message, f"{field}.{exc.param}") from None


def signing_secret(config: SlackConfig, tenant: str) -> str:
    """The signing secret the declaration names; one that cannot be read verifies nothing (401),
    as a click is answered for whoever sends it, never with a 5xx."""
    try:
        return secretrefs.resolve(config.signing_secret, tenant, "slack.signing_secret") or ""
    except (secretrefs.SecretRefError, ClientError):
        logger.warning("slack signing secret unavailable", exc_info=True)
        raise Refusal("unauthorized", "the Slack signing secret this button names is not available",
                      "x-slack-signature") from None


def web_client(token: str) -> WebClient:
    return WebClient(token=token, base_url=os.environ.get(API_URL_ENV) or DEFAULT_API_URL, timeout=10)


def section(text: str) -> dict[str, Any]:
    """The message as plain text: nothing in it is read as Slack markup or a mention."""
    return {"type": "section", "text": {"type": "plain_text", "text": text or " ", "emoji": False}}


def context(text: str, links: Mapping[str, str] | None) -> dict[str, Any]:
    elements: list[dict[str, Any]] = [{"type": "plain_text", "text": text[:MAX_TEXT] or " "}]
    for name, url in (links or {}).items():
        elements.append({"type": "mrkdwn", "text": f"<{url}|{name}>"})
    return {"type": "context", "elements": elements[:10]}


def interaction_payload(body: str) -> dict[str, Any]:
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


def _holdpoint_action(payload: Mapping[str, Any]) -> dict[str, Any]:
    for action in payload.get("actions") or []:
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
