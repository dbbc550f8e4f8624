"""The console signs in through the tenant's identity provider, in a real headless Chromium on the
local stack: `/inbox?tenant=dev` reads the tenant's sign-in settings (`/inbox/sign-in.json`), sends
the person to the moto user pool's hosted UI (fix 36) with a PKCE (S256) challenge, takes the code
back, exchanges it for the pool's tokens from the page, and answers an interrupt with the ID token;
the answer reaches the worker. Script errors and Content-Security-Policy violations fail the test."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, expect

from tests.e2e.test_inbox_page import WAIT_MS, card, parked
from tests.oidc import operator, pool_on
from tests.stack import Api, declare_agent, resumed_triggers
from tests.waiting import wait_for


def test_oidc_console_signs_in_with_pkce_and_answers(browser: Browser, api: Api, stack: Any,
                                                     worker: tuple[str, list[dict[str, Any]]]) -> None:
    # The console's redirect URI is the inbox with its tenant: the app client's callback URL.
    pool = pool_on(stack.client("cognito-idp"), "console", f"{stack.base_url}/inbox?tenant={stack.tenant}")
    domain = f"{stack.moto_endpoint}/{pool.pool_id}"
    operator(stack).ok("PUT", "/v1/identity-provider",
                       {**pool.declaration(), "cognito": {"user_pool_id": pool.pool_id, "domain": domain}})
    declare_agent(api, worker[0], approval={"groups": ["finance"]})
    password = pool.user("fiona", ("finance",))
    sid, iid = parked(api, stack)
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
        page.goto(f"{stack.base_url}/inbox?tenant={stack.tenant}")
        expect(page.locator("#idp-sign-in")).to_be_visible(timeout=WAIT_MS)
        page.click("#idp-sign-in")
        page.wait_for_url(f"{domain}/oauth2/authorize?*")
        assert "code_challenge_method=S256" in page.url and "code_challenge=" in page.url
        page.fill("#username", "fiona")
        page.fill("#password", password)
        page.click("#sign-in")
        expect(page.locator("#app")).to_be_visible(timeout=WAIT_MS)
        assert "code=" not in page.url  # the code leaves the address bar once spent
        assert page.evaluate("sessionStorage.getItem('holdpoint.token')").count(".") == 2
        item = card(page, iid)
        expect(item).to_be_visible(timeout=WAIT_MS)
        item.locator("button.approve").click()
        wait_for(lambda: resumed_triggers(worker[1], sid), "the answer to reach the worker")
        assert resumed_triggers(worker[1], sid)[0]["payload"]["approved"] is True
    finally:
        context.close()
    assert errors == [], errors
