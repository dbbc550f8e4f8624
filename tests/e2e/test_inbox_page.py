"""The inbox page (`GET /inbox`) in a real headless Chromium (Debian's `chromium`, driven by
Playwright) against the local stack: approve and deny from the page, an invalid answer refused
with its field highlighted, the item moving to history, option buttons, and a hostile message
shown as text. Each test saves a screenshot under its pytest temp dir."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Page, expect

from holdpoint.services.tokens import mint_client_token
from tests.stack import Api, resumed_triggers, wait_execution, worker_with_schema

WAIT_MS = 30_000
NOTE_SCHEMA = {"type": "object", "required": ["approved", "note"],
               "properties": {"approved": {"type": "boolean"}, "note": {"type": "string", "minLength": 3},
                              "count": {"type": "integer", "multipleOf": 5}}}


def open_inbox(browser: Browser, stack: Any, credential: str, errors: list[str]) -> Page:
    """A fresh browser context signed in to the inbox with `credential`; script errors and
    Content-Security-Policy violations are collected in `errors`."""
    tab = browser.new_context(viewport={"width": 1100, "height": 800}).new_page()
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
    tab.goto(f"{stack.base_url}/inbox")
    tab.fill("#token", credential)
    tab.click("#sign-in button[type=submit]")
    expect(tab.locator("#app")).to_be_visible()
    return tab


@pytest.fixture
def page(browser: Browser, stack: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    """The inbox signed in with the stack's API key; a screenshot is saved when the test ends."""
    errors: list[str] = []
    tab = open_inbox(browser, stack, stack.api_key, errors)
    yield tab
    tab.screenshot(path=str(tmp_path / f"{request.node.name}.png"), full_page=True)
    tab.context.close()
    assert errors == [], errors


def card(page: Page, iid: str) -> Any:
    return page.locator(f"article.card[data-interrupt-id='{iid}']")


def answer_on_its_card(browser: Browser, stack: Any, credential: str, iid: str, approve: bool) -> None:
    """Sign in as `credential`, click Approve or Deny on the interrupt's card, see it answered."""
    errors: list[str] = []
    page = open_inbox(browser, stack, credential, errors)
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    item.locator("button.approve" if approve else "button.deny").click()
    expect(page.locator("#status")).to_contain_text("Answered", timeout=WAIT_MS)
    page.context.close()
    assert errors == [], errors


def parked(api: Api, stack: Any) -> tuple[str, str]:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")
    return sid, interrupt["interrupt_id"]


def history_row(page: Page, iid: str) -> Any:
    page.click("#tab-history")
    return page.locator(f"tr.decision[data-interrupt-id='{iid}']")


def test_inbox_page_approve_moves_the_item_to_history(page: Page, api: Api, stack: Any, worker: Any) -> None:
    sid, iid = parked(api, stack)
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator(".message")).to_have_text("Send the email?")
    expect(item.locator(".tool")).to_have_text("send_email")
    expect(item.locator(".arguments dt")).to_have_text(["to"])
    expect(item.locator(".arguments dd")).to_have_text(["bob"])
    fingerprint = api.view(sid)["interrupts"][0]["action"]["fingerprint"]
    expect(item.locator(".fingerprint")).to_have_text(fingerprint)
    item.locator("button.approve").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    assert api.wait_status(sid, "done")["messages"][2]["content"] == "sent"
    assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]
    row = history_row(page, iid)
    expect(row).to_have_count(1, timeout=WAIT_MS)
    expect(row.locator("td.by")).to_have_text("dev-user")
    expect(row.locator("td.answer-cell")).to_have_text("Approved")
    expect(row.locator("td.what")).to_contain_text("send_email(to: bob)")
    expect(row.locator("td.took")).to_have_text(re.compile(r"^\d+\.\d s$"))  # how fast (A6 decision_secs)


def test_inbox_page_deny(page: Page, api: Api, stack: Any, worker: Any) -> None:
    sid, iid = parked(api, stack)
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    item.locator("textarea[name=comment]").fill("")  # no comment: the resume body is the payload alone
    item.locator("button.deny").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    view = api.wait_status(sid, "done")
    assert view["messages"][-1]["content"] == "I did not send it."
    wait_execution(stack, sid, iid, "SUCCEEDED")
    assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": False}]
    expect(history_row(page, iid).locator("td.answer-cell")).to_have_text("Denied", timeout=WAIT_MS)


@pytest.fixture
def note_worker(api: Api, worker: Any) -> Iterator[list[dict[str, Any]]]:
    """The seed worker, except its `confirm` interrupt asks for a note of at least 3 characters."""
    with worker_with_schema(api, NOTE_SCHEMA) as seen:
        yield seen


def test_inbox_page_invalid_answer_is_refused_with_the_field_highlighted(
        page: Page, api: Api, stack: Any, note_worker: list[dict[str, Any]], tmp_path: Path) -> None:
    """Every field the page can check is marked at once, before anything is sent; what only the
    server checks (here `multipleOf`) comes back as its one `param` and is marked at that field.
    The boolean `approved` is not a checkbox but the Approve/Deny buttons, the form's one action."""
    sid, iid = parked(api, stack)
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    assert item.locator("[data-field=approved]").count() == 0 and item.locator("button.submit").count() == 0
    expect(item.locator(".buttons button")).to_have_text(["Approve", "Deny"])
    note, count = item.locator("[data-field=note]"), item.locator("[data-field=count]")
    note.fill("x")  # the schema asks for 3 characters at least
    count.fill("2.5")  # and a whole number
    item.locator("button.approve").click()
    expect(note).to_have_attribute("aria-invalid", "true")
    expect(count).to_have_attribute("aria-invalid", "true")
    expect(item.locator(".fields .field-error")).to_have_text(["at least 3 characters", "must be a whole number"])
    assert api.view(sid)["status"] == "interrupted"  # nothing was sent
    page.screenshot(path=str(tmp_path / "refused-here.png"), full_page=True)
    note.fill("looks right")
    count.fill("7")  # a whole number, not a multiple of 5: only the server knows
    item.locator("button.approve").click()
    expect(item.locator(".error")).to_contain_text("invalid_resume", timeout=WAIT_MS)
    expect(count).to_have_attribute("aria-invalid", "true")
    expect(note).not_to_have_attribute("aria-invalid", "true")
    expect(item.locator(f"#{count.get_attribute('id')}-error")).not_to_be_empty()
    assert api.view(sid)["status"] == "interrupted"  # nothing recorded
    page.screenshot(path=str(tmp_path / "refused.png"), full_page=True)
    count.fill("10")
    item.locator("button.approve").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    api.wait_status(sid, "done")
    assert [t["payload"] for t in resumed_triggers(note_worker, sid)] == [
        {"approved": True, "note": "looks right", "count": 10}]


def test_inbox_page_shows_a_hostile_message_as_text_and_answers_with_an_option(
        page: Page, api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
    options = [{"label": "<b>Ship</b>", "value": "ship"}, {"label": "Hold", "value": "hold"}]
    iid = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {
        "reason": "review", "payload": {"message": hostile, "metadata": {"options": options}}})["interrupt_id"]
    item = card(page, iid)
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator(".message")).to_have_text(hostile)
    assert item.locator(".message img, .message script, .options b").count() == 0
    assert page.evaluate("window.__pwned") is None
    item.locator("button.option", has_text="<b>Ship</b>").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    resumed = api.wait(sid, lambda v: not v["interrupts"])
    assert resumed["status"] in ("idle", "done", "running")
    row = history_row(page, iid)
    expect(row.locator("td.answer-cell")).to_have_text("<b>Ship</b>", timeout=WAIT_MS)  # the option's label, as text


def test_inbox_page_is_served_without_credentials_under_a_strict_csp(stack: Any) -> None:
    html = requests.get(f"{stack.base_url}/inbox", timeout=30)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    csp = html.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert "<script>" not in html.text and 'src="/inbox/app.js"' in html.text
    script = requests.get(f"{stack.base_url}/inbox/app.js", timeout=30)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in script.text
    assert requests.get(f"{stack.base_url}/inbox/app.css", timeout=30).status_code == 200
    # The data is not: every data call needs the bearer token.
    assert requests.get(f"{stack.base_url}/v1/interrupts", timeout=30).status_code == 401


def test_inbox_page_signs_in_with_a_client_token_that_sees_only_its_own(
        browser: Browser, api: Api, stack: Any, tmp_path: Path) -> None:
    sid, iid = parked(api, stack)  # started with the API key, whose subject is dev-user
    secret = stack.client("secretsmanager").get_secret_value(SecretId=stack.env["JWT_SECRET_ARN"])["SecretString"]
    errors: list[str] = []
    # The tenant's backend grants its user the session (a bound token); an unbound token of the same
    # name is not the key that started it, so it sees nothing.
    owner = open_inbox(browser, stack, mint_client_token(secret, "dev", "dev-user", session_id=sid), errors)
    expect(card(owner, iid)).to_be_visible(timeout=WAIT_MS)
    assert owner.evaluate("sessionStorage.getItem('holdpoint.token')").count(".") == 2  # the JWT, this tab only
    for name in ("mallory", "dev-user"):
        stranger = open_inbox(browser, stack, mint_client_token(secret, "dev", name), errors)
        expect(stranger.locator("#empty")).to_be_visible(timeout=WAIT_MS)
        assert stranger.locator("article.card").count() == 0
        if name == "mallory":
            stranger.context.close()
    stranger.screenshot(path=str(tmp_path / "stranger.png"), full_page=True)
    owner.click("#sign-out")
    expect(owner.locator("#sign-in")).to_be_visible()
    assert owner.evaluate("sessionStorage.getItem('holdpoint.token')") is None
    owner.fill("#token", "hp_not_a_key")
    owner.click("#sign-in button[type=submit]")
    expect(owner.locator("#sign-in-error")).to_have_text("Those credentials were refused.", timeout=WAIT_MS)
    expect(owner.locator("#app")).to_be_hidden()
    owner.screenshot(path=str(tmp_path / "signed-out.png"), full_page=True)
    owner.context.close()
    stranger.context.close()
    assert api.view(sid)["status"] == "interrupted" and errors == []


def test_inbox_page_filters_by_reason_age_and_expiry(page: Page, api: Api, stack: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    soon = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "release", "expires_in": 600,
                                                              "payload": {"message": "Ship?"}})["interrupt_id"]
    later = api.ok("POST", f"/v1/sessions/{sid}/interrupts", {"reason": "review", "global": True,
                                                               "payload": {"message": "Review?"}})["interrupt_id"]
    expect(card(page, soon)).to_be_visible(timeout=WAIT_MS)
    expect(card(page, later)).to_be_visible(timeout=WAIT_MS)

    def apply(**values: str) -> None:
        for name in ("reason", "older_than", "expiring_within"):
            page.fill(f"#filters [name={name}]", values.get(name, ""))
        page.click("#filters button[type=submit]")

    apply(reason="review")
    expect(card(page, soon)).to_have_count(0, timeout=WAIT_MS)
    expect(card(page, later)).to_be_visible(timeout=WAIT_MS)
    apply(expiring_within="15")  # minutes: only the one expiring in 10
    expect(card(page, later)).to_have_count(0, timeout=WAIT_MS)
    expect(card(page, soon)).to_be_visible(timeout=WAIT_MS)
    apply(older_than="60")  # nothing here is an hour old
    expect(page.locator("#empty")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("article.card")).to_have_count(0)
    apply()
    expect(page.locator("article.card")).to_have_count(2, timeout=WAIT_MS)
