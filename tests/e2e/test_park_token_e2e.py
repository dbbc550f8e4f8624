"""R13 and R7 for the task token over the local stack (moto executing ParkBranch): the token the
real execution sends is stored on the raise's park record (not on the interrupt item), and a
`park` message redelivered after the resume, or naming an interrupt or session that does not
exist, is handled (deleted from the queue, never retried) without changing anything.
In-process: tests/unit/test_park_token.py."""

from __future__ import annotations

import json
from typing import Any

from holdpoint.aws.queue import group_id
from tests.stack import Api, resumed_triggers, wait_execution
from tests.waiting import wait_for, wait_quiet


def interrupt_item(stack: Any, sid: str, iid: str, prefix: str = "I#", suffix: str = "") -> dict[str, Any] | None:
    got = stack.client("dynamodb").get_item(TableName=stack.env["TABLE_NAME"], ConsistentRead=True, Key={
        "PK": {"S": f"T#dev#S#{sid}"}, "SK": {"S": f"{prefix}{iid}{suffix}"}})
    item: dict[str, Any] | None = got.get("Item")
    return item


def token_item(stack: Any, sid: str, iid: str) -> dict[str, Any] | None:
    """The park record of the interrupt's raise now (generation 0's when there is no interrupt)."""
    interrupt = interrupt_item(stack, sid, iid) or {}
    generation = interrupt.get("generation", {}).get("N", "0")
    return interrupt_item(stack, sid, iid, "G#", f"#{generation}")


def test_r13_r7_the_token_is_stored_and_stray_or_repeated_park_messages_change_nothing(
        api: Api, stack: Any, worker: Any) -> None:
    _, seen = worker
    sid = api.start()
    iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")
    stored = wait_for(lambda: (token_item(stack, sid, iid) or {}).get("task_token"), "the task token", 60)
    assert stored["S"] not in json.dumps(interrupt_item(stack, sid, iid) or {})
    assert api.resume(sid, iid, {"approved": True}).json()["noop"] is False
    api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    events = api.events(sid)
    # The execution's own park message again (its token spent now), and two that name nothing.
    sqs = stack.client("sqs")
    for n, (session, interrupt) in enumerate([(sid, iid), (sid, "int-unknown"), ("ses-unknown", "int-unknown")]):
        body = {"kind": "park", "tenant": "dev", "session_id": session, "interrupt_id": interrupt,
                "task_token": stored["S"]}
        sqs.send_message(QueueUrl=stack.env["WORK_QUEUE_URL"], MessageBody=json.dumps(body),
                         MessageGroupId=group_id("dev", session), MessageDeduplicationId=f"park-again-{n}")
    wait_quiet(stack)  # every message handled and deleted: none is left in flight to be retried
    assert (token_item(stack, sid, iid) or {}).get("task_token") == stored
    assert interrupt_item(stack, sid, "int-unknown") is None and token_item(stack, sid, "int-unknown") is None
    assert interrupt_item(stack, "ses-unknown", "int-unknown") is None
    assert token_item(stack, "ses-unknown", "int-unknown") is None
    assert api.events(sid) == events
    assert api.view(sid)["status"] == "done"
    assert len(resumed_triggers(seen, sid)) == 1
