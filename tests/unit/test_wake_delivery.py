"""R8, the wake delivers in the step that commits it (docs/ARCHITECTURE.md): a resume's wake is
applied in memory, the worker gets the `interrupt.resumed` it queued, and the wake commits with
the delivery's outcome in one commit, whatever the outcome (an answer, 202, unavailable, an
invalid answer, a protocol error, a lost race). A crash before that commit redelivers the same
decision; a worker that answers 202 may submit before the wake is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.core import engine, wire
from holdpoint.core import interrupts as rules
from holdpoint.core.protocols.client import ClientMessageInput, ClientMessagesInput
from holdpoint.core.protocols.worker_actions import WorkerSubmitBody
from holdpoint.core.state import SessionState
from holdpoint.ports import WorkerDeferred, WorkerUnavailable
from holdpoint.services import sessions, worker_answers
from holdpoint.services.caller import Caller
from holdpoint.services.resume import resume
from tests.harness import Harness, seed_worker

APPROVED = {"approved": True}
Answer = Any  # what the worker does with `interrupt.resumed`: a response, or a callable raising


class Crash(Exception):
    """The engine died here."""


@pytest.fixture(autouse=True)
def fresh(aws: dict[str, str]) -> Iterator[None]:
    assembly.reset()
    yield
    assembly.reset()


class Run:
    """The seed example parked on its interrupt; `on_resumed(request)` answers `interrupt.resumed`.
    Records what the store held when the worker got it, and the event types of every commit."""

    def __init__(self, on_resumed: Answer = None) -> None:
        seed = seed_worker()
        self.resumed: list[dict[str, Any]] = []
        self.stored_then: list[tuple[bool, bool]] = []  # (interrupt woken, decision recorded)
        self.commits: list[list[str]] = []

        def worker(req: dict[str, Any]) -> Any:
            if req["trigger"]["type"] != "interrupt.resumed":
                return seed(req)
            self.resumed.append(req)
            stored = self.h.state()
            self.stored_then.append((stored.interrupts[self.iid].woken, req["decision_id"] in stored.decisions))
            if callable(on_resumed):
                return on_resumed(req)
            return on_resumed if on_resumed is not None else seed(req)

        self.h = Harness(worker)
        self.h.say("Email Bob")
        self.iid = self.h.open_interrupt()["interrupt_id"]
        commit = self.h.store.commit

        def recording(state: SessionState) -> int:
            self.commits.append([e.type for e in state.events])
            return commit(state)

        self.h.store.commit = recording  # type: ignore[method-assign]

    def wake_commit(self) -> list[str]:
        [events] = [c for c in self.commits if "session.interrupt_resumed" in c]
        return events

    def decision(self) -> Any:
        [req] = {r["decision_id"]: r for r in self.resumed}.values()
        return self.h.state().decisions[req["decision_id"]]

    def count(self, name: str) -> int:
        return self.h.runner.counters.counts.get(name, 0)


def test_r8_the_wake_and_the_answer_to_interrupt_resumed_commit_together() -> None:
    run = Run()
    run.h.resume(run.iid, APPROVED)
    assert run.stored_then == [(False, False)]  # nothing of the wake was recorded while the worker had it
    wake = run.wake_commit()
    assert wake.index("session.interrupt_resumed") < wake.index("decision.delivered")
    assert "call.settled" in wake  # the answer (`tool.result`) in the same commit
    assert (run.decision().status, run.decision().via) == ("delivered", "worker")
    assert run.count("wakes_delivered_in_step") == 1 and run.count("interrupts_resumed") == 1
    assert run.h.view()["status"] == "done" and run.h.view()["messages"][-1]["content"] == "Email sent."


def test_r8_a_crash_before_the_commit_redelivers_the_same_decision_and_doubles_nothing() -> None:
    run = Run()
    commit = run.h.store.commit
    crashed: list[bool] = []

    def crashing(state: SessionState) -> int:
        if not crashed and any(e.type == "session.interrupt_resumed" for e in state.events):
            crashed.append(True)
            raise Crash("after the worker answered, before the commit")
        return commit(state)

    run.h.store.commit = crashing  # type: ignore[method-assign]
    version = run.h.state().header.version
    with pytest.raises(Crash):
        run.h.resume(run.iid, APPROVED)
    state = run.h.state()
    assert state.header.version == version and not state.interrupts[run.iid].woken  # nothing recorded
    run.h.wake(run.iid, "resumed")  # SQS redelivers the wake
    first, again = run.resumed
    assert first["decision_id"] == again["decision_id"] and first["attempts"] == again["attempts"] == 1
    assert len(run.h.events("session.interrupt_resumed")) == 1
    assert [e["data"]["decision_id"] for e in run.h.events("decision.delivered")].count(first["decision_id"]) == 1
    assert run.h.view()["status"] == "done" and run.h.view()["messages"][-1]["content"] == "Email sent."


def test_r8_a_worker_answering_202_commits_the_wake_with_the_deferral() -> None:
    def later(_: dict[str, Any]) -> Any:
        raise WorkerDeferred("later")

    run = Run(later)
    run.h.resume(run.iid, APPROVED)
    wake = run.wake_commit()
    assert "session.interrupt_resumed" in wake and "decision.deferred" in wake
    assert run.h.state().interrupts[run.iid].woken
    assert (run.decision().status, run.decision().attempts) == ("pending", 1)
    assert run.h.view()["status"] == "running"


def test_r8_a_worker_answering_202_may_submit_before_the_wake_is_recorded() -> None:
    submitted: list[dict[str, Any]] = []
    backend = Caller("t1", "backend", "machine")
    run: Run

    def submit_then_defer(req: dict[str, Any]) -> Any:
        body = WorkerSubmitBody.model_validate({"session_id": req["session_id"], "decision_id": req["decision_id"],
                                                **seed_worker()(req)})
        submitted.append(worker_answers.submit(run.h.store, run.h.queue, backend, body))
        raise WorkerDeferred("answered already")

    run = Run(submit_then_defer)
    run.h.resume(run.iid, APPROVED)
    assert [s.noop for s in submitted] == [False]
    assert (run.decision().status, run.decision().via) == ("delivered", "submit")
    assert len(run.h.events("session.interrupt_resumed")) == 1 and not run.h.events("decision.deferred")
    run.h.settle()
    assert run.h.view()["status"] == "done" and run.h.view()["messages"][-1]["content"] == "Email sent."


def test_r8_a_submit_for_a_decision_no_wake_will_queue_is_still_404() -> None:
    run = Run()
    resume(run.h.store, run.h.parking, run.h.caller, run.h.session_id or "", run.iid, APPROVED)
    state = run.h.state()
    interrupt = state.interrupts[run.iid]
    body = {"session_id": run.h.session_id, "actions": []}
    other = state.decision_id(("resumed", run.iid, interrupt.generation + 1))
    with pytest.raises(Exception, match="not found") as refused:
        worker_answers.submit(run.h.store, run.h.queue, Caller("t1", "b", "machine"),
                              WorkerSubmitBody.model_validate({**body, "decision_id": other}))
    assert getattr(refused.value, "param", None) == "decision_id"
    assert not run.h.state().interrupts[run.iid].woken
    assert state.decision_id(engine.resumed_key(interrupt)) not in run.h.state().decisions


def test_r8_an_unavailable_worker_commits_the_wake_with_the_retry() -> None:
    answers = iter([WorkerUnavailable("down")])

    def flaky(req: dict[str, Any]) -> Any:
        failure = next(answers, None)
        if failure is not None:
            raise failure
        return seed_worker()(req)

    run = Run(flaky)
    run.h.resume(run.iid, APPROVED)
    wake = run.wake_commit()
    assert "session.interrupt_resumed" in wake and "decision.retry" in wake
    assert run.count("worker_failures") == 1
    decision = run.decision()
    assert (decision.status, decision.attempts) == ("pending", 1) and decision.not_before


@pytest.mark.parametrize(("answer", "param"), [
    ({"actions": "nope"}, "actions"),  # not a decision response at all
    ({"actions": [{"type": "tool.result", "id": "call-nope", "result": "x"}]}, "actions[0].id"),  # ProtocolError
], ids=["invalid", "protocol-error"])
def test_r8_a_broken_answer_commits_the_wake_with_the_failed_decision(answer: dict[str, Any], param: str) -> None:
    run = Run(answer)
    run.h.resume(run.iid, APPROVED)
    assert run.h.state().interrupts[run.iid].woken
    assert len(run.h.events("session.interrupt_resumed")) == 1
    [failed] = run.h.events("decision.failed")
    assert failed["data"]["decision_id"] == run.decision().id and failed["data"]["error"]["param"] == param
    assert run.decision().status == "failed"


def test_r8_a_commit_lost_to_another_writer_reapplies_the_wake_and_the_answer() -> None:
    run: Run

    def meanwhile(req: dict[str, Any]) -> Any:
        inp = ClientMessageInput.model_validate({"type": "client.message", "queue": True,
                                                 "message": {"role": "user", "content": "say hi"}})
        sessions.submit(run.h.store, run.h.queue, run.h.caller, run.h.session_id, inp)
        return seed_worker()(req)

    run = Run(meanwhile)
    run.h.resume(run.iid, APPROVED)
    assert run.count("commit_conflicts") >= 1
    assert len(run.h.events("session.interrupt_resumed")) == 1
    assert (run.decision().status, run.decision().via) == ("delivered", "worker")
    run.h.settle()
    assert run.h.view()["status"] == "done"
    contents = [m.get("content") for m in run.h.view()["messages"]]
    assert contents.index("Email sent.") < contents.index("Hi!")  # the queued message ran after the resumed turn


def test_r8_an_expiry_commits_its_wake_before_the_worker_gets_the_decision() -> None:
    """A submit can rebuild a resume's wake from the stored resolution, not an expiry's: an expiry
    keeps two steps."""
    run = Run()
    run.h.wake(run.iid, "expired")
    assert run.stored_then == [(True, True)]
    assert run.count("wakes_delivered_in_step") == 0 and run.count("interrupts_expired") == 1
    assert len(run.h.events("session.interrupt_resumed")) == 1


def test_r8_a_branch_abandoned_while_the_worker_has_it_drops_the_answer() -> None:
    """The reloaded wake follows R8 on the state it commits to: the interrupt no longer parks the
    active branch, so no `interrupt.resumed` is recorded and the worker's answer changes nothing."""
    run: Run

    def abandon(req: dict[str, Any]) -> Any:
        inp = ClientMessagesInput.model_validate({"type": "client.messages", "messages": [
            {"role": "user", "content": "never mind, just say hi"}]})
        sessions.submit(run.h.store, run.h.queue, run.h.caller, run.h.session_id, inp)
        return seed_worker()(req)

    run = Run(abandon)
    run.h.resume(run.iid, APPROVED)
    state = run.h.state()
    [req] = run.resumed
    assert run.count("commit_conflicts") >= 1  # the wake and the answer reloaded after the client's commit
    assert req["decision_id"] not in state.decisions and state.interrupts[run.iid].woken
    assert len(run.h.events("session.interrupt_resumed")) == 1
    run.h.settle()
    contents = [m.get("content") for m in run.h.view()["messages"]]
    assert "sent" not in contents and contents[-1] == "Hi!"


def test_r8_the_resumed_decision_names_the_answer_and_delivery_fills_it_in() -> None:
    """The answer is stored once, on the interrupt: the `interrupt.resumed` decision names the
    interrupt and generation, and the worker still gets the payload in the trigger."""
    run = Run()
    run.h.resume(run.iid, APPROVED)
    interrupt = run.h.state().interrupts[run.iid]
    stored = run.decision().trigger
    assert stored == {"type": "interrupt.resumed", "interrupt_id": run.iid, "generation": interrupt.generation}
    [req] = run.resumed
    assert req["trigger"]["payload"] == interrupt.resolution
    assert interrupt.resolution == APPROVED


def test_r8_a_resume_waiting_for_delivery_keeps_its_answer_when_the_id_is_raised_again() -> None:
    """A closed id raised again replaces the answer on the interrupt: an `interrupt.resumed` of the
    earlier generation still pending (here deferred by a 202) takes its own copy first."""
    def later(_: dict[str, Any]) -> Any:
        raise WorkerDeferred("later")

    run = Run(later)
    run.h.resume(run.iid, APPROVED)
    state = run.h.state()
    answer = state.interrupts[run.iid].resolution
    decision = run.decision()
    assert rules.raise_interrupt(state, interrupt_id=run.iid, reason="again", payload=None, origin="worker",
                                 anchor=state.tree.head_id, expires_in=None, call_id=None, turn_id=None,
                                 raised_by="another-step") is not None
    assert state.interrupts[run.iid].resolution is None
    pending = state.decisions[decision.id]
    assert pending.trigger["payload"] == answer and pending in state.dirty.values()
    assert wire.trigger(state, pending).wire()["payload"] == answer
