"""Fix 35 to moto 5.2.5's SES v2.

35. **A two-part message keeps both parts.** SES v2 `SendEmail` with `Simple` content sends a
    plain text part and an HTML part; moto kept only one as the message's `body` (the HTML part
    when there is one), so the text part a notification sends could not be read back. The message
    now also keeps its text part as `text` (the `body` is as before), which `/moto-api/data.json`
    lists with the rest (`ses.Message`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any


def _both_parts(original: Callable[[Any], str]) -> Callable[[Any], str]:
    @functools.wraps(original)
    def send_email(self: Any) -> str:
        answer = original(self)
        text = (((json.loads(self.body).get("Content") or {}).get("Simple") or {}).get("Body") or {}).get("Text")
        if isinstance(text, dict):
            message_id = json.loads(answer)["MessageId"]
            for message in reversed(self.sesv2_backend.core_backend.sent_messages):
                if message.id == message_id:
                    message.text = text.get("Data")
                    break
        return answer

    return send_email


def apply() -> None:
    from moto.sesv2.responses import SESV2Response

    SESV2Response.send_email = _both_parts(SESV2Response.send_email)  # type: ignore[method-assign,assignment]
