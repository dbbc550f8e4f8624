"""Writers racing on one session: losers back off and retry, so a burst of inputs is accepted
whole (CI once saw a 409 from five concurrent queued messages, when retries were immediate)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from holdpoint.aws.store import Conflict
from holdpoint.core.errors import Refusal
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.core.state import SessionState
from holdpoint.services import contention, sessions
from tests.harness import Harness


def queued(text: str) -> ClientMessageInput:
    return ClientMessageInput.model_validate(
        {"type": "client.message", "queue": True, "message": {"role": "user", "content": text}})


def test_backoff_grows_then_caps() -> None:
    bounds = [contention.backoff(a) for a in range(contention.ATTEMPTS)]
    assert bounds == sorted(bounds) and bounds[0] == contention.BASE_SECS
    assert bounds[-1] == contention.CAP_SECS
    assert sum(bounds) < 10  # inside API Gateway's 29 s integration timeout with room to spare


def test_a_commit_lost_more_times_than_the_old_retry_limit_still_lands(aws: Any, monkeypatch: Any) -> None:
    h = Harness()
    h.say("say hi")
    real, lost, slept = h.store.commit, [0], []

    def lose_ten(state: SessionState) -> None:
        if lost[0] < 10:  # another writer won: its version is newer than ours
            lost[0] += 1
            raise Conflict("ConditionalCheckFailed")
        real(state)

    monkeypatch.setattr(h.store, "commit", lose_ten)
    monkeypatch.setattr(contention.time, "sleep", slept.append)
    out = sessions.submit(h.store, h.queue, h.caller, h.session_id, queued("say hi later"))
    assert out.turn_id and lost[0] == 10
    assert len(slept) == 10 and all(0 <= s <= contention.backoff(i) for i, s in enumerate(slept))


def test_a_writer_that_always_loses_gets_a_409_and_records_nothing(aws: Any, monkeypatch: Any) -> None:
    h = Harness()
    h.say("say hi")
    before = h.state().header.version

    def always_lose(state: SessionState) -> None:
        raise Conflict("ConditionalCheckFailed")

    monkeypatch.setattr(h.store, "commit", always_lose)
    monkeypatch.setattr(contention.time, "sleep", lambda s: None)
    with pytest.raises(Refusal) as err:
        sessions.submit(h.store, h.queue, h.caller, h.session_id, queued("never"))
    assert err.value.code == "conflict"
    monkeypatch.undo()
    assert h.state().header.version == before


def test_concurrent_queued_messages_are_all_accepted_in_one_tree(aws: Any) -> None:
    h = Harness()
    h.say("say hi")
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda i: sessions.submit(h.store, h.queue, h.caller, h.session_id,
                                                          queued(f"say hi #{i}")), range(8)))
    assert len({a.turn_id for a in answers}) == 8
    h.settle()
    users = [m["content"] for m in h.view()["messages"] if m["role"] == "user"]
    assert sorted(users[1:]) == sorted(f"say hi #{i}" for i in range(8))
