"""What a tenant declares for email (`notify: [{email: {to: [...]}, events?, approver?}]`): the
recipients, checked where the agent is declared (a 400 naming the field, nothing recorded) and
again when a message is sent, since a worker may replace the config in force.

An address is the plain `local@domain` form only (no display name, no quoting, no comments), so
nothing declared can carry a header, a second recipient or a line break into the message."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints, ValidationError, field_validator

from holdpoint.core.errors import Refusal
from holdpoint.core.ids import error_param
from holdpoint.core.protocols import Wire

MAX_RECIPIENTS = 10
"""Recipients one entry sends to (SES takes 50 a message); a larger team is a list address."""
ADDRESS = (r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}"
           r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
"""`local@domain.tld`: printable local part, dotted host labels; nothing that reads as a header."""

Address = Annotated[str, StringConstraints(max_length=254, pattern=ADDRESS)]


class MailConfig(Wire):
    """`{to: [...]}`: who gets the message. The links in it are minted for the entry's `approver`."""

    to: Annotated[list[Address], Field(min_length=1, max_length=MAX_RECIPIENTS)] = Field(
        description="the recipients' addresses, `local@domain`")

    @field_validator("to")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        lowered = [a.lower() for a in value]
        if len(set(lowered)) != len(lowered):
            raise ValueError("an address is listed twice; list each recipient once")
        return value


def parsed(email: Any) -> MailConfig:
    """The declared `email` object, or pydantic's `ValidationError`."""
    return MailConfig.model_validate(email)


def check_declaration(email: Any, field: str) -> None:
    """A declared `{email: {...}}` entry, at `field` (`notify[0]`): a 400 naming the first field at
    fault (`notify[0].email.to[1]`); nothing is recorded."""
    try:
        parsed(email)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "string_pattern_mismatch":
            message = "must be an email address `local@domain.tld`, with no name, quotes or line breaks"
        raise Refusal("validation_error", message, f"{field}.email.{error_param(tuple(first['loc']))}") from None
