"""The approver's console (issue 32: "an approval console people would choose over Agent Inbox")
in a real headless Chromium against the local stack: a quorum of two moving to "1 of 2" in place
and then answered, an interrupt answered from the session page (and that page saying why its
session waits: `retrying`), a countdown reaching expiry, the history's search and its CSV/JSON
export (a Blob downloaded under the page's CSP), approving and denying with the keyboard alone,
and axe-core's rules (no serious or critical violation) on the inbox, its history and the session
page. Every wait is on something the page shows; no test reads the wall clock. Screenshots of each
state go to `.artifacts/console/` (git-ignored)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from holdpoint_sdk.worker import http_handler
from tests.conftest import ROOT
from tests.e2e.test_approver_policies_e2e import BOARD, approver
from tests.e2e.test_inbox_page import WAIT_MS, card, history_row, parked
from tests.stack import Api, declare_agent, seed_worker

ARTIFACTS = ROOT / ".artifacts" / "console"
AXE = ROOT / "tests" / "axe"
Open = Callable[..., Page]


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def console(browser: Browser, stack: Any) -> Iterator[Open]:
    """Opens the inbox signed in with a credential (the stack's API key by default) in a fresh
    context; script errors and Content-Security-Policy violations of every page opened fail the test."""
    errors: list[str] = []
    contexts = []

    def open_(credential: str | None = None, *, bypass_csp: bool = False) -> Page:
        context = browser.new_context(viewport={"width": 1100, "height": 900}, bypass_csp=bypass_csp,
                                      accept_downloads=True)
        contexts.append(context)
        tab = context.new_page()
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        tab.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
        tab.goto(f"{stack.base_url}/inbox")
        tab.fill("#token", credential or stack.api_key)
        tab.click("#sign-in button[type=submit]")
        expect(tab.locator("#app")).to_be_visible()
        return tab

    yield open_
    for context in contexts:
        context.close()
    assert errors == [], errors


def refreshes(page: Page) -> int:
    return int(page.evaluate("Number(document.body.dataset.refreshes || 0)"))


def wait_refreshes(page: Page, more: int) -> None:
    """Until the open list has been read `more` times again."""
    target = refreshes(page) + more  # a promise polled in the page (wait_for_function evals: the CSP refuses)
    page.evaluate("""(target) => new Promise((done) => { const check = () =>
        (Number(document.body.dataset.refreshes || 0) >= target ? done(true) : setTimeout(check, 50)); check(); })""",
                  target)


def test_console_quorum_of_two_moves_to_one_of_two_in_place_then_is_answered(
        console: Open, api: Api, stack: Any, worker: Any) -> None:
    declare_agent(api, worker[0], approval=BOARD)  # ann, bob or cid; two approvals; not the requester
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sid, iid = parked(api, stack)
    page = console(ann.http.headers["Authorization"].removeprefix("Bearer "))
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator(".message")).to_have_text("Send the email?")
    expect(item.locator(".requester")).to_have_text("asked by dev-user (API key)")
    expect(item.locator(".who")).to_have_text(
        "Who may answer: ann, bob, cid · 2 approvals needed · not the requester (dev-user (API key)).")
    expect(item.locator(".excerpt .said")).to_have_text(["Email Bob", "→ send_email(to: bob)"], timeout=WAIT_MS)
    expect(item.locator(".fingerprint-box")).not_to_have_attribute("open", "")  # there, but quiet
    shot(page, "quorum-open")
    # The page watches the card: it must not be removed and added again while it waits.
    item.evaluate("""node => { node.dataset.marker = "same";
        window.__removed = 0;
        new MutationObserver((records) => { for (const r of records) for (const n of r.removedNodes)
          if (n.dataset && n.dataset.key === node.dataset.key) window.__removed += 1; })
          .observe(node.parentNode, { childList: true }); }""")
    item.locator("textarea[name=comment]").fill("checked the recipient")
    item.locator("button.approve").click()
    expect(item.locator(".progress")).to_have_text("1 of 2 approvals: ann", timeout=WAIT_MS)
    expect(item.locator(".mine")).to_have_text("Your answer is recorded: 1 of 2 approvals; waiting for 1 more.")
    expect(item.locator("form.answer")).to_be_hidden()  # answering again would change nothing
    expect(item.locator(".answers li")).to_have_count(1)
    expect(item.locator(".answers li")).to_contain_text("Approved by ann")
    expect(item.locator(".answers li q")).to_have_text("checked the recipient")
    wait_refreshes(page, 3)  # the list is read again: the card is updated, never replaced
    assert page.evaluate("window.__removed") == 0
    expect(item).to_have_attribute("data-marker", "same")
    expect(item.locator(".progress")).to_have_text("1 of 2 approvals: ann")
    # One read of the session view when the card came, one when its answers changed; not one a refresh.
    assert int(page.evaluate("Number(document.body.dataset.viewReads)")) <= 2
    shot(page, "quorum-one-of-two")
    assert bob.resume(sid, iid, {"approved": True}).json() == {"ok": True, "interrupt_id": iid, "noop": False}
    expect(item).to_have_count(0, timeout=WAIT_MS)
    assert api.wait_status(sid, "done")["messages"][2]["content"] == "sent"
    row = history_row(page, iid)
    expect(row.locator("td.by")).to_have_text("ann, bob", timeout=WAIT_MS)
    expect(row.locator("td.answer-cell")).to_have_text("Approved")
    expect(row.locator("td.comment")).to_have_text("ann: checked the recipient")
    shot(page, "quorum-history")


class FlakyResume:
    """The seed worker, answering the delivery of a resume with 503 until `release` is set."""

    release: threading.Event
    failed: threading.Event


def flaky_resume(secret: str) -> type[Any]:
    class Handler(http_handler(seed_worker.worker(secret))):  # type: ignore[misc]
        release = threading.Event()
        failed = threading.Event()

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if json.loads(body)["trigger"]["type"] == "interrupt.resumed" and not self.release.is_set():
                self.failed.set()
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.rfile = io.BytesIO(body)
            super().do_POST()

    return Handler


@pytest.fixture
def flaky_worker(api: Api) -> Iterator[type[FlakyResume]]:
    handler = flaky_resume(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    declare_agent(api, f"http://127.0.0.1:{server.server_address[1]}/")
    yield handler
    handler.release.set()
    server.shutdown()


def test_console_session_page_answers_in_place_and_says_why_it_waits(
        console: Open, api: Api, stack: Any, flaky_worker: type[FlakyResume]) -> None:
    sid, iid = parked(api, stack)
    fingerprint = api.view(sid)["interrupts"][0]["action"]["fingerprint"]
    page = console()
    page.goto(f"{stack.base_url}/inbox/session?id={sid}")
    expect(page.locator("#session-status")).to_have_text("interrupted", timeout=WAIT_MS)
    banner = page.locator(f".banner[data-interrupt-id='{iid}']")
    expect(banner.locator(".question")).to_have_text("Waiting for approval: Send the email?")
    expect(banner.locator(".tool-call")).to_have_text("send_email(to: bob)")
    expect(page.locator(".turn.assistant .text")).to_have_text(["→ send_email(to: bob)"], timeout=WAIT_MS)
    assert '""' not in page.locator("#messages").inner_text()  # an assistant turn with no text
    expect(page.locator("li.event[data-type='call.started'] .detail").last).to_have_text("tool send_email")
    expect(page.locator("li.event[data-type='session.interrupted'] .detail")).to_have_text("confirm: Send the email?")
    expect(page.locator("li.event time").first).not_to_be_empty()
    shot(page, "session-waiting")
    banner.locator("textarea[name=comment]").fill("fine by me")
    with page.expect_request(lambda r: r.url.endswith(f"/interrupts/{iid}/resume")) as sent:
        banner.locator("button.approve").click()
    assert sent.value.post_data_json == {"payload": {"approved": True}, "comment": "fine by me",
                                         "expect_fingerprint": fingerprint}
    expect(banner).to_have_count(0, timeout=WAIT_MS)
    # The worker refuses the resume's delivery: the page says so instead of a silent "running".
    assert flaky_worker.failed.wait(30)
    expect(page.locator("#retrying")).to_have_text(re.compile(r"^retrying: .*503.* \(attempt \d+"), timeout=WAIT_MS)
    expect(page.locator("#session-status")).to_have_text("running")
    expect(page.locator("li.event[data-type='decision.retry'] .detail").first).to_contain_text("503")
    shot(page, "session-retrying")
    flaky_worker.release.set()
    expect(page.locator("#session-status")).to_have_text("done", timeout=WAIT_MS)
    expect(page.locator("#retrying")).to_be_hidden()
    decision = page.locator(f"#decisions li.decision[data-interrupt-id='{iid}']")
    expect(decision.locator(".verdict")).to_have_text("Approved", timeout=WAIT_MS)
    expect(decision).to_contain_text("Send the email? by dev-user at ")
    expect(decision.locator(".comment")).to_have_text("dev-user: fine by me")
    expect(page.locator("li.event[data-type='session.interrupt_resumed'] .detail")).to_have_text(
        re.compile(r"^Approved by dev-user"))
    expect(page.locator(".turn.tool .text")).to_have_text(["sent"])
    shot(page, "session-done")


def test_console_countdown_reaches_expiry(console: Open, api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    iid = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "release", "expires_in": 8,
                                                            "payload": {"message": "Ship it?"}})["interrupt_id"]
    page = console()
    item = card(page, iid)
    countdown = item.locator(".countdown")
    expect(countdown).to_have_text(re.compile(r"^cancels at .+ \(in \d+s\)$"), timeout=WAIT_MS)  # the expiry's outcome
    expect(item.locator("button.approve")).to_be_enabled()
    shot(page, "countdown-running")
    expect(countdown).to_have_text(re.compile(r"^expired \(.+\): cancels$"), timeout=WAIT_MS)
    expect(item).to_have_attribute("data-state", "expired")
    expect(item.locator("button.approve")).to_be_disabled()
    expect(item.locator("button.deny")).to_be_disabled()
    shot(page, "countdown-expired")


def test_console_history_search_and_export(console: Open, api: Api, stack: Any, tmp_path: Path) -> None:
    sent_sid, sent = parked(api, stack)
    kept_sid, kept = parked(api, stack)
    assert api.req("POST", f"/v1/sessions/{sent_sid}/interrupts/{sent}/resume",
                   {"payload": {"approved": True}, "comment": "ok to send, checked with Bob"}).status_code == 200
    assert api.resume(kept_sid, kept, {"approved": False}).status_code == 200
    api.wait_status(sent_sid, "done")
    api.wait_status(kept_sid, "done")
    page = console()
    expect(history_row(page, sent)).to_have_count(1, timeout=WAIT_MS)
    expect(history_row(page, kept)).to_have_count(1)
    expect(page.locator("#history-count")).to_have_text("2 of 2 decisions")
    expect(page.locator("th")).to_have_text(["Decided", "What was asked", "Answer", "By", "Comment", "Took"])
    for header in page.locator("th").all():  # one line each: no header broken mid-word
        assert header.evaluate("h => h.getClientRects().length === 1 && h.scrollWidth <= h.clientWidth")
    shot(page, "history-all")
    page.fill("#history-search", "checked with bob")
    expect(page.locator("tr.decision")).to_have_count(1)
    expect(history_row(page, sent).locator("td.comment")).to_have_text("ok to send, checked with Bob")
    expect(page.locator("#history-count")).to_have_text("1 of 2 decisions")
    shot(page, "history-search")
    with page.expect_download() as got:
        page.click("#export-csv")
    assert got.value.suggested_filename == "holdpoint-decisions.csv"
    rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
    assert [(r["interrupt_id"], r["session_id"], r["status"], r["answer"], r["by"], r["comment"], r["tool"])
            for r in rows] == [(sent, sent_sid, "resolved", "Approved", "dev-user", "ok to send, checked with Bob",
                                "send_email")]
    assert rows[0]["question"] == "Send the email?" and json.loads(rows[0]["arguments"]) == {"to": "bob"}
    page.fill("#history-search", "denied")
    expect(page.locator("tr.decision")).to_have_count(1)
    with page.expect_download() as got:
        page.click("#export-json")
    assert got.value.suggested_filename == "holdpoint-decisions.json"
    [record] = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert (record["interrupt_id"], record["answer"], record["by"], record["comment"]) == (kept, "Denied",
                                                                                          "dev-user", "")
    assert isinstance(record["decision_secs"], float) and record["decided_at"]
    page.fill("#history-search", "")
    expect(page.locator("tr.decision")).to_have_count(2)


def test_console_keyboard_only_approves_and_denies(console: Open, api: Api, stack: Any) -> None:
    first_sid, first = parked(api, stack)
    second_sid, second = parked(api, stack)
    page = console()
    expect(page.locator("article.card")).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator("#keys")).to_contain_text("approve the focused card")
    order = page.locator("article.card").evaluate_all("cards => cards.map((c) => c.dataset.interruptId)")
    assert sorted(order) == sorted([first, second])
    page.keyboard.press("j")
    top = card(page, order[0])
    expect(top).to_be_focused()
    page.keyboard.press("j")
    expect(card(page, order[1])).to_be_focused()
    page.keyboard.press("k")
    expect(top).to_be_focused()
    shot(page, "keyboard-focus")
    page.keyboard.press("c")
    expect(top.locator("textarea[name=comment]")).to_be_focused()
    page.keyboard.type("approved from the keyboard")
    page.keyboard.press("Escape")
    expect(top).to_be_focused()
    page.keyboard.press("a")
    expect(top).to_have_count(0, timeout=WAIT_MS)
    expect(card(page, order[1])).to_be_focused()  # the next card, ready for the next key
    page.keyboard.press("d")
    expect(page.locator("article.card")).to_have_count(0, timeout=WAIT_MS)
    outcome = {first_sid: first, second_sid: second}
    approved_sid = next(s for s, i in outcome.items() if i == order[0])
    denied_sid = next(s for s, i in outcome.items() if i == order[1])
    assert api.wait_status(approved_sid, "done")["messages"][2]["content"] == "sent"
    assert api.wait_status(denied_sid, "done")["messages"][-1]["content"] == "I did not send it."
    audit = {i["interrupt_id"]: i for i in api.ok("GET", "/v1/interrupts?status=all")["interrupts"]}
    assert audit[order[0]]["approvals"][0]["comment"] == "approved from the keyboard"
    shot(page, "keyboard-done")


@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe-core, installed from tests/axe's lock file (again whenever the lock changed)."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed (`make test` installs it)"
    lock = hashlib.sha256((AXE / "package-lock.json").read_bytes()).hexdigest()
    stamp = AXE / "node_modules" / ".holdpoint-lock"
    if not stamp.exists() or stamp.read_text() != lock:
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=AXE, check=True, timeout=600)
        stamp.write_text(lock)
    return AXE / "node_modules" / "axe-core" / "axe.min.js"


def serious(page: Page, axe: Path) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(path=str(axe))
    found = page.evaluate("""async () => (await axe.run(document, { resultTypes: ["violations"] })).violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }))""")
    return list(found)


def test_console_has_no_serious_accessibility_violations(console: Open, api: Api, stack: Any,
                                                         axe_script: Path) -> None:
    """axe-core in Chromium; the page's CSP is bypassed in this context only, to inject axe."""
    done_sid, done = parked(api, stack)
    api.req("POST", f"/v1/sessions/{done_sid}/interrupts/{done}/resume", {"payload": {"approved": True},
                                                                          "comment": "fine"})
    api.wait_status(done_sid, "done")
    sid, iid = parked(api, stack)
    page = console(bypass_csp=True)
    expect(card(page, iid).locator(".excerpt .said")).to_have_count(2, timeout=WAIT_MS)
    page.locator("details#keys summary").click()
    assert serious(page, axe_script) == []
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.press("Escape")
    assert serious(page, axe_script) == []
    page.click("#tab-history")
    expect(history_row(page, done)).to_have_count(1, timeout=WAIT_MS)
    assert serious(page, axe_script) == []
    page.goto(f"{stack.base_url}/inbox/session?id={sid}")
    expect(page.locator(f".banner[data-interrupt-id='{iid}']")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("li.event")).to_have_count(len(api.events(sid)), timeout=WAIT_MS)
    assert serious(page, axe_script) == []
    shot(page, "axe-session")
    page.goto(f"{stack.base_url}/inbox")
    expect(page.locator("#sign-in")).to_be_hidden()
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    assert serious(page, axe_script) == []
