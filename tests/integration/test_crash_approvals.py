"""Crash injection at A2's write points (docs/SECURITY.md): a quorum of two answered through crashes
before and after every write, including the new one (an answer recorded without resolving), loses
and repeats nothing: the same two answers, one resolution, one `interrupt.resumed`."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.store import Store
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Resumed, resume
from tests.harness import SEND_EMAIL_SCRIPT, TOOLS
from tests.integration.test_crash import CrashRun, final_shape, fresh_aws  # noqa: F401 (a fixture)

QUORUM = {"subjects": ["ann", "bob"], "quorum": 2}


class QuorumRun(CrashRun):
    """The seed example under a quorum of two: Ann answers (recorded), answers again (a no-op),
    Bob completes the quorum."""

    def __init__(self, fail_at: int | None, mode: str) -> None:
        super().__init__(fail_at, mode)
        Store().put_agent("t1", "assistant", {"worker": {"python": "crash-seed"}, "tools": TOOLS, "approval": QUORUM,
                                              "llm": {"provider": "scripted", "script": SEND_EMAIL_SCRIPT}})
        self.outcomes: list[Resumed] = []

    def answer(self, iid: str) -> None:
        for subject in ("ann", "ann", "bob"):
            self.outcomes.append(self.retry(self.answer_as, subject, iid))

    def answer_as(self, subject: str, iid: str) -> Resumed:
        return resume(self.store, self.parking, Caller("t1", subject, "client"), self.sid, iid, {"approved": True},
                      comment=f"from {subject}")


def quorum_shape(run: QuorumRun) -> dict[str, Any]:
    state = Store().load("t1", run.sid)
    assert state is not None
    [interrupt] = state.interrupts.values()
    return {**final_shape(run), "answers": [(a.subject, a.status, a.comment) for a in interrupt.approvals],
            "resolution": interrupt.resolution, "delivered": interrupt.delivery}


@pytest.mark.parametrize("mode", ["before", "after"])
def test_a2_crash_at_every_write_of_a_quorum_repeats_nothing(fresh_aws: Any, mode: str) -> None:  # noqa: F811
    mock = fresh_aws()
    reference = QuorumRun(None, mode)
    reference.go()
    expected, writes = quorum_shape(reference), reference.faults.count
    mock.stop()
    assert expected["messages"][-1] == ("assistant", "Email sent.")
    assert expected["answers"] == [("ann", "approved", "from ann"), ("bob", "approved", "from bob")]
    assert [o.noop for o in reference.outcomes] == [False, True, False]
    for n in range(1, writes + 1):
        mock = fresh_aws()
        try:
            run = QuorumRun(n, mode)
            run.go()
            assert run.faults.fired, f"write #{n} never happened"
            shape = quorum_shape(run)
            context = f"crash {mode} write #{n}"
            for key in ("messages", "nodes", "calls", "interrupts", "events", "answers"):
                assert shape[key] == expected[key], (context, key, shape[key], expected[key])
            assert (shape["resolution"], shape["delivered"]) == (expected["resolution"], "delivered"), context
            assert shape["seq_gapless"] and shape["resumed_ids"] == 1, context
            assert all(count <= 2 for count in shape["task_success_tokens"].values()), context
        finally:
            mock.stop()
