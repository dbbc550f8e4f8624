"""The engine's SQS FIFO batches on the local stack (`holdpoint.aws.fifobatch`): a record the engine
cannot handle is reported failed and comes back until the queue's redrive moves it to the work DLQ,
while other sessions' steps keep flowing."""

from __future__ import annotations

import json
from typing import Any

from tests.stack import Api
from tests.waiting import wait_for


def test_engine_batch_failing_record_comes_back_then_dead_letters_over_http(api: Api, stack: Any,
                                                                             worker: Any) -> None:
    sqs = stack.client("sqs")
    url = stack.env["WORK_QUEUE_URL"]
    poison = {"kind": "no-such-kind", "tenant": "dev", "session_id": "s-poison"}
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(poison), MessageGroupId="s-poison",
                     MessageDeduplicationId="s-poison-1")
    sid = api.start()
    api.wait_status(sid, "interrupted")  # another session's group is not held up behind the failing record

    redrive = json.loads(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])
                         ["Attributes"]["RedrivePolicy"])
    dlq = sqs.get_queue_url(QueueName=redrive["deadLetterTargetArn"].rsplit(":", 1)[-1])["QueueUrl"]

    def dead() -> list[dict[str, Any]]:
        got = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
        return [m for m in got if json.loads(m["Body"]) == poison]

    # Reported failed, not deleted: it came back on each receive until the redrive moved it.
    wait_for(dead, "the failing record on the work DLQ", timeout=90)
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["ApproximateNumberOfMessages"] == "0"
