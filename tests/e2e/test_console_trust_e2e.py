"""A console that shows only what the person may do, what is stuck and what they approve (issue: the
answer's meaning, items 4-6), in a real headless Chromium against the local stack:

- a caller the policy refuses, and an approver who has answered (after a reload), get a read-only
  card saying why and who it waits for, never buttons that could only be refused;
- a card says what its expiry will answer ("denies at ..."), and the tab's title counts open cards;
- a session whose worker refuses the resume's delivery is in "Needs attention" with the reason, the
  worker's URL and what to do, and the history says "Approved, waiting to be delivered" until the
  worker takes it;
- the question's Markdown is rendered as a safe subset on the card, the session page and the link
  page (https links only, rel noopener; raw HTML stays text), and the link page shows the tool and
  its arguments;
- the CSV export writes no live formula.

Screenshots go to `.artifacts/console/`; `docs/inbox.png` is the one of the read-only card."""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_console_page import FlakyResume, Open, console, flaky_worker, shot
from tests.e2e.test_inbox_page import WAIT_MS, card, history_row, parked
from tests.e2e.test_notify_e2e import SECRET_REF, Receiver
from tests.stack import Api, declare_agent
from tests.waiting import wait_for

__all__ = ["console", "flaky_worker"]

QUORUM = {"subjects": ["ann", "bob", "cid"], "quorum": 2}
HOSTILE = ("**Refund** $40 to bob: see [the policy](https://policy.example/refunds) and "
           "[this](javascript:alert(1)) <img src=x onerror=alert(1)>\n\n- first *item*\n- `code`")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


def test_console_a_card_is_read_only_for_a_caller_the_policy_refuses_and_after_answering(
        console: Open, api: Api, stack: Any, worker: Any) -> None:
    declare_agent(api, worker[0], approval=QUORUM)
    eve, ann = approver(stack, "eve"), approver(stack, "ann")
    sid, iid = parked(api, stack)
    page = console(eve.http.headers["Authorization"].removeprefix("Bearer "))
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator(".readonly")).to_have_text(
        "You cannot answer this: eve is not one of the policy's approvers (subjects or groups). "
        "Waiting for 2 more approvals from ann or bob or cid.")
    expect(item.locator("button")).to_have_count(0)
    expect(item).to_have_attribute("data-readonly", "true")
    shot(page, "readonly-card")  # docs/inbox.png is this screenshot
    assert ann.resume(sid, iid, {"approved": True}).json()["status"] == "open"
    mine = console(ann.http.headers["Authorization"].removeprefix("Bearer "))
    answered = card(mine, iid)
    expect(answered.locator(".readonly")).to_have_text(
        re.compile(r"^You answered \(approved\) at .+\. Waiting for bob or cid\.$"), timeout=WAIT_MS)
    expect(answered.locator("button.approve")).to_have_count(0)
    shot(mine, "readonly-answered")


def test_console_a_card_says_what_its_expiry_answers_and_the_title_counts_open_cards(
        console: Open, api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    raised = [api.ok("POST", f"/v1/sessions/{sid}/interrupts", {
        "reason": "release", "expires_in": 3600, "on_expiry": outcome, "payload": {"message": f"Ship {outcome}?"},
        "interrupt_id": f"int-{outcome}"})["interrupt_id"] for outcome in ("deny", "approve")]
    page = console()
    expect(card(page, raised[0]).locator(".countdown")).to_have_text(re.compile(r"^denies at .+ \(in \d+m"),
                                                                     timeout=WAIT_MS)
    expect(card(page, raised[1]).locator(".countdown")).to_have_text(re.compile(r"^approves at "))
    expect(page).to_have_title("(2) Holdpoint inbox")
    card(page, raised[0]).locator("button.deny").click()
    expect(page).to_have_title("(1) Holdpoint inbox", timeout=WAIT_MS)
    shot(page, "expiry-outcome")


def test_console_needs_attention_and_an_approval_waiting_to_be_delivered(
        console: Open, api: Api, stack: Any, flaky_worker: type[FlakyResume]) -> None:
    sid, iid = parked(api, stack)
    assert api.resume(sid, iid, {"approved": True}).status_code == 200
    assert flaky_worker.failed.wait(30)
    page = console()
    lane = page.locator(f"#attention li.stuck[data-session-id='{sid}']")
    expect(lane).to_be_visible(timeout=WAIT_MS)
    expect(lane.locator(".reason")).to_contain_text("503")
    expect(lane.locator(".worker code")).to_have_text(re.compile(r"^http://127\.0\.0\.1:\d+/$"))
    expect(lane.locator(".what-to-do")).to_have_text(
        "What to do: the worker answered with a server error: see its logs")
    shot(page, "needs-attention")
    row = history_row(page, iid)
    expect(row.locator("td.answer-cell")).to_have_text("Approved, waiting to be delivered", timeout=WAIT_MS)
    flaky_worker.release.set()
    api.wait_status(sid, "done")
    page.click("#tab-open")
    expect(page.locator("#attention")).to_be_hidden(timeout=WAIT_MS)
    expect(history_row(page, iid).locator("td.answer-cell")).to_have_text("Approved", timeout=WAIT_MS)


def test_console_markdown_is_a_safe_subset_on_the_card_the_session_page_and_the_link_page(
        console: Open, api: Api, stack: Any, worker: Any, receiver: Receiver) -> None:
    declare_agent(api, worker[0], notify=[{"url": receiver.url, "secret": SECRET_REF, "events": ["interrupt.raised"]}])
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    iid = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "refund",
                                                            "payload": {"message": HOSTILE}})["interrupt_id"]
    page = console()
    item = card(page, iid)
    expect(item.locator(".message strong")).to_have_text("Refund", timeout=WAIT_MS)
    link = item.locator(".message a")
    expect(link).to_have_count(1)
    expect(link).to_have_attribute("href", "https://policy.example/refunds")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(item.locator(".message")).to_contain_text("<img src=x onerror=alert(1)>")  # as text
    expect(item.locator(".question-more li")).to_have_text(["first item", "code"])
    assert item.locator("img").count() == 0 and "javascript:" not in item.inner_html()
    shot(page, "markdown-card")
    page.goto(f"{stack.base_url}/inbox/session?id={sid}")
    banner = page.locator(f".banner[data-interrupt-id='{iid}']")
    expect(banner.locator(".question strong")).to_have_text("Refund", timeout=WAIT_MS)
    assert banner.locator("img").count() == 0 and "javascript:" not in banner.inner_html()
    raised = wait_for(lambda: [h for h in receiver.of("interrupt.raised") if h["body"]["interrupt_id"] == iid],
                      "the webhook's interrupt.raised")
    link_page = page.context.new_page()
    link_page.goto(raised[0]["body"]["links"]["approve"])
    expect(link_page.locator(".question strong")).to_have_text("Refund")
    expect(link_page.locator(".question a")).to_have_attribute("rel", "noopener noreferrer")
    assert link_page.locator("img").count() == 0 and "javascript:" not in link_page.content()
    shot(link_page, "markdown-link-page")


def test_console_the_link_page_shows_the_tool_and_its_arguments(
        console: Open, api: Api, stack: Any, worker: Any, receiver: Receiver) -> None:
    declare_agent(api, worker[0], notify=[{"url": receiver.url, "secret": SECRET_REF, "events": ["interrupt.raised"]}])
    sid, iid = parked(api, stack)
    raised = wait_for(lambda: [h for h in receiver.of("interrupt.raised") if h["body"]["session_id"] == sid],
                      "the webhook's interrupt.raised")
    body = raised[0]["body"]
    fingerprint = api.view(sid)["interrupts"][0]["action"]["fingerprint"]
    assert body["action"]["tool"] == "send_email" and body["action"]["fingerprint"] == fingerprint  # the webhook too
    page = console()
    link_page = page.context.new_page()
    link_page.goto(body["links"]["deny"])
    expect(link_page.locator("h2 code")).to_have_text("send_email")
    expect(link_page.locator("dl dt")).to_have_text(["to"])
    expect(link_page.locator("dl dd")).to_have_text(["bob"])
    expect(link_page.locator("body")).to_contain_text(fingerprint)
    expect(link_page.locator(".question")).to_have_text("Send the email?")
    shot(link_page, "link-page")
    link_page.click("button[type=submit]")
    expect(link_page.locator("body")).to_contain_text("your answer is recorded")
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "I did not send it."


def test_console_csv_export_writes_no_live_formula(console: Open, api: Api, stack: Any, tmp_path: Path) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    evil = ["=HYPERLINK(\"https://evil.example\",\"x\")", "=cmd|' /C calc'!A0", "@SUM(A1:A2)", "+1+1", "-2+3",
            "\tTAB", "\rCR"]
    for i, text in enumerate(evil):
        iid = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "r", "interrupt_id": f"int-csv-{i}",
                                                                "payload": {"message": text}})["interrupt_id"]
        assert api.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                       {"payload": {"approved": True}, "comment": text}).status_code == 200
    page = console()
    page.click("#tab-history")
    expect(page.locator("tr.decision")).to_have_count(len(evil), timeout=WAIT_MS)
    with page.expect_download() as got:
        page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_bytes().decode(), newline="")))
    cells = sorted((r["question"], r["comment"]) for r in rows)
    assert cells == sorted((f"'{text}", f"'{text}") for text in evil)  # every formula lead neutralised
    assert not requests.get(f"{stack.base_url}/favicon.ico", timeout=30).status_code >= 400
