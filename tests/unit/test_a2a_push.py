"""A2A push configs' pure translations (PROTOCOL.md §8): what is kept, what is shown (never the
token or the credentials), the headers a push carries, and which event-log entries push a task."""

from __future__ import annotations

from holdpoint.core import a2a


def test_a2a_push_config_kept_with_defaults_and_shown_without_secrets() -> None:
    spec = a2a.PushSpec.model_validate({"url": "https://r.example/hook", "token": "tok",
                                        "authentication": {"scheme": "Bearer", "credentials": "cred"}})
    kept = a2a.stored_config(spec, "turn-1")
    assert kept["id"] == "turn-1" and kept["token"] == "tok"
    shown = a2a.config_out("ses-1", {**kept, "turn_id": "turn-1"})
    assert shown == {"id": "turn-1", "taskId": "ses-1~turn-1", "url": "https://r.example/hook",
                     "authentication": {"scheme": "Bearer"}}


def test_a2a_push_headers_carry_the_token_and_authorization_as_the_sdk_sends_them() -> None:
    assert a2a.push_headers({"token": "tok", "authentication": {"scheme": "Basic", "credentials": "abc"}}) == {
        a2a.TOKEN_HEADER: "tok", "Authorization": "Basic abc"}
    assert a2a.push_headers({"authentication": {"scheme": "Bearer"}}) == {}


def test_a2a_push_only_turn_ends_and_parks_push_a_task() -> None:
    from holdpoint.core.state import SessionState

    state = SessionState.new("dev", "ses-1", "assistant", now=0.0)
    assert a2a.pushed_turn(state, {"type": "message.added", "data": {}}) is None
    assert a2a.pushed_turn(state, {"type": "turn.finished", "data": {"turn_id": "t-1"}}) == "t-1"
    assert a2a.pushed_turn(state, {"type": "turn.failed", "data": {"turn_id": "t-2"}}) == "t-2"
    assert a2a.pushed_turn(state, {"type": "session.interrupted", "data": {"interrupt_id": "nope"}}) is None
    assert sorted(a2a.PUSHED_STATES) == ["TASK_STATE_CANCELED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
                                         "TASK_STATE_INPUT_REQUIRED"]
