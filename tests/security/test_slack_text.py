"""Slack's notification text is escaped (issue: close the holes, item 4). A question of
`<!channel> <https://evil.example/login|Open the Holdpoint inbox> & more` once went raw into
`chat.postMessage`'s top-level `text` (the push notification and every client that reads it) and
into the decided message's fallback, so it pinged the channel with a disguised link. Now no `<`,
`>` or `&` of the payload reaches any field Slack reads as markup: `text` is escaped, and the
blocks carry a person's text as `plain_text` only (never read as markup, PROTOCOL.md §5.7).

The real `slack_sdk` client posts to the local fake, through the notifier; the click goes through
the channels function's handler."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.notify.slack_blocks import escape
from tests.harness import Harness
from tests.security.test_sealed_values import OPS, click, fake, post
from tests.slack_fake import SlackFake, click_body, sign
from tests.unit.test_slack import SIGNING

__all__ = ["fake"]
pytestmark = pytest.mark.usefixtures("aws")

EVIL = "<!channel> <https://evil.example/login|Open the Holdpoint inbox> & <@U0BOSS> now"
RAW = ("<!channel>", "<https://evil", "inbox>", "<@U0BOSS>", "& <")
"""The payload's own `<`, `>` and `&`, as they would be read as markup (escaped, none is left)."""


def asking(message: str) -> Any:
    def decide(req: dict[str, Any]) -> dict[str, Any]:
        if req["trigger"]["type"] == "tool.execute":
            return {"actions": [{"type": "interrupt", "reason": "<!here>", "payload": {"message": message}}]}
        if req["trigger"]["type"] == "interrupt.resumed":
            return {"actions": [{"type": "tool.result", "result": "done"}]}
        return dict(req["proposed"])

    return decide


def markup_fields(args: dict[str, Any]) -> list[str]:
    """What Slack reads as markup in a request: its `text`, and every `mrkdwn` element's text."""
    out = [str(args.get("text") or "")]
    for block in args.get("blocks") or []:
        for part in [block.get("text"), *(block.get("elements") or [])]:
            if isinstance(part, dict) and part.get("type") == "mrkdwn":
                out.append(str(part.get("text") or ""))
    return out


def test_slack_no_markup_of_the_payload_reaches_a_post_or_an_update(fake: SlackFake) -> None:
    h = Harness(asking(EVIL), agent={"notify": [OPS]})
    h.say("Email Bob")
    ts, message = post(h, fake)
    [(_, _, sent)] = [c for c in fake.calls if c[0] == "chat.postMessage"]
    assert sent["text"] == escape(EVIL)
    for field in markup_fields(sent):
        assert not any(raw in field for raw in RAW), field
    plain = [b["text"] for b in sent["blocks"] if b["type"] == "section"]
    assert all(text["type"] == "plain_text" for text in plain)  # the question itself: plain text only
    body = click_body(message, ts, 0, user="U1")
    status, _ = click(body, sign(SIGNING, body))
    assert status == 200
    [update] = [args for method, _, args in fake.calls if method == "chat.update"]
    for field in markup_fields(update):
        assert not any(raw in field for raw in RAW), field
    assert update["text"].startswith(escape(EVIL))
