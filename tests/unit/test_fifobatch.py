"""`holdpoint.aws.fifobatch`: an SQS FIFO batch answered with Lambda's partial batch response. The
first failing record stops its message group: it and every later record of the group are reported,
in order, so SQS hands them back in the same order; other groups' records still run (one session's
poison record holds no other session); a batch that failed whole fails the invocation."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.errors import EntireBatchFailed
from holdpoint.aws.fifobatch import Record, process_fifo_batch, receive_count


class _Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []
        self.levels: list[str] = []

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.levels.append("WARNING")
        self.lines.append((msg, kwargs.get("extra") or {}))

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self.levels.append("ERROR")
        self.lines.append((msg, kwargs.get("extra") or {}))


def _event(*ids: str, groups: str = "") -> dict[str, Any]:
    """Records `ids`, of message group `g` unless `groups` names each one's group ("ab" for two)."""
    return {"Records": [{"messageId": i, "body": f'{{"n": "{i}"}}',
                         "attributes": {"ApproximateReceiveCount": "2", "MessageGroupId": groups[n] if groups else "g"}}
                        for n, i in enumerate(ids)]}


def test_fifo_batch_all_handled_reports_no_failure() -> None:
    seen: list[str] = []
    out = process_fifo_batch(_event("a", "b", "c"), lambda r: seen.append(r["messageId"]), _Log())
    assert out == {"batchItemFailures": []}
    assert seen == ["a", "b", "c"]


def test_fifo_batch_first_failure_fails_it_and_everything_after_unrun() -> None:
    seen: list[str] = []

    def handle(record: Record) -> None:
        seen.append(record["messageId"])
        if record["messageId"] == "b":
            raise RuntimeError("store busy")

    log = _Log()
    out = process_fifo_batch(_event("a", "b", "c", "d"), handle, log)
    assert out == {"batchItemFailures": [{"itemIdentifier": "b"}, {"itemIdentifier": "c"}, {"itemIdentifier": "d"}]}
    assert seen == ["a", "b"]  # c and d never ran: they come back after b, in order
    assert log.lines == [("record failed; it and the rest of its group come back",
                          {"message_id": "b", "error": "RuntimeError: store busy"})]
    assert log.levels == ["ERROR"]  # issue 32: the cause shows where an operator looks


def test_fifo_batch_an_aws_refusal_is_a_warning_not_an_error() -> None:
    from holdpoint.ports import Throttled

    def handle(record: Record) -> None:
        raise Throttled("ProvisionedThroughputExceededException")

    log = _Log()
    process_fifo_batch(_event("a", "b", groups="ab"), lambda r: None if r["messageId"] == "a" else handle(r), log)
    assert log.levels == ["WARNING"]


def test_fifo_batch_that_fails_whole_fails_the_invocation() -> None:
    def handle(record: Record) -> None:
        raise ValueError("bad body")

    with pytest.raises(EntireBatchFailed, match="all 2 records failed"):
        process_fifo_batch(_event("a", "b"), handle, _Log())


def test_fifo_batch_empty_event_is_no_failure() -> None:
    assert process_fifo_batch({"Records": []}, lambda r: None, _Log()) == {"batchItemFailures": []}


def test_receive_count_is_the_attribute_as_a_number() -> None:
    assert receive_count(_event("a")["Records"][0]) == 2
    assert receive_count({"messageId": "x", "attributes": {}}) == 1


def test_fifo_batch_a_failing_record_stops_only_its_own_group() -> None:
    """A poison record of one session (say, another tenant's worker URL that breaks the HTTP
    client) fails the later records of its group, never another group's."""
    seen: list[str] = []

    def handle(record: Record) -> None:
        seen.append(record["messageId"])
        if record["messageId"] == "a1":
            raise UnicodeEncodeError("ascii", "caf\u00e9", 3, 4, "ordinal not in range(128)")

    out = process_fifo_batch(_event("a1", "b1", "a2", "b2", groups="abab"), handle, _Log())
    assert out == {"batchItemFailures": [{"itemIdentifier": "a1"}, {"itemIdentifier": "a2"}]}
    assert seen == ["a1", "b1", "b2"]
