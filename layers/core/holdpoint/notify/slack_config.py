"""What a tenant declares for Slack (`notify: [{slack: {...}}]`): the channel, the secret
references and the user map, checked at declaration (a 400 naming the field, nothing recorded),
apart from the channel that posts with it (`slack.py`), so checking a declaration loads no
slack_sdk."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from holdpoint.aws import secretrefs, signing
from holdpoint.core.errors import Refusal
from holdpoint.core.ids import error_param
from holdpoint.core.protocols import Wire

MAX_DECLARATION_CHARS = 1200
"""A declaration travels sealed in every button's value, which Slack caps at 2,000 characters."""
MAX_BUTTON_VALUE = 2000
"""Slack's limit of a button's value."""
LONGEST_BUTTON = {"s": "s" * 64, "i": "i" * 64, "g": 10**15, "x": 10**10, "n": 99}
"""A button's sealed fields at their longest (ids of 64 characters, `core.ids`), but the tenant's
and the declaration's."""

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
    """The Slack part of a notify entry `{slack: {...}, events?}` (`core.agent_config.SlackEntry`)."""

    slack: SlackConfig

    def check(self, tenant: str) -> None:
        """The tenant-scoped reference rules (secretrefs), as a 400 naming the field."""
        for field in ("bot_token", "signing_secret"):
            why = secretrefs.check(getattr(self.slack, field), tenant, f"slack.{field}")
            if why:
                raise Refusal("validation_error", why, f"slack.{field}")


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
    longest = signing.sealed_length({"t": tenant, **LONGEST_BUTTON, "e": declared.slack.model_dump(exclude_none=True)})
    if longest > MAX_BUTTON_VALUE:
        raise Refusal("validation_error", f"a button of this declaration could be {longest} characters, over "
                      f"Slack's {MAX_BUTTON_VALUE} (it is sealed into every button); map fewer users",
                      f"{field}.slack.users")
