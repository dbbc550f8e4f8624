"""A3's edit before approve on the approver's console (`GET /inbox`), in a real headless Chromium
against the local stack: the editor prefilled with the action's arguments, the diff shown before
anything is sent, a bad edit marked on the editor, and the edited approval restarting a quorum of
two. Every wait is on something the page shows."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, expect

from holdpoint.aws.keys import put_api_key
from tests.e2e.test_inbox_page import WAIT_MS, card, open_inbox, parked
from tests.stack import Api, declare_agent, resumed_triggers

STRICT = [{"name": "send_email", "input": {"type": "object", "properties": {"to": {"type": "string"}},
                                           "required": ["to"], "additionalProperties": False}}]


def test_edit_before_approve_console_shows_the_diff_then_approves_the_edit(
        browser: Browser, api: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    declare_agent(api, worker[0], tools=STRICT, approval={"subjects": ["ann", "bob"], "quorum": 2, "edit": True})
    for subject in ("ann", "bob"):
        put_api_key(stack.env["TABLE_NAME"], f"hp_edit_{subject}", stack.tenant, subject, "operator")
    bob = Api(stack.base_url, "hp_edit_bob")
    sid, iid = parked(api, stack)
    raised = api.view(sid)["interrupts"][0]["action"]
    assert bob.resume(sid, iid, {"approved": True}).json()["approvals"] == 1  # of the version as raised
    errors: list[str] = []
    page = open_inbox(browser, stack, "hp_edit_ann", errors)
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    item.locator("details.edit summary").click()
    editor = item.locator("textarea[name=arguments]")
    assert json.loads(editor.input_value()) == {"to": "bob"}  # prefilled with the action's arguments
    # Not an object: marked on the editor, nothing offered to send.
    editor.fill("[1, 2]")
    item.locator("button.review-edit").click()
    expect(editor).to_have_attribute("aria-invalid", "true")
    expect(item.locator(".arguments-error")).to_have_text("The arguments must be a JSON object.")
    expect(item.locator("button.approve-edited")).to_be_hidden()
    # The change is shown as a diff before it can be approved.
    editor.fill('{"to": "carol"}')
    item.locator("button.review-edit").click()
    expect(item.locator(".diff li.del")).to_have_text(["− to: bob"])
    expect(item.locator(".diff li.ins")).to_have_text(["+ to: carol"])
    page.screenshot(path=str(tmp_path / "edit-diff.png"), full_page=True)
    item.locator("button.approve-edited").click()
    note = item.locator(".mine")
    expect(note).to_contain_text("1 earlier approval(s) no longer count", timeout=WAIT_MS)
    expect(note).to_contain_text("1 of 2 approvals")
    expect(item.locator(".edited")).to_contain_text("Edited by ann", timeout=WAIT_MS)
    expect(item.locator(".arguments dd")).to_have_text(["carol"])
    view = api.view(sid)["interrupts"][0]
    new = view["action"]["fingerprint"]
    assert new != raised["fingerprint"] and view["edits"][0]["by"]["subject"] == "ann"
    assert [a["subject"] for a in view["approvals"]] == ["bob", "ann"]
    # Bob's approval was of the version as raised: he approves the edit to complete the quorum.
    stale = bob.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                    {"payload": {"approved": True}, "expect_fingerprint": raised["fingerprint"]})
    assert stale.status_code == 409 and stale.json()["error"]["fingerprint"] == new
    assert bob.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume",
                   {"payload": {"approved": True}, "expect_fingerprint": new}).json()["noop"] is False
    api.wait_status(sid, "done")
    [resumed] = resumed_triggers(worker[1], sid)
    assert resumed["edit"]["arguments"] == {"to": "carol"} and resumed["edit"]["action"]["fingerprint"] == new
    expect(item).to_have_count(0, timeout=WAIT_MS)
    # The history and its export keep the arguments as raised and who edited them.
    page.click("#tab-history")
    row = page.locator(f"tr.decision[data-interrupt-id='{iid}']")
    expect(row.locator("td.what")).to_contain_text("send_email(to: carol)", timeout=WAIT_MS)
    with page.expect_download() as got:
        page.click("#export-csv")
    [record] = [r for r in csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8")))
                if r["interrupt_id"] == iid]
    assert json.loads(record["arguments"]) == {"to": "carol"}
    assert json.loads(record["original_arguments"]) == {"to": "bob"} and record["edited_by"].startswith("ann ")
    page.context.close()
    assert errors == [], errors
