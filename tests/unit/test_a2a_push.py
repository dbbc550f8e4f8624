"""A2A push configs' pure translations (PROTOCOL.md §8): what is kept, what is shown (never the
token or the credentials), the headers a push carries, and which event-log entries push a task."""

from __future__ import annotations

from dataclasses import replace

from holdpoint.bridges.a2a import models
from holdpoint.bridges.a2a import translation as a2a
from holdpoint.core.push import PushAuth, PushRecord


def test_a2a_push_config_kept_with_defaults_and_shown_without_secrets() -> None:
    spec = models.PushSpec.model_validate({"url": "https://r.example/hook", "token": "tok",
                                        "authentication": {"scheme": "Bearer", "credentials": "cred"}})
    kept = a2a.stored_config(spec, "turn-1")
    assert kept == PushRecord("turn-1", "https://r.example/hook", "tok", PushAuth("Bearer", "cred"))
    assert kept.body() == {"id": "turn-1", "url": "https://r.example/hook", "token": "tok",
                           "authentication": {"scheme": "Bearer", "credentials": "cred"}}
    assert PushRecord.of(kept.body(), "turn-1") == replace(kept, turn_id="turn-1")
    shown = a2a.config_out("ses-1", replace(kept, turn_id="turn-1"))
    assert shown == {"id": "turn-1", "taskId": "ses-1~turn-1", "url": "https://r.example/hook",
                     "authentication": {"scheme": "Bearer"}}


def test_a2a_push_headers_carry_the_token_and_authorization_as_the_sdk_sends_them() -> None:
    assert a2a.push_headers(PushRecord("c1", "https://r.example", "tok", PushAuth("Basic", "abc"))) == {
        a2a.TOKEN_HEADER: "tok", "Authorization": "Basic abc"}
    assert a2a.push_headers(PushRecord("c1", "https://r.example", auth=PushAuth("Bearer"))) == {}


def test_a2a_push_only_turn_ends_and_parks_push_a_task() -> None:
    from holdpoint.core.state import SessionState

    state = SessionState.new("dev", "ses-1", "assistant", now=0.0)
    assert a2a.pushed_turn(state, {"type": "message.added", "data": {}}) is None
    assert a2a.pushed_turn(state, {"type": "turn.finished", "data": {"turn_id": "t-1"}}) == "t-1"
    assert a2a.pushed_turn(state, {"type": "turn.failed", "data": {"turn_id": "t-2"}}) == "t-2"
    assert a2a.pushed_turn(state, {"type": "session.interrupted", "data": {"interrupt_id": "nope"}}) is None
    assert sorted(a2a.PUSHED_STATES) == ["TASK_STATE_CANCELED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
                                         "TASK_STATE_INPUT_REQUIRED"]


class _Interfering:
    """A DynamoDB client whose first `interfere` transactions are cancelled by another writer
    (`TransactionConflict`), as DynamoDB cancels concurrent transactions on one count item."""

    def __init__(self, interfere: int, reasons: tuple[str, str] = ("None", "TransactionConflict")) -> None:
        self.interfere, self.reasons, self.sent = interfere, reasons, 0

    def transact_write_items(self, TransactItems: list[dict[str, object]]) -> None:  # noqa: N803 - boto3's name
        from holdpoint.aws.clients import Refused  # what Holdpoint's DynamoDB client raises for it

        self.sent += 1
        if self.sent <= self.interfere:
            raise Refused({"Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                           "CancellationReasons": [{"Code": c} for c in self.reasons]}, "TransactWriteItems")


def test_quota_a2a_push_config_write_interfered_with_is_sent_again_then_refused_as_busy() -> None:
    import pytest

    from holdpoint.aws.pushconfigs import ATTEMPTS, PushConfigLog
    from holdpoint.ports import Throttled

    config = PushRecord("c1", "https://r.example/hook")
    client = _Interfering(2)
    assert PushConfigLog("t", client).put("dev", "ses-1", "turn-1", config, 10) is True and client.sent == 3
    client = _Interfering(1)
    PushConfigLog("t", client).delete("dev", "ses-1", "turn-1", "c1")
    assert client.sent == 2
    with pytest.raises(Throttled):  # a 503 with Retry-After at the edge
        PushConfigLog("t", _Interfering(ATTEMPTS)).put("dev", "ses-1", "turn-1", config, 10)
    full = _Interfering(1, ("None", "ConditionalCheckFailed"))
    assert PushConfigLog("t", full).put("dev", "ses-1", "turn-1", config, 10) is False and full.sent == 1
