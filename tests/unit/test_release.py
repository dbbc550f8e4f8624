"""R7 and R8 on the release path: a resolving resume puts exactly one wake on the work queue and
ends the ParkBranch execution, whose success path is its one Park state (docs/ARCHITECTURE.md,
"A pause and a wake-up"). A token that lands after the resume ends the execution, and wakes the
branch unless a wake got there first."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
import pytest

from holdpoint.aws.queue import from_queue as work_message
from holdpoint.services.resume import resume
from tests.harness import Harness, seed_worker, spent_tokens

pytestmark = pytest.mark.usefixtures("aws")


def taken(kind: str) -> list[dict[str, Any]]:
    """Take every message off the work queue; return the bodies of `kind`."""
    sqs, url, found = boto3.client("sqs"), os.environ["WORK_QUEUE_URL"], []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            body = json.loads(message["Body"])
            if body["kind"] == kind:
                found.append(body)
    return found


def parked(token: bool = True) -> tuple[Harness, list[dict[str, Any]], str]:
    """A seed session parked on its `send_email` interrupt; without `token`, ParkBranch has not
    handed its token over yet (`h.park_tokens()` does)."""
    log: list[dict[str, Any]] = []
    h = Harness(seed_worker(log))
    if not token:
        h.park_tokens = lambda: None  # type: ignore[method-assign]
    h.say("Email Bob")
    if not token:
        del h.park_tokens
    return h, log, h.open_interrupt()["interrupt_id"]


def resumed(log: list[dict[str, Any]]) -> int:
    return len([r for r in log if r["trigger"]["type"] == "interrupt.resumed"])


def test_r7_a_resume_releases_with_one_wake_then_ends_the_execution() -> None:
    h, log, iid = parked()
    h.park_tokens()
    taken("wake")
    tokens = spent_tokens(h)
    assert resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True}).noop is False
    [wake] = taken("wake")
    assert wake == {"kind": "wake", "outcome": "resumed", "tenant": "t1", "session_id": h.session_id,
                    "interrupt_id": iid, "generation": h.state().interrupts[iid].generation}
    assert tokens == [h.tokens[iid]]
    # A retried resume before the engine woke the branch (its release may have been lost) releases again.
    assert resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True}).noop is True
    assert taken("wake") == [wake] and tokens == [h.tokens[iid]] * 2
    h.runner.handle(work_message(wake))
    h.runner.handle(work_message(wake))  # the same wake twice (past SQS's deduplication window): applied once
    assert resumed(log) == 1 and h.view()["messages"][-1]["content"] == "Email sent."
    # Once woken, a repeat releases nothing.
    assert resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True}).noop is True
    assert taken("wake") == [] and tokens == [h.tokens[iid]] * 2


def test_r7_a_token_after_the_resume_ends_the_execution_and_wakes_a_branch_not_yet_woken() -> None:
    h, log, iid = parked(token=False)
    tokens = spent_tokens(h)
    resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    assert tokens == []  # no token yet: nothing to end
    assert len(taken("wake")) == 1  # and suppose this wake is lost
    h.park_tokens()
    [wake] = taken("wake")  # the engine, storing the token, released the branch itself
    assert tokens == [h.tokens[iid]]
    h.runner.handle(work_message(wake))
    assert resumed(log) == 1 and h.view()["messages"][-1]["content"] == "Email sent."


def test_r8_a_token_after_the_wake_only_ends_the_execution() -> None:
    h, log, iid = parked(token=False)
    tokens = spent_tokens(h)
    resume(h.store, h.parking, h.caller, h.session_id or "", iid, {"approved": True})
    [wake] = taken("wake")
    h.runner.handle(work_message(wake))
    assert resumed(log) == 1
    h.park_tokens()
    assert tokens == [h.tokens[iid]] and taken("wake") == []
    assert resumed(log) == 1


def raised_again(h: Harness, iid: str) -> None:
    """The interrupt's id raised again (generation 1) while generation 0's execution has not yet
    handed its token over, written the way the engine writes any change of the interrupt."""
    state = h.state()
    interrupt = state.interrupts[iid]
    interrupt.generation = 1
    state.touch(interrupt)
    h.store.commit(state)


def test_r16_an_earlier_generations_execution_neither_parks_nor_expires_the_raise_now_open() -> None:
    h, log, iid = parked(token=False)
    tokens = spent_tokens(h)
    raised_again(h, iid)
    stale = {"tenant": "t1", "session_id": h.session_id, "interrupt_id": iid, "generation": 0}
    h.runner.handle(work_message({"kind": "park", "task_token": "token-of-generation-0", **stale}))
    assert h.token(iid) is None  # not stored on generation 1
    assert tokens == ["token-of-generation-0"]  # that execution is ended instead
    h.runner.handle(work_message({"kind": "wake", "outcome": "expired", **stale}))  # its timeout, had it run
    assert h.state().interrupts[iid].status == "open" and h.events("interrupt.expired") == []
    h.runner.handle(work_message({"kind": "park", "task_token": "token-of-generation-1", **stale, "generation": 1}))
    assert h.token(iid) == "token-of-generation-1"
    h.runner.handle(work_message({"kind": "wake", "outcome": "expired", **stale, "generation": 1}))
    assert h.state().interrupts[iid].status == "expired"


def test_r16_park_and_wake_messages_without_a_generation_still_apply() -> None:
    """Executions started before ParkBranch passed the generation on send messages without it."""
    h, log, iid = parked(token=False)
    old = {"tenant": "t1", "session_id": h.session_id, "interrupt_id": iid}
    h.runner.handle(work_message({"kind": "park", "task_token": "token-old", **old}))
    assert h.token(iid) == "token-old"
    h.runner.handle(work_message({"kind": "wake", "outcome": "expired", **old}))
    assert h.state().interrupts[iid].status == "expired"
