"""External runs over HTTP on the local stack (PROTOCOL.md §10): a customer's own Step Functions
workflow waits on a task token while Holdpoint holds the approval, and the notifier completes it
(success with the answers when approved, `Holdpoint.Denied` when not, under a quorum, on expiry); a
run's answers reach a signed URL all together, a failed attempt retried under the same delivery
id; a run with no target reads its own answers; and a run is its caller's
alone (another tenant reads 404, another principal's same run id is another run)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_approver_policies_e2e import approver
from tests.e2e.test_notify_e2e import SECRET_REF, Receiver
from tests.stack import Api
from tests.waiting import wait_for

WAIT_FOR_APPROVAL = {
    "StartAt": "AskHoldpoint",
    "States": {
        "AskHoldpoint": {  # the customer's bridge reads the token from its queue and raises the run
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {"QueueUrl": "${QueueUrl}",
                           "MessageBody": {"task_token.$": "$$.Task.Token", "amount.$": "$.amount"}},
            "TimeoutSeconds": 600,
            "Next": "Pay",
        },
        "Pay": {"Type": "Pass", "End": True},
    },
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    out = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"], fail=1)  # the first attempt fails: retried
    yield out
    out.server.shutdown()


@pytest.fixture
def runner(api: Api, receiver: Receiver) -> Api:
    """An agent for external runs: a Step Functions target and a signed URL target."""
    api.ok("PUT", "/v1/agents/payments", {"run_targets": {
        "workflow": {"step_functions": True},
        "hook": {"url": receiver.url, "secret": SECRET_REF}}})
    return api


def asked(*ids: str) -> list[dict[str, Any]]:
    return [{"interrupt_id": i, "reason": "approve", "payload": {"message": f"Pay {i}?"},
             "action": {"tool": "pay", "arguments": {"invoice": i}}} for i in ids]


def workflow(stack: Any) -> tuple[Any, str, str]:
    """The customer's state machine and the queue its task token arrives on."""
    sfn, sqs, iam = stack.client("stepfunctions"), stack.client("sqs"), stack.client("iam")
    name = uuid.uuid4().hex[:8]
    queue = sqs.create_queue(QueueName=f"bridge-{name}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                      "Principal": {"Service": "states.amazonaws.com"}}]}
    role = iam.create_role(RoleName=f"workflow-{name}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    iam.put_role_policy(RoleName=f"workflow-{name}", PolicyName="bridge", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue_arn}]}))
    definition = json.dumps(WAIT_FOR_APPROVAL).replace("${QueueUrl}", queue)
    arn = sfn.create_state_machine(name=f"pay-{name}", definition=definition, roleArn=role)["stateMachineArn"]
    return sfn, str(arn), str(queue)


def token_from(stack: Any, queue: str, execution: str) -> dict[str, Any]:
    sqs, sfn = stack.client("sqs"), stack.client("stepfunctions")

    def one() -> dict[str, Any] | None:
        for msg in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", []):
            return dict(json.loads(msg["Body"]))
        return None

    return wait_for(one, "the workflow's task token on the bridge queue",
                    describe=lambda: sfn.get_execution_history(executionArn=execution)["events"][-3:])


def finished(sfn: Any, arn: str) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = sfn.describe_execution(executionArn=arn)
        return None if found["status"] == "RUNNING" else dict(found)

    return wait_for(done, "the customer's execution to finish", 60)


@pytest.mark.parametrize(("answer", "status"), [({"approved": True}, "SUCCEEDED"), ({"approved": False}, "FAILED")])
def test_a_step_functions_wait_completes_with_the_answer(stack: Any, runner: Api, answer: dict[str, Any],
                                                         status: str) -> None:
    sfn, machine, queue = workflow(stack)
    execution = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"amount": 120}))["executionArn"]
    task = token_from(stack, queue, execution)
    run_id = f"exec-{uuid.uuid4().hex[:12]}"
    raised = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {
        "agent_id": "payments", "target": "workflow", "callback": {"task_token": task["task_token"]},
        "state": {"amount": task["amount"]}, "interrupts": asked("inv-7")})
    assert (raised["deliver"], raised["interrupts"][0]["status"]) == ("all", "open")
    assert runner.resume(raised["session_id"], "inv-7", answer).status_code == 200
    out = finished(sfn, execution)
    assert out["status"] == status
    if status == "SUCCEEDED":
        delivered = json.loads(out["output"])
        assert (delivered["run_id"], delivered["state"]) == (run_id, {"amount": 120})
        [one] = delivered["answers"]
        assert (one["verdict"], one["payload"], one["action"]["tool"]) == ("approved", {"approved": True}, "pay")
    else:
        events = sfn.get_execution_history(executionArn=execution)["events"]
        failed = [e["executionFailedEventDetails"] for e in events if "executionFailedEventDetails" in e]
        assert failed and failed[0]["error"] == "Holdpoint.Denied"
        assert json.loads(failed[0]["cause"])["answers"][0]["verdict"] == "denied"  # moto fix 28


def test_a_runs_answers_reach_a_signed_url_all_together_retried_under_one_id(
        stack: Any, runner: Api, receiver: Receiver) -> None:
    run_id = f"graph-{uuid.uuid4().hex[:12]}"
    raised = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {
        "agent_id": "payments", "target": "hook", "deliver": "all", "state": {"thread": "t-9"},
        "interrupts": asked("inv-1", "inv-2")})
    again = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {  # a retried request raises nothing twice
        "agent_id": "payments", "target": "hook", "deliver": "all", "state": {"thread": "t-9"},
        "interrupts": asked("inv-1", "inv-2")})
    assert again["session_id"] == raised["session_id"]
    sid = raised["session_id"]
    assert runner.resume(sid, "inv-1", {"approved": True}).status_code == 200
    assert runner.resume(sid, "inv-2", {"approved": False}).status_code == 200
    got = wait_for(lambda: list(receiver.got) if len(receiver.got) >= 2 else None, "the run's delivery, retried")
    failed, delivery = got  # refused once (500), delivered again under the same id for the receiver to dedupe
    assert failed["body"] == delivery["body"] and failed["delivery"] == delivery["delivery"]
    assert delivery["signed"] and delivery["delivery"] == delivery["body"]["delivery_id"]
    assert [(a["interrupt_id"], a["verdict"]) for a in delivery["body"]["answers"]] == [
        ("inv-1", "approved"), ("inv-2", "denied")]
    assert delivery["body"]["state"] == {"thread": "t-9"}
    view = runner.ok("GET", f"/v1/runs/{run_id}")
    assert [i["verdict"] for i in view["interrupts"]] == ["approved", "denied"]
    raised_events = [e for e in runner.events(sid) if e["type"] == "session.interrupted"]
    assert len(raised_events) == 2


def test_a_run_with_no_target_reads_its_answer(stack: Any, runner: Api) -> None:
    run_id = f"agent-{uuid.uuid4().hex[:12]}"
    raised = runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments",
                                                                 "interrupts": asked("inv-3")})
    assert runner.ok("GET", f"/v1/runs/{run_id}")["interrupts"][0]["status"] == "open"
    assert runner.resume(raised["session_id"], "inv-3", {"approved": True}).status_code == 200
    view = runner.ok("GET", f"/v1/runs/{run_id}")
    assert (view["interrupts"][0]["status"], view["interrupts"][0]["verdict"]) == ("resolved", "approved")


def test_a_run_is_its_callers_alone(stack: Any, runner: Api, other_tenant: Api) -> None:
    run_id = f"mine-{uuid.uuid4().hex[:12]}"
    runner.ok("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments", "interrupts": asked("inv-4")})
    assert other_tenant.req("GET", f"/v1/runs/{run_id}").status_code == 404
    refused = runner.req("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "assistant",
                                                                   "interrupts": asked("inv-5")})
    assert (refused.status_code, refused.json()["error"]["param"]) == (409, "run_id")


@pytest.mark.parametrize(("change", "param"), [
    ({"target": "nowhere"}, "target"),
    ({"target": "workflow"}, "callback.task_token"),
    ({"callback": {"task_token": "x"}}, "target"),
    ({"target": "workflow", "deliver": "each", "callback": {"task_token": "x"}}, "deliver"),
    ({"interrupts": []}, "interrupts"),
])
def test_a_bad_run_raise_names_the_field_and_records_nothing(stack: Any, runner: Api, change: dict[str, Any],
                                                             param: str) -> None:
    run_id = f"bad-{uuid.uuid4().hex[:12]}"
    refused = runner.req("POST", f"/v1/runs/{run_id}/interrupts", {"agent_id": "payments",
                                                                   "interrupts": asked("inv-6"), **change})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
    assert runner.req("GET", f"/v1/runs/{run_id}").status_code == 404


def waiting_run(stack: Any, api: Api, **interrupt: Any) -> tuple[Any, str, dict[str, Any]]:
    """A customer's execution waiting on its token, and the run it raised in Holdpoint for it."""
    sfn, machine, queue = workflow(stack)
    execution = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"amount": 40}))["executionArn"]
    task = token_from(stack, queue, execution)
    [one] = asked("inv-8")
    raised = api.ok("POST", f"/v1/runs/exec-{uuid.uuid4().hex[:12]}/interrupts", {
        "agent_id": "payments", "target": "workflow", "callback": {"task_token": task["task_token"]},
        "interrupts": [{**one, **interrupt}]})
    return sfn, execution, raised


def test_step_functions_wait_under_a_quorum_of_two_waits_for_both(stack: Any, runner: Api) -> None:
    ann, bob = approver(stack, "ann"), approver(stack, "bob")
    sfn, execution, raised = waiting_run(stack, runner, approval={"subjects": ["ann", "bob"], "quorum": 2})
    assert ann.resume(raised["session_id"], "inv-8", {"approved": True}).status_code == 200
    assert sfn.describe_execution(executionArn=execution)["status"] == "RUNNING"  # one of two: still waiting
    assert bob.resume(raised["session_id"], "inv-8", {"approved": True}).status_code == 200
    out = finished(sfn, execution)
    assert out["status"] == "SUCCEEDED"
    [answer] = json.loads(out["output"])["answers"]
    answered = sorted((a["subject"], a["status"]) for a in answer["approvals"])
    assert answered == [("ann", "approved"), ("bob", "approved")]


def test_step_functions_wait_that_expires_under_deny_fails_the_task(stack: Any, runner: Api) -> None:
    sfn, execution, _ = waiting_run(stack, runner, expires_in=2, on_expiry="deny")
    out = finished(sfn, execution)
    assert out["status"] == "FAILED"
    events = sfn.get_execution_history(executionArn=execution)["events"]
    [failed] = [e["executionFailedEventDetails"] for e in events if "executionFailedEventDetails" in e]
    [answer] = json.loads(failed["cause"])["answers"]
    assert (failed["error"], answer["verdict"], answer["expired"], answer["channel"]) == (
        "Holdpoint.Denied", "denied", True, "expiry")
