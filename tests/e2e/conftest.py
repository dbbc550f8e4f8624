"""Shared e2e fixtures: a real headless Chromium for the page tests (Debian's `chromium`, driven by
Playwright; `make test` installs it), one browser per test module; and the local fake of the Slack
Web API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.slack_fake import SlackFake

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def slack_fake() -> Iterator[SlackFake]:
    fake = SlackFake()
    yield fake
    fake.stop()
