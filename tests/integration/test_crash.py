"""Crash injection (docs/SECURITY.md): a crash at any write or AWS call, then redelivery, completes the run
with no duplicate node, event, call or effect, and nothing lost.

Every AWS client the store, queue, parking and timers use is wrapped so that its Nth write
(DynamoDB, SQS send, StartExecution, SendTaskSuccess) raises, either before the call reaches
AWS or just after it succeeded (the process died before it could go on). The driver then
does what AWS does: SQS redelivers the engine's message, the API client retries its request.
Step Functions is played as AWS behaves: the first SendTaskSuccess for a token wakes the
execution once; later ones are refused.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.aws.ddb.parking import ParkRecords
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.parking import Parking
from holdpoint.aws.queue import WorkQueue
from holdpoint.aws.queue import from_queue as work_message
from holdpoint.aws.store import Store
from holdpoint.aws.timers import Timers
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.outbound import workers
from holdpoint.ports import ParkRecord
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume
from tests.conftest import make_resources
from tests.harness import SEND_EMAIL_SCRIPT, TOOLS, declaring, seed_worker

WRITES = {"transact_write_items", "put_item", "update_item", "send_message", "start_execution",
          "send_task_success"}


SCHEMA_TEXT = "Email Bob, answer checked"  # the seed with a response_schema on its interrupt (A1)
TIMERS_TEXT = "Email Bob, remind and escalate"  # its interrupt has reminders and an escalation (A5)
EXPIRY_TEXT = "Email Bob, approved on expiry"  # its interrupt expires, answered `approve` (A5)
DECLARED = {SCHEMA_TEXT: {"response_schema": {"type": "object", "required": ["approved"],
                                              "properties": {"approved": {"type": "boolean"}}}},
            TIMERS_TEXT: {"remind_after": [30, 60], "escalate_after": 90,
                          "approval": {"escalate_to": {"subjects": ["boss"]}}},
            EXPIRY_TEXT: {"on_expiry": "approve", "expires_in": 120}}


class Crash(Exception):
    """The process died here."""


class Faults:
    def __init__(self, fail_at: int | None, mode: str) -> None:
        self.fail_at, self.mode, self.count = fail_at, mode, 0
        self.fired = False

    def step(self, before: bool) -> None:
        if before:
            self.count += 1
        if self.fail_at is None or self.fired:
            return
        if self.count == self.fail_at and (self.mode == "before") == before:
            self.fired = True
            raise Crash(f"crash {self.mode} write #{self.count}")


class FaultyClient:
    """Wraps a boto3 client; only writes count and may crash."""

    def __init__(self, real: Any, faults: Faults, tokens: list[str] | None = None) -> None:
        self._real, self._faults, self._tokens = real, faults, tokens

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if name not in WRITES:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._faults.step(before=True)
            if name == "send_task_success" and self._tokens is not None:
                self._tokens.append(kwargs["taskToken"])
                self._faults.step(before=False)
                return {}
            out = attr(*args, **kwargs)
            self._faults.step(before=False)
            return out

        return call


class CrashRun:
    """The seed example driven through crashes, redeliveries and retries."""

    def __init__(self, fail_at: int | None, mode: str, text: str = "Email Bob") -> None:
        self.text = text
        self.schema = text == SCHEMA_TEXT
        self.faults = Faults(fail_at, mode)
        self.task_success: list[str] = []
        base = Store()
        self.store = Store(client=FaultyClient(base.client, self.faults))
        self.queue = WorkQueue(client=FaultyClient(WorkQueue().client, self.faults))
        self.parking = Parking(client=FaultyClient(Parking().client, self.faults, self.task_success), queue=self.queue,
                               records=ParkRecords(self.store.db))  # its writes crash too
        timers = Timers(client=FaultyClient(Timers().client, self.faults))
        self.runner = assembly.new_runner(self.store, self.parking, self.queue, timers)
        self.log: list[dict[str, Any]] = []
        workers.register("crash-seed", declaring(seed_worker(self.log), DECLARED.get(text, {})))
        base.put_agent("t1", "assistant", {"worker": {"python": "crash-seed"}, "tools": TOOLS,
                                           "llm": {"provider": "scripted", "script": SEND_EMAIL_SCRIPT}})
        self.caller = Caller("t1", "user-1", "client")
        self.sid = ""

    def retry(self, fn: Any, *args: Any) -> Any:
        """Redelivery / client retry: run again until it gets through (one crash per run)."""
        for _ in range(3):
            try:
                return fn(*args)
            except Crash:
                continue
        raise AssertionError("still crashing")

    def engine(self, message: dict[str, Any]) -> None:
        self.retry(self.runner.handle, work_message({"tenant": "t1", "session_id": self.sid, **message}))

    def play_state_machine(self) -> None:
        """ParkBranch hands a started execution's token over; the wakes the resume (or the engine,
        when the token came after the resume) put on the work queue are delivered."""
        state = Store().load("t1", self.sid)
        assert state is not None
        for interrupt in state.interrupts.values():
            token = f"token-{interrupt.interrupt_id}"
            kept = self.record(interrupt.interrupt_id, interrupt.generation)
            if kept is not None and kept.handle and kept.token is None:
                self.engine({"kind": "park", "interrupt_id": interrupt.interrupt_id, "task_token": token,
                             "generation": interrupt.generation})
        for message in self.queued("wake"):
            self.engine(message)

    def record(self, interrupt_id: str, generation: int | None = None) -> ParkRecord | None:
        """The parking's record of the raise (by default the one stored now), read past the faults."""
        if generation is None:
            found = Store().read_interrupt("t1", self.sid, interrupt_id)
            generation = found.generation if found is not None else 0
        return ParkRecords(Table(os.environ["TABLE_NAME"])).read("t1", self.sid, interrupt_id, generation)

    def queued(self, kind: str) -> list[dict[str, Any]]:
        """Take every message off the work queue (the engine's kicks are played by `go`); keep `kind`."""
        sqs, url, found = WorkQueue().client, os.environ["WORK_QUEUE_URL"], []
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            for message in batch:
                body = json.loads(message["Body"])
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                if body.get("kind") == kind:
                    found.append(body)
        return found

    def go(self) -> None:
        inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                                 "turn_id": "turn-1",
                                                 "message": {"role": "user", "content": self.text}})
        self.sid = "ses-crash"
        self.retry(self._create, inp)
        self.engine({"kind": "kick"})
        self.play_state_machine()
        self.play_state_machine()
        iid = [i for i in Store().load("t1", self.sid).interrupts][0]  # type: ignore[union-attr]
        if self.text == TIMERS_TEXT:
            self.play_timers()
        if self.text == EXPIRY_TEXT:  # ParkBranch's States.Timeout instead of a resume
            self.engine({"kind": "wake", "interrupt_id": iid, "outcome": "expired"})
            self.engine({"kind": "kick"})
            return
        self.answer(iid)
        for _ in range(3):
            self.play_state_machine()
            self.engine({"kind": "kick"})

    def answer(self, iid: str) -> None:
        """The person's resume (retried like any client request)."""
        if self.schema:  # A1: a refused answer writes nothing, so it is no crash point
            with pytest.raises(Refusal, match="response_schema"):
                self.retry(resume, self.store, self.parking, self.caller, self.sid, iid, {"approved": "yes"})
        self.retry(resume, self.store, self.parking, self.caller, self.sid, iid, {"approved": True})

    def play_timers(self) -> None:
        """The timers (schedules) set for the interrupt fire, each message delivered twice."""
        for timer in Timers().pending():
            if timer.message["kind"] == "interrupt_timer":
                self.engine(timer.message)
                self.engine(timer.message)

    def _create(self, inp: ClientMessageInput) -> Any:
        """POST /v1/sessions with a client-chosen session id and turn id, so a retry is the same request."""
        state = Store().load("t1", self.sid)
        if state is None:
            from holdpoint.core.agent_config import AgentConfig
            from holdpoint.core.inputs import accept_turn, start_session
            from holdpoint.core.state import SessionState

            state = SessionState.new("t1", self.sid, "assistant", now=time.time(), identity={"id": "user-1"})
            start_session(state, AgentConfig.from_item(Store().get_agent("t1", "assistant") or {}))
            accept_turn(state, inp)
            self.store.commit(state)
            self.queue.kick("t1", self.sid, state.header.version)
            return
        sessions.submit(self.store, self.queue, self.caller, self.sid, inp)


def final_shape(run: CrashRun) -> dict[str, Any]:
    state = Store().load("t1", run.sid)
    assert state is not None
    events = sessions.events(Store(), run.caller, run.sid, 0, 1000)["events"]
    return {
        "messages": [(m["role"], m.get("content")) for m in (n.message for n in state.tree.active_path())],
        "nodes": len(state.tree.nodes),
        "calls": sorted((c.kind, c.status) for c in state.calls.values()),
        "interrupts": [(i.status, i.woken) for i in state.interrupts.values()],
        "events": Counter(e["type"] for e in events if not e["type"].startswith("decision.")),
        "seq_gapless": [e["seq"] for e in events] == list(range(1, len(events) + 1)),
        "resumed_ids": len({r["decision_id"] for r in run.log if r["trigger"]["type"] == "interrupt.resumed"}),
        "task_success_tokens": Counter(run.task_success),
    }


@pytest.mark.usefixtures("aws")
def test_clean_run_reference() -> None:
    run = CrashRun(None, "before")
    run.go()
    shape = final_shape(run)
    assert shape["messages"] == [("user", "Email Bob"), ("assistant", None), ("tool", "sent"),
                                 ("assistant", "Email sent.")]
    assert run.faults.count >= 15  # every write along the way is a crash point below


@pytest.fixture
def fresh_aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A function that opens a new, empty in-process AWS (one per crash point)."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)

    def open_aws() -> Any:
        from moto import mock_aws

        mock = mock_aws()
        mock.start()
        for key, value in make_resources().items():
            monkeypatch.setenv(key, value)
        return mock

    return open_aws


@pytest.mark.parametrize("text", ["Email Bob", "do two things", SCHEMA_TEXT, TIMERS_TEXT, EXPIRY_TEXT],
                         ids=["seed", "two-tools", "a1-schema", "a5-timers", "a5-expiry"])
@pytest.mark.parametrize("mode", ["before", "after"])
def test_crash_at_every_write_along_the_seed_example_repeats_nothing(fresh_aws: Any, mode: str, text: str) -> None:
    mock = fresh_aws()
    reference = CrashRun(None, mode, text)
    reference.go()
    expected, writes = final_shape(reference), reference.faults.count
    mock.stop()
    assert expected["messages"][-1] == ("assistant", "Email sent.")
    for n in range(1, writes + 1):
        mock = fresh_aws()
        try:
            run = CrashRun(n, mode, text)
            run.go()
            assert run.faults.fired, f"write #{n} never happened"
            shape = final_shape(run)
            context = f"crash {mode} write #{n}"
            assert shape["messages"] == expected["messages"], context
            assert shape["nodes"] == expected["nodes"], context
            assert shape["calls"] == expected["calls"], context
            assert shape["interrupts"] == expected["interrupts"], context
            assert shape["events"] == expected["events"], context
            assert shape["seq_gapless"], context
            assert shape["resumed_ids"] == 1, context
            assert all(count <= 2 for count in shape["task_success_tokens"].values()), context
        finally:
            mock.stop()


@pytest.mark.parametrize("mode", ["before", "after"])
@pytest.mark.parametrize("n", [1, 2], ids=["token-write", "send-task-success"])
def test_crash_around_a_park_message_after_the_resume_stores_one_token_and_ends_the_execution(
        fresh_aws: Any, mode: str, n: int) -> None:
    """The resume came first (no token to spend yet); the park message's conditional write (1) or
    its SendTaskSuccess (2) crashes, and SQS redelivers it."""
    mock = fresh_aws()
    try:
        run = CrashRun(None, mode)
        run.sid = "ses-crash"
        run.retry(run._create, ClientMessageInput.model_validate({
            "type": "client.message", "agent_id": "assistant", "turn_id": "turn-1",
            "message": {"role": "user", "content": run.text}}))
        run.engine({"kind": "kick"})
        [iid] = Store().load("t1", run.sid).interrupts  # type: ignore[union-attr]
        run.answer(iid)
        assert run.task_success == []  # nothing to end yet: the token has not landed
        run.faults.fail_at = run.faults.count + n
        token = f"token-{iid}"
        run.engine({"kind": "park", "interrupt_id": iid, "task_token": token})
        assert run.faults.fired
        assert run.record(iid).token == token  # type: ignore[union-attr]
        assert 1 <= run.task_success.count(token) <= 2 and set(run.task_success) == {token}
        for _ in range(2):  # ParkBranch ends; the wake is delivered and the turn runs to its end
            run.play_state_machine()
            run.engine({"kind": "kick"})
        shape = final_shape(run)
        assert shape["messages"][-1] == ("assistant", "Email sent.")
        assert shape["resumed_ids"] == 1 and shape["interrupts"] == [("resolved", True)]
    finally:
        mock.stop()


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize(("text", "expected"), [
    (TIMERS_TEXT, {"interrupt.reminded": 2, "interrupt.escalated": 1}),
    (EXPIRY_TEXT, {"interrupt.expired": 1}),
])
def test_a5_reference_runs_record_each_timer_and_the_expiry_once(text: str, expected: dict[str, int]) -> None:
    """The runs the crash test replays: every timer message is delivered twice, and counts once."""
    run = CrashRun(None, "before", text)
    run.go()
    shape = final_shape(run)
    assert {k: shape["events"][k] for k in expected} == expected
    assert shape["messages"][-1] == ("assistant", "Email sent.")
