"""The session page (`GET /inbox/session?id=...`, linked from each inbox card) in a real headless
Chromium against the local stack: it follows a session live over the WebSocket API, renders the
committed events once each, shows the growing text of a message from its `delta` frames (a stream
that failed marked stopped, a retry starting the draft again) and
replaces it with the committed message; after the gateway drops its connection it reconnects,
subscribes from its last seq, and still shows every event exactly once. The tokens come from the
engine's own stream (held piece by piece where the test looks); the failed-then-retried stream is
posted by the test the way the engine posts it (`Live.fan_out` before the commit)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from holdpoint.services import live as live_service
from holdpoint.services.live import Live
from tests.e2e.streaming import HeldStream, no_engine_stream
from tests.e2e.test_inbox_page import WAIT_MS, card, open_inbox, parked
from tests.stack import Api

AGAIN = {"type": "client.message", "message": {"role": "user", "content": "say hi again"}}


@pytest.fixture
def session(browser: Browser, stack: Any, api: Api, tmp_path: Path,
            request: pytest.FixtureRequest) -> Iterator[tuple[Page, str]]:
    """A finished session and its page, opened from the inbox's sign-in; no script or CSP errors."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    errors: list[str] = []
    tab = open_inbox(browser, stack, stack.api_key, errors)
    tab.goto(f"{stack.base_url}/inbox/session?id={sid}")
    yield tab, sid
    tab.screenshot(path=str(tmp_path / f"{request.node.name}.png"), full_page=True)
    tab.context.close()
    assert errors == [], errors


def shown_seqs(page: Page) -> list[int]:
    return [int(s) for s in page.locator("li.event code").all_text_contents()]


def logged_seqs(api: Api, sid: str) -> list[int]:
    return [int(e["seq"]) for e in api.events(sid)]


def test_session_page_follows_the_session_live(session: tuple[Page, str], api: Api) -> None:
    page, sid = session
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    expect(page.locator(".turn.assistant .text")).to_have_text(["Hi!"], timeout=WAIT_MS)
    api.ok("POST", f"/v1/sessions/{sid}/inputs", AGAIN)
    api.wait_status(sid, "done")
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    assert shown_seqs(page) == logged_seqs(api, sid)
    expect(page.locator(".turn .text")).to_have_text(["say hi", "Hi!", "say hi again", "Hi!"], timeout=WAIT_MS)


def test_session_page_shows_the_engines_tokens_as_they_stream_then_the_committed_message(
        session: tuple[Page, str], api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: tokens stream to a browser page. The engine streams the scripted reply ("Hi!") in
    two pieces; the page shows the first alone before the second is even generated, then the
    whole text, then the committed message in the draft's place."""
    page, sid = session
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    held = HeldStream(monkeypatch, [1])
    api.ok("POST", f"/v1/sessions/{sid}/inputs", AGAIN)
    draft = page.locator(".turn.draft .text")
    expect(draft).to_have_text("H", timeout=WAIT_MS)
    assert held.pieces == ["H"]  # the rest is not generated yet: what the page shows came streamed
    held.release(0)
    expect(page.locator(".turn.assistant .text")).to_have_text(["Hi!", "Hi!"], timeout=WAIT_MS)
    expect(page.locator(".turn.draft")).to_have_count(0, timeout=WAIT_MS)
    api.wait_status(sid, "done")
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    assert shown_seqs(page) == logged_seqs(api, sid)


def test_session_page_shows_the_growing_text_then_the_committed_message(
        session: tuple[Page, str], api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    page, sid = session
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    no_engine_stream(monkeypatch)
    steps = [threading.Event() for _ in range(3)]
    real = Live.publish

    def streaming(self: Live, state: Any) -> None:
        """A failed attempt's stream, then the retry's deltas, each held until the page shows it,
        then the commit."""
        added = [e for e in state.events if e.type == "message.added" and e.data.get("call_id")]
        if state.header.session_id == sid and added and not steps[0].is_set():
            call, h = str(added[0].data["call_id"]), state.header

            def post(**frame: Any) -> None:
                self.fan_out(h.tenant, sid, [{"session_id": sid, "call_id": call, **frame}])

            post(type="delta", index=0, text="Oops")
            post(type="delta_end", reason="failed")
            steps[0].wait(30)
            for index, text in enumerate(["H", "i!"]):
                post(type="delta", index=index, text=text)
                steps[index + 1].wait(30)
            post(type="delta_end", reason="finished")
        real(self, state)

    monkeypatch.setattr(Live, "publish", streaming)
    api.ok("POST", f"/v1/sessions/{sid}/inputs", AGAIN)
    draft = page.locator(".turn.draft .text")
    expect(page.locator(".turn.draft.stopped .text")).to_have_text("Oops", timeout=WAIT_MS)
    steps[0].set()
    expect(draft).to_have_text("H", timeout=WAIT_MS)
    expect(page.locator(".turn.draft.stopped")).to_have_count(0)
    steps[1].set()
    expect(draft).to_have_text("Hi!", timeout=WAIT_MS)
    steps[2].set()
    expect(page.locator(".turn.draft")).to_have_count(0, timeout=WAIT_MS)
    expect(page.locator(".turn.assistant .text")).to_have_text(["Hi!", "Hi!"], timeout=WAIT_MS)
    api.wait_status(sid, "done")
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)


def test_session_page_reconnects_and_shows_every_event_exactly_once(session: tuple[Page, str], api: Api,
                                                                    stack: Any) -> None:
    page, sid = session
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    for connection_id in list(stack.live.connections):  # the gateway drops the page's connection
        stack.live.close(connection_id)
    api.ok("POST", f"/v1/sessions/{sid}/inputs", AGAIN)  # committed while the page reconnects
    expect(page.locator("body")).to_have_attribute("data-reconnects", "1", timeout=WAIT_MS)
    expect(page.locator("#live")).to_have_text("live (reconnected 1×)", timeout=WAIT_MS)
    api.wait_status(sid, "done")
    api.ok("POST", f"/v1/sessions/{sid}/inputs", AGAIN)  # and one followed on the new connection
    api.wait_status(sid, "done")
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    assert shown_seqs(page) == logged_seqs(api, sid)
    expect(page.locator(".turn.assistant .text")).to_have_text(["Hi!", "Hi!", "Hi!"], timeout=WAIT_MS)


def test_session_page_pages_through_the_log_on_has_more(session: tuple[Page, str], api: Api,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One subscribe sends one page of the log; the page subscribes again from its last seq."""
    page, sid = session
    monkeypatch.setattr(live_service, "MAX_CATCH_UP", 2)
    page.reload()  # a fresh catch-up, two events a page
    expect(page.locator("#live")).to_have_text("live", timeout=WAIT_MS)
    expect(page.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    assert shown_seqs(page) == logged_seqs(api, sid)
    expect(page.locator(".turn.assistant .text")).to_have_text(["Hi!"], timeout=WAIT_MS)


def test_session_page_is_linked_from_the_inbox_card(browser: Browser, stack: Any, api: Api) -> None:
    sid, iid = parked(api, stack)
    errors: list[str] = []
    tab = open_inbox(browser, stack, stack.api_key, errors)
    link = card(tab, iid).locator("a.follow")
    expect(link).to_have_attribute("href", f"/inbox/session?id={sid}", timeout=WAIT_MS)
    link.click()
    expect(tab.locator("#session-id")).to_have_text(sid, timeout=WAIT_MS)
    expect(tab.locator("li.event")).to_have_count(len(logged_seqs(api, sid)), timeout=WAIT_MS)
    expect(tab.locator(".turn.assistant .text")).to_contain_text(["send_email"], timeout=WAIT_MS)
    tab.context.close()
    assert errors == [], errors
