"""A kick refused after an input's commit (docs/OPERATIONS.md, "Failures AWS returns"): the client
got a 503 for an input that was recorded. Its retry with the same `Idempotency-Key` finds the
session and turn the first request recorded, records nothing twice, and sends the kick again."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.core.errors import Refusal
from holdpoint.core.messages import Kick
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.ports import Throttled
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from tests.harness import Harness


def message(text: str, **extra: Any) -> ClientMessageInput:
    return ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                              "message": {"role": "user", "content": text}, **extra})


class RefusingQueue:
    """The work queue with its first `refuse` kicks refused past the client's attempts."""

    def __init__(self, queue: Any, refuse: int) -> None:
        self.queue, self.refuse = queue, refuse

    def kick(self, tenant: str, session_id: str, version: int) -> None:
        if self.refuse:
            self.refuse -= 1
            raise Throttled("ThrottlingException: Rate exceeded")
        self.queue.kick(tenant, session_id, version)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.queue, name)


def kicks(h: Harness, sid: str) -> int:
    return sum(isinstance(m, Kick) and m.session_id == sid for m in h.queue.sent)


def test_idempotency_key_retry_after_a_refused_kick_finds_the_session_and_kicks_it(memory: Any) -> None:
    h = Harness()
    queue = RefusingQueue(h.queue, refuse=1)
    with pytest.raises(Throttled):
        sessions.submit(h.store, queue, h.caller, None, message("Email Bob"), idempotency_key="k-1")
    [sid] = [row.session_id for row in h.store.sessions("t1", 10, None, sessions.SessionFilters())[0]]
    assert kicks(h, sid) == 0  # the input is recorded, and nothing will run it
    again = sessions.submit(h.store, queue, h.caller, None, message("Email Bob"), idempotency_key="k-1")
    assert again.session_id == sid and again.known
    assert kicks(h, sid) == 1
    rows, _ = h.store.sessions("t1", 10, None, sessions.SessionFilters())
    assert [row.session_id for row in rows] == [sid]
    h.session_id = sid
    h.settle()
    assert h.view()["status"] == "interrupted"  # the seed: send_email parks on its confirmation


def test_idempotency_key_retry_of_an_input_kicks_its_turn_once_recorded(memory: Any) -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id
    queue = RefusingQueue(h.queue, refuse=1)
    with pytest.raises(Throttled):
        sessions.submit(h.store, queue, h.caller, h.session_id, message("Email Bob"), idempotency_key="k-2")
    turns = dict(h.state().turns)
    before = kicks(h, h.session_id)
    again = sessions.submit(h.store, queue, h.caller, h.session_id, message("Email Bob"), idempotency_key="k-2")
    assert again.known and h.state().turns.keys() == turns.keys()
    assert kicks(h, h.session_id) == before + 1


def test_idempotency_key_reused_for_another_request_is_a_409_naming_it(memory: Any) -> None:
    h = Harness()
    first = sessions.submit(h.store, h.queue, h.caller, None, message("Email Bob"), idempotency_key="k-3")
    with pytest.raises(Refusal) as err:
        sessions.submit(h.store, h.queue, h.caller, None, message("Email Bob", turn_id="other"),
                        idempotency_key="k-3")
    assert err.value.code == "conflict" and err.value.param == "Idempotency-Key"
    theirs = sessions.submit(h.store, h.queue, Caller("t1", "user-2", "client"), None, message("Email Bob"),
                             idempotency_key="k-3")
    assert theirs.session_id != first.session_id  # a key is its caller's: another subject's is another session


def test_backstop_a_kick_the_queue_refuses_becomes_a_timer_and_the_input_is_accepted(memory: Any) -> None:
    h = Harness()
    queue = RefusingQueue(h.queue, refuse=2)
    out = sessions.submit(h.store, queue, h.caller, None, message("Email Bob"), backstop=lambda: h.timers)
    assert not out.known
    [(key, (seconds, kick))] = h.timers.scheduled.items()
    assert isinstance(kick, Kick) and kick.session_id == out.session_id and seconds == sessions.BACKSTOP_SECS
    assert key[2] == f"kick/{h.store.load('t1', out.session_id).header.version}"  # type: ignore[union-attr]
    assert kicks(h, out.session_id) == 0
    h.session_id = out.session_id
    h.settle()  # what the timer's kick runs
    assert h.view()["status"] == "interrupted"


def test_backstop_refused_too_is_the_callers_503_and_the_keyed_resend_recovers(memory: Any) -> None:
    h = Harness()

    class Refusing:
        def schedule(self, seconds: float, message: Any, key: str) -> None:
            raise Throttled("ThrottlingException")

    queue = RefusingQueue(h.queue, refuse=1)
    with pytest.raises(Throttled):
        sessions.submit(h.store, queue, h.caller, None, message("Email Bob"), idempotency_key="k-4",
                        backstop=Refusing)
    again = sessions.submit(h.store, queue, h.caller, None, message("Email Bob"), idempotency_key="k-4",
                            backstop=Refusing)
    assert again.known and kicks(h, again.session_id) == 1


def test_backstop_an_interrupt_raised_through_the_api_whose_kick_is_refused_gets_a_timer(memory: Any) -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id
    queue = RefusingQueue(h.queue, refuse=1)
    out = sessions.raise_interrupt(h.store, queue, h.caller, h.session_id, reason="review", payload=None,
                                   global_=False, interrupt_id="int-1", expires_in=None, request_id="r-1",
                                   backstop=lambda: h.timers)
    assert not out.noop
    [(_, (_, kick))] = h.timers.scheduled.items()
    assert isinstance(kick, Kick) and kick.session_id == h.session_id


def test_idempotency_key_of_an_end_user_is_not_the_api_keys_of_the_same_name() -> None:
    """What a key derives is the caller's with its kind: the end user `ann` and the API key `ann`
    sending the same Idempotency-Key get two sessions, neither finding the other's."""
    key_ann, user_ann = Caller("dev", "ann", "client"), Caller("dev", "ann", "client", own_only=True)
    assert key_ann.principal() == "key:ann" and user_ann.principal() == "user:ann"
    inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                             "message": {"role": "user", "content": "hi"}})
    assert sessions.keyed(key_ann, None, inp, "k1")[0].turn_id != sessions.keyed(user_ann, None, inp, "k1")[0].turn_id
