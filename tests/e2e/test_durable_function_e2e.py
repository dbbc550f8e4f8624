"""A customer's Lambda durable function waits for a person (PROTOCOL.md §10, sdk's
`integrations.durable_function`), on the local stack with AWS's durable execution emulator running
the function (tests/durable.py): the function wants `send_email`; `wait_for_approval` raises it in
Holdpoint from its `wait_for_callback` submitter and the invocation ends (nothing runs while a
person decides); Holdpoint completes the callback through Lambda's API (moto fix 29 hands it to the
emulator); the function replays to the wait and sends the email exactly once. Approved in the inbox
page, denied, a quorum of two, an expiry that denies, and the completion sent again. Select with
`pytest -k durable_function`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from playwright.sync_api import Browser

from holdpoint.bridges.runs.channels import SPENT
from holdpoint_sdk.client import Client
from tests.durable import DurableHost, Mailer, durable_function
from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_inbox_page import answer_on_its_card
from tests.stack import Api
from tests.waiting import wait_for


@pytest.fixture
def mailer(stack: Any, api: Api) -> Iterator[tuple[DurableHost, Mailer]]:
    api.ok("PUT", "/v1/agents/mailer", {"run_targets": {"mailbox": {"durable_function": True}}})
    function = Mailer(Client(stack.base_url, stack.api_key))
    with durable_function(stack, function.handler) as host:
        yield host, function


def start(api: Api, host: DurableHost, **ask: Any) -> tuple[str, dict[str, Any]]:
    """An execution started; the run it raised, once its first invocation has suspended."""
    run_id = f"dex-{uuid.uuid4().hex[:12]}"
    arn = host.start(json.dumps({"run_id": run_id, "to": "bob@example.com", "ask": ask}), run_id)
    run = wait_for(lambda: api.ok("GET", f"/v1/runs/{run_id}") if api.req("GET", f"/v1/runs/{run_id}").ok
                   else None, "the function to raise its run")
    wait_for(lambda: "InvocationCompleted" in host.history(arn) or None, "the first invocation to end")
    return arn, run


def result(host: DurableHost, arn: str) -> dict[str, Any]:
    done = host.runner.wait_for_result(arn, timeout=60)
    assert str(done.status.value if hasattr(done.status, "value") else done.status) == "SUCCEEDED", done
    found = done.result
    return dict(json.loads(found) if isinstance(found, str) else found)


def test_durable_function_approved_in_the_inbox_sends_once(stack: Any, api: Api, browser: Browser,
                                                            mailer: tuple[DurableHost, Mailer]) -> None:
    host, function = mailer
    arn, run = start(api, host)
    [interrupt] = run["interrupts"]
    assert (interrupt["status"], interrupt["action"]["tool"], run["deliver"]) == ("open", "send_email", "all")
    assert function.sent == [] and function.bodies == 1  # suspended: its invocation ended while it waits
    answer_on_its_card(browser, stack, stack.api_key, interrupt["interrupt_id"], True)
    assert result(host, arn) == {"sent": True, "verdicts": ["approved"]}
    assert function.sent == ["bob@example.com"]
    history = host.history(arn)
    assert history.index("InvocationCompleted") < history.index("CallbackSucceeded")  # no compute while waiting


def test_durable_function_denied_sends_nothing_and_says_who(stack: Any, api: Api,
                                                             mailer: tuple[DurableHost, Mailer]) -> None:
    host, function = mailer
    arn, run = start(api, host)
    assert api.resume(run["session_id"], "send", {"approved": False, "comment": "not today"}).status_code == 200
    out = result(host, arn)
    assert out["sent"] is False and out["why"].startswith("not approved: denied") and "not today" in out["why"]
    assert function.sent == [] and "CallbackFailed" in host.history(arn)


def test_durable_function_under_a_quorum_of_two_waits_for_both(stack: Any, api: Api,
                                                                mailer: tuple[DurableHost, Mailer]) -> None:
    host, function = mailer
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    arn, run = start(api, host, approval={"subjects": ["ann", "bob"], "quorum": 2})
    assert ann.resume(run["session_id"], "send", {"approved": True}).status_code == 200
    assert "CallbackSucceeded" not in host.history(arn) and function.sent == []  # one of two: still waiting
    assert bob.resume(run["session_id"], "send", {"approved": True}).status_code == 200
    assert result(host, arn)["sent"] is True and function.sent == ["bob@example.com"]


def test_durable_function_that_expires_under_deny_is_refused(stack: Any, api: Api,
                                                              mailer: tuple[DurableHost, Mailer]) -> None:
    host, function = mailer
    arn, _ = start(api, host, expires_in=2, on_expiry="deny")
    out = result(host, arn)
    assert (out["sent"], out["why"]) == (False, "not approved: expired") and function.sent == []


def test_durable_function_completed_again_changes_nothing(stack: Any, api: Api,
                                                          mailer: tuple[DurableHost, Mailer]) -> None:
    """A completion sent again (the notifier retrying after a lost answer) is refused as spent,
    which the notifier takes as done; the email went once."""
    host, function = mailer
    arn, run = start(api, host)
    assert api.resume(run["session_id"], "send", {"approved": True}).status_code == 200
    assert result(host, arn)["sent"] is True
    [callback] = [e for e in host.runner.get_execution_history(arn).events if e.event_type == "CallbackStarted"]
    callback_id = callback.callback_started_details.callback_id  # type: ignore[union-attr]
    with pytest.raises(ClientError) as again:
        stack.client("lambda").send_durable_execution_callback_success(CallbackId=callback_id, Result=b"{}")
    assert again.value.response["Error"]["Code"] in SPENT
    assert function.sent == ["bob@example.com"]
