"""The notify channels installed, by the kind `core.notify.channel_of` names an entry: where a new
channel plugs in (it implements `ports.NotifyChannel`: `deliver(event, entry, links)`, raising
`DeliveryFailed` to be retried).

Outside this package a channel is had from here, never from its own module: the assembly installs
them and builds Slack's for its clicks, an agent's declaration is checked with `check_declaration`
(Slack's) and `check_email`,
and a delivery elsewhere (a run's url target) sends the webhook's header and timeout. Slack's SDK
and its declaration's models load only when one is built or checked."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from holdpoint.notify.webhooks import DELIVERY_HEADER as DELIVERY_HEADER
from holdpoint.notify.webhooks import TIMEOUT_SECS as TIMEOUT_SECS
from holdpoint.notify.webhooks import A2aPushChannel, PushTarget, WebhookChannel
from holdpoint.ports import Interrupts, NotifyChannel, PostedMessages

if TYPE_CHECKING:  # the type the assembly's `get_slack` is (a click's check and update are Slack's own)
    from holdpoint.notify.slack import SlackChannel as SlackChannel


def installed(store: Interrupts | None = None, messages: PostedMessages | None = None) -> dict[str, NotifyChannel]:
    """Every channel the notifier delivers to; an entry of a kind not listed here is skipped.
    Slack reads the raised interrupt from `store` (a notification carries only a summary) and
    keeps the messages it posts in `messages`, to update them when the interrupt closes."""
    return {"notify.webhook": WebhookChannel(), "notify.slack": slack(store, messages), "notify.email": email()}


def email() -> NotifyChannel:
    """Email through SES v2 from the deployment's sender identity; the SES client is built on the
    first message, so a container that sends none never builds it."""
    from holdpoint.aws import mail
    from holdpoint.notify.mail import MailChannel

    return MailChannel(functools.cache(mail.SesMailer), mail.sender)


def slack(store: Interrupts | None = None, messages: PostedMessages | None = None) -> SlackChannel:
    """Slack's channel, its buttons sealed under the deployment's key (a click's own update, which
    reads nothing back and posts nothing new, needs neither `store` nor `messages`)."""
    from holdpoint.aws import signing
    from holdpoint.notify.slack import SlackChannel

    return SlackChannel(signing, store.read_interrupt if store is not None else None, messages=messages)


def a2a_push(target: PushTarget) -> NotifyChannel:
    """The channel of A2A push configs: the task `target` reads when an attempt runs (the A2A
    bridge's `Pushes.resolve`), POSTed as a signed webhook."""
    return A2aPushChannel(target)


def check_declaration(slack: Any, tenant: str, field: str) -> None:
    """A declared `{slack: {...}}` entry, checked where the agent is declared (`slack_config`)."""
    from holdpoint.notify.slack_config import check_declaration as check

    check(slack, tenant, field)


def check_email(email: Any, field: str) -> None:
    """A declared `{email: {...}}` entry, checked where the agent is declared (`mail_config`)."""
    from holdpoint.notify.mail_config import check_declaration as check

    check(email, field)
