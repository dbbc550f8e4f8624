"""A customer's own Step Functions workflow waits for a person (PROTOCOL.md §10, sdk's
`integrations.step_functions`), on the local stack with moto executing the state machine: its
`sqs:sendMessage.waitForTaskToken` task hands its token and the approval to ask to a bridge queue;
the bridge (the SDK's `task_handler`, an SQS-triggered Lambda run by the local stack's event source
mapping) raises it in Holdpoint; nothing runs while a person decides; Holdpoint completes the token
(the answers as the task's output, or `Holdpoint.Denied` with the answers as the cause, which the
workflow's `Catch` takes). Approved, denied, a quorum of two, an expiry that denies, and the bridge's
message delivered twice. Select with `pytest -k step_functions_wait`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint_sdk.client import Client
from holdpoint_sdk.integrations.step_functions import task_handler
from tests.customer import CustomerFunction, triggered_by
from tests.e2e.test_approver_policies_e2e import approver
from tests.stack import Api
from tests.waiting import wait_for

ASK = {"interrupt_id": "pay", "reason": "approve", "payload": {"message": "Pay the invoice?", "amount.$": "$.amount"},
       "action": {"tool": "pay", "arguments": {"amount.$": "$.amount"}}}


def definition(queue_url: str, **asked: Any) -> str:
    """Ask (through the bridge), then pay; a refusal goes to `Refused`, as the customer's Catch says."""
    return json.dumps({"StartAt": "Ask", "States": {
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": queue_url, "MessageBody": {
                    "task_token.$": "$$.Task.Token", "run_id.$": "$$.Execution.Name", "agent_id": "payments",
                    "target": "workflow", "state": {"amount.$": "$.amount"}, "interrupts": [{**ASK, **asked}]}},
                "TimeoutSeconds": 600, "ResultPath": "$.approval", "Next": "Pay",
                "Catch": [{"ErrorEquals": ["Holdpoint.Denied", "Holdpoint.Cancelled"], "ResultPath": "$.refusal",
                           "Next": "Refused"}]},
        "Pay": {"Type": "Pass", "Result": "paid", "ResultPath": "$.outcome", "End": True},
        "Refused": {"Type": "Pass", "Result": "not paid", "ResultPath": "$.outcome", "End": True}}})


@pytest.fixture
def bridge(stack: Any, api: Api) -> Iterator[tuple[str, CustomerFunction]]:
    """The agent with its Step Functions target, and the customer's bridge queue with its function."""
    api.ok("PUT", "/v1/agents/payments", {"run_targets": {"workflow": {"step_functions": True}}})
    url = stack.client("sqs").create_queue(QueueName=f"bridge-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    with triggered_by(stack, url, task_handler(Client(stack.base_url, stack.api_key)), "bridge") as function:
        yield url, function


def workflow(stack: Any, queue_url: str, **asked: Any) -> tuple[Any, str, str]:
    """The customer's state machine (its role may send to the bridge queue), started: its run id."""
    sfn, iam = stack.client("stepfunctions"), stack.client("iam")
    name = uuid.uuid4().hex[:8]
    queue_arn = stack.client("sqs").get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                      "Principal": {"Service": "states.amazonaws.com"}}]}
    role = iam.create_role(RoleName=f"workflow-{name}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    may_send = {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue_arn}
    iam.put_role_policy(RoleName=f"workflow-{name}", PolicyName="bridge",
                        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [may_send]}))
    machine = sfn.create_state_machine(name=f"pay-{name}", definition=definition(queue_url, **asked),
                                       roleArn=role)["stateMachineArn"]
    run_id = f"exec-{name}"
    execution = sfn.start_execution(stateMachineArn=machine, name=run_id, input=json.dumps({"amount": 120}))
    return sfn, str(execution["executionArn"]), run_id


def asked(api: Api, run_id: str) -> dict[str, Any]:
    """The run the bridge raised, once it has."""
    return wait_for(lambda: api.ok("GET", f"/v1/runs/{run_id}") if api.req("GET", f"/v1/runs/{run_id}").ok
                    else None, "the bridge to raise the run")


def finished(sfn: Any, arn: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = sfn.describe_execution(executionArn=arn)
        return None if found["status"] == "RUNNING" else dict(found)

    return wait_for(done, "the customer's execution to finish", 60)


@pytest.mark.parametrize(("approve", "outcome"), [(True, "paid"), (False, "not paid")])
def test_step_functions_wait_completes_with_the_answer(stack: Any, api: Api, bridge: tuple[str, CustomerFunction],
                                                       approve: bool, outcome: str) -> None:
    sfn, execution, run_id = workflow(stack, bridge[0])
    run = asked(api, run_id)
    [interrupt] = run["interrupts"]
    assert (interrupt["status"], interrupt["action"]["tool"], interrupt["payload"]["amount"]) == ("open", "pay", 120)
    assert run["deliver"] == "all"
    assert api.resume(run["session_id"], "pay", {"approved": approve}).status_code == 200
    out = finished(sfn, execution)
    assert out["status"] == "SUCCEEDED"
    result = json.loads(out["output"])
    assert result["outcome"] == outcome
    if approve:
        [answer] = result["approval"]["answers"]
        assert (answer["verdict"], result["approval"]["state"]) == ("approved", {"amount": 120})
    else:
        assert result["refusal"]["Error"] == "Holdpoint.Denied"
        assert json.loads(result["refusal"]["Cause"])["answers"][0]["verdict"] == "denied"  # moto fix 28


def test_step_functions_wait_under_a_quorum_of_two_waits_for_both(stack: Any, api: Api,
                                                                  bridge: tuple[str, CustomerFunction]) -> None:
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sfn, execution, run_id = workflow(stack, bridge[0], approval={"subjects": ["ann", "bob"], "quorum": 2})
    run = asked(api, run_id)
    assert ann.resume(run["session_id"], "pay", {"approved": True}).status_code == 200
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"  # one of two: still waiting
    assert bob.resume(run["session_id"], "pay", {"approved": True}).status_code == 200
    result = json.loads(finished(sfn, execution)["output"])
    [answer] = result["approval"]["answers"]
    assert sorted((a["subject"], a["status"]) for a in answer["approvals"]) == [("ann", "approved"),
                                                                               ("bob", "approved")]
    assert result["outcome"] == "paid"


def test_step_functions_wait_that_expires_under_deny_takes_the_refusal(stack: Any, api: Api,
                                                                       bridge: tuple[str, CustomerFunction]) -> None:
    sfn, execution, run_id = workflow(stack, bridge[0], expires_in=2, on_expiry="deny")
    result = json.loads(finished(sfn, execution)["output"])
    [answer] = json.loads(result["refusal"]["Cause"])["answers"]
    assert (result["outcome"], answer["verdict"], answer["expired"], answer["channel"]) == (
        "not paid", "denied", True, "expiry")


def test_step_functions_wait_the_bridge_taking_its_message_twice_raises_once(
        stack: Any, api: Api, bridge: tuple[str, CustomerFunction]) -> None:
    """SQS delivers at least once: the bridge handed the same message again (its batch invoked
    twice, as after a lost delete) raises nothing twice, and the one token is completed."""
    handler = bridge[1].handler
    bridge[1].handler = lambda event, context: (handler(event, context), handler(event, context))[1]
    sfn, execution, run_id = workflow(stack, bridge[0])
    run = asked(api, run_id)
    wait_for(lambda: bridge[1].invocations >= 1 or None, "the bridge's batch")
    raised = [e for e in api.events(run["session_id"]) if e["type"] == "session.interrupted"]
    assert [i["interrupt_id"] for i in run["interrupts"]] == ["pay"] and len(raised) == 1
    assert api.resume(run["session_id"], "pay", {"approved": True}).status_code == 200
    assert json.loads(finished(sfn, execution)["output"])["outcome"] == "paid"
