"""The inbox page's multi-select answer in a real headless Chromium against the local stack: cards
selected with their checkbox or the `x` key, answered together in one bulk request, each bound to
the action its card shows; the answered cards leave and their branches wake, and a card whose
action is no longer the one shown stays with its refusal, the others unaffected."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.test_inbox_page import WAIT_MS, card, history_row, page, parked  # noqa: F401 - the fixture
from tests.stack import Api, resumed_triggers


def test_bulk_inbox_page_approves_the_selected_cards_together(page: Page, api: Api, stack: Any,  # noqa: F811
                                                              worker: Any) -> None:
    rows = [parked(api, stack) for _ in range(3)]
    for _, iid in rows:
        expect(card(page, iid)).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#bulk-approve")).to_be_disabled()
    card(page, rows[0][1]).locator("input.select").check()
    card(page, rows[1][1]).focus()
    page.keyboard.press("x")  # the keyboard's select
    expect(page.locator("#bulk-count")).to_have_text("2 selected")
    page.fill("#bulk-comment", "all fine")
    page.click("#bulk-approve")
    expect(page.locator("#status")).to_have_text("Approved 2 of 2.", timeout=WAIT_MS)
    for sid, iid in rows[:2]:
        expect(card(page, iid)).to_have_count(0)
        assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
        assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]
    expect(card(page, rows[2][1])).to_be_visible()  # not selected: untouched
    assert api.view(rows[2][0])["status"] == "interrupted"
    row = history_row(page, rows[0][1])
    expect(row.locator("td.comment")).to_have_text("all fine", timeout=WAIT_MS)


def test_bulk_inbox_page_keeps_a_refused_card_with_its_reason(page: Page, api: Api, stack: Any,  # noqa: F811
                                                              worker: Any) -> None:
    rows = [parked(api, stack) for _ in range(2)]
    for _, iid in rows:
        expect(card(page, iid)).to_be_visible(timeout=WAIT_MS)
    page.click("#bulk-select-all")
    expect(page.locator("#bulk-count")).to_have_text("2 selected")
    # The action the first card shows is no longer the interrupt's (as if it changed since): A3.
    card(page, rows[0][1]).evaluate("node => { node.dataset.fingerprint = 'sha256:' + '0'.repeat(64); }")
    page.click("#bulk-deny")
    expect(page.locator("#status")).to_have_text("Denied 1 of 2; 1 refused: see its card.", timeout=WAIT_MS)
    refused = card(page, rows[0][1])
    expect(refused.locator("form.answer .error")).to_contain_text("stale_approval")
    expect(refused.locator("input.select")).not_to_be_checked()
    expect(card(page, rows[1][1])).to_have_count(0)
    assert api.wait_status(rows[1][0], "done")["messages"][-1]["content"] == "I did not send it."
    assert api.view(rows[0][0])["status"] == "interrupted"
