"""One agent notified everywhere (an EventBridge rule's SQS target, a signed webhook, Slack through
the real `slack_sdk` against the local fake), and each of four parked interrupts resolved from a
different channel in turn: a Slack click, a signed link, the inbox page in headless Chromium, the
`holdpoint` command. Each interrupt arrives exactly once on each notification channel and each
resolution delivers exactly one `interrupt.resumed` and updates the interrupt's Slack message (S1)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, expect

from holdpoint_sdk import cli
from holdpoint_sdk.client import Client
from tests.e2e.test_inbox_page import WAIT_MS, card, open_inbox
from tests.e2e.test_notify_e2e import SECRET_REF, BusWatch, Receiver
from tests.e2e.test_slack_e2e import OPTIONS, SIGNING, blocks, click, entry, slack_stack, updated
from tests.slack_fake import SlackFake, click_body, sign
from tests.stack import Api, resumed_triggers, seed_worker, wait_execution, worker_answering
from tests.waiting import wait_for

EVENTS = ["interrupt.raised", "interrupt.resolved"]


@pytest.fixture
def stack(local_stack_factory: Callable[..., Any], worker: Any, slack_fake: SlackFake) -> Any:
    return slack_stack(local_stack_factory, slack_fake)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


@pytest.fixture
def everywhere(api: Api, stack: Any, receiver: Receiver) -> Iterator[list[dict[str, Any]]]:
    """The seed worker asking with options; its agent notifies the webhook and Slack (where the
    Slack user U0ALICE is the subject alice). Yields the requests the worker saw."""

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        out = seed_worker.decide(trigger, proposed)  # an option's value reaches it as any answer does
        for action in (out or {}).get("actions", []):
            if action["type"] == "interrupt":
                action["payload"]["metadata"] = {"options": OPTIONS}
        return out

    notify = [{"url": receiver.url, "secret": SECRET_REF, "events": EVENTS}, entry(stack, users={"U0ALICE": "alice"})]
    with worker_answering(api, answer, notify=notify) as seen:
        yield seen


def parked(api: Api, stack: Any) -> tuple[str, str]:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")
    return sid, interrupt["interrupt_id"]


def arrivals(bus: BusWatch, receiver: Receiver, slack: SlackFake, sid: str) -> dict[str, list[Any]]:
    """What each notification channel received about session `sid`'s raised interrupt."""
    return {
        "bus": [e for e in bus.of("interrupt.raised") if e["detail"]["session_id"] == sid],
        "webhook": [h for h in receiver.of("interrupt.raised") if h["body"]["session_id"] == sid],
        "slack": [(ts, m) for ts, m in list(slack.posts) if sid in json.dumps(m["blocks"])],
    }


def by_slack(stack: Any, got: dict[str, list[Any]], *_: Any) -> None:
    [(ts, message)] = got["slack"]
    body = click_body(message, ts, 0, user="U0ALICE")
    assert click(stack, body, sign(SIGNING, body)).json()["noop"] is False


def by_link(stack: Any, got: dict[str, list[Any]], *_: Any) -> None:
    [hook] = got["webhook"]
    assert set(hook["body"]["links"]) == {"option-0", "option-1"}  # one link per declared option
    link = hook["body"]["links"]["option-0"]
    page = requests.get(link, timeout=30)  # the confirmation page: reads only
    assert page.status_code == 200 and "Send it" in page.text
    assert requests.post(link, data={"confirm": "option-0"}, timeout=30).status_code == 200


def by_page(stack: Any, got: dict[str, list[Any]], browser: Browser, iid: str, _: str) -> None:
    errors: list[str] = []
    tab = open_inbox(browser, stack, stack.api_key, errors)
    item = card(tab, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    item.locator("button.option", has_text="Send it").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    tab.context.close()
    assert errors == [], errors


def by_cli(stack: Any, got: dict[str, list[Any]], browser: Browser, iid: str, sid: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["approve", sid, iid], client=Client(stack.base_url, stack.api_key), stdout=out, stderr=err)
    assert (code, err.getvalue()) == (0, ""), err.getvalue()


CHANNELS: list[tuple[str, Callable[..., None]]] = [
    ("slack", by_slack), ("link", by_link), ("page", by_page), ("cli", by_cli)]


def test_every_channel_is_told_once_and_each_one_resolves_an_interrupt(
        api: Api, stack: Any, receiver: Receiver, slack_fake: SlackFake,
        everywhere: list[dict[str, Any]], browser: Browser) -> None:
    bus = BusWatch(stack)
    for name, resolve in CHANNELS:
        sid, iid = parked(api, stack)
        got = wait_for(lambda sid=sid: (lambda a: a if all(a.values()) else None)(arrivals(bus, receiver,
                                                                                            slack_fake, sid)),
                       f"the interrupt raised for the {name} channel on the bus, the webhook and Slack")
        assert {k: len(v) for k, v in got.items()} == {"bus": 1, "webhook": 1, "slack": 1}, name
        resolve(stack, got, browser, iid, sid)
        view = api.wait_status(sid, "done")
        assert view["messages"][2]["content"] == "sent", name
        wait_execution(stack, sid, iid, "SUCCEEDED")
        assert len(resumed_triggers(everywhere, sid)) == 1, name
        # The resolved event is published after the raised one: once it is in, no late duplicate can come.
        wait_for(lambda sid=sid: [e for e in bus.of("interrupt.resolved") if e["detail"]["session_id"] == sid]
                 or None, f"the {name} resolution on the bus")
        assert {k: len(v) for k, v in arrivals(bus, receiver, slack_fake, sid).items()} == {
            "bus": 1, "webhook": 1, "slack": 1}, name
        # S1: wherever it was decided, the Slack message says so and keeps no buttons.
        [(ts, _)] = got["slack"]
        update = wait_for(lambda ts=ts: updated(slack_fake, ts), f"the Slack message updated after the {name} "
                          "resolution", describe=lambda: slack_fake.calls)[-1]
        assert "\nSend it by " in update["text"] and "actions" not in [b["type"] for b in blocks(update)], name
