"""template.yaml is the source of truth: it must lint clean and keep the parking contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint

from holdpoint_local.provision import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def test_cfn_lint_has_no_errors_or_warnings() -> None:
    matches = lint(TEMPLATE.read_text(encoding="utf-8"), regions=["us-east-1"])
    problems = [str(m) for m in matches if m.rule.severity.lower() in ("error", "warning")]
    assert problems == []


def test_park_state_waits_for_task_token_with_timeout_and_expiry(template: dict[str, Any]) -> None:
    sm = template["Resources"]["ParkBranchStateMachine"]["Properties"]
    assert sm["Type"] == "STANDARD"
    assert "WorkQueueUrl" in sm["DefinitionSubstitutions"]
    states = sm["Definition"]["States"]
    park = states[sm["Definition"]["StartAt"]]
    assert park["Resource"] == "arn:aws:states:::sqs:sendMessage.waitForTaskToken"
    assert park["TimeoutSecondsPath"] == "$.timeout_seconds"
    assert park["Parameters"]["MessageBody"]["task_token.$"] == "$$.Task.Token"
    assert park["Parameters"]["MessageBody"]["kind"] == "park"
    catch = [c for c in park["Catch"] if "States.Timeout" in c["ErrorEquals"]]
    assert catch and states[catch[0]["Next"]]["Parameters"]["MessageBody"]["outcome"] == "expired"
    assert park.get("End") is True and "Next" not in park  # the resume sends the wake (aws/parking.py)
    for state in states.values():
        assert state["Parameters"]["MessageGroupId.$"] == "$.group_id"
        assert state["Parameters"]["QueueUrl"] == "${WorkQueueUrl}"


def test_every_function_that_resumes_may_send_the_wake(template: dict[str, Any]) -> None:
    """A resolving resume puts the wake on the work queue: every function that can resume may send to it.

    The external runs' statement (Sid ExternalRunTasks) completes the callers' own waits, not Holdpoint's holds.
    """
    resources = template["Resources"]
    for name, res in resources.items():
        policies = res.get("Properties", {}).get("Policies", []) or []
        grants = [a for p in policies if isinstance(p, dict) and "Statement" in p for st in p["Statement"]
                  if st.get("Sid") != "ExternalRunTasks"
                  for a in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])]
        if res["Type"] == "AWS::Serverless::Function" and "states:SendTaskSuccess" in grants:
            queues = [p["SQSSendMessagePolicy"]["QueueName"] for p in policies
                      if isinstance(p, dict) and "SQSSendMessagePolicy" in p]
            assert {"Fn::GetAtt": ["WorkQueue", "QueueName"]} in queues, name


def test_env_contract_on_every_function(template: dict[str, Any]) -> None:
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    for key in ("TABLE_NAME", "WORK_QUEUE_URL", "PARK_STATE_MACHINE_ARN", "PAYLOAD_BUCKET", "JWT_SECRET_ARN"):
        assert key in env


def test_work_queue_is_fifo_with_dlq_and_long_enough_visibility(template: dict[str, Any]) -> None:
    res = template["Resources"]
    queue = res["WorkQueue"]["Properties"]
    # Content-based deduplication: EventBridge Scheduler (durable timers) sends no deduplication id.
    assert queue["FifoQueue"] is True and queue["ContentBasedDeduplication"] is True
    assert queue["RedrivePolicy"]["maxReceiveCount"] == 5
    assert res["WorkDLQ"]["Properties"]["FifoQueue"] is True
    engine = res["EngineFunction"]["Properties"]
    assert queue["VisibilityTimeout"] >= engine["Timeout"]
    sqs = engine["Events"]["Work"]["Properties"]
    assert sqs["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_no_wildcard_actions(template: dict[str, Any]) -> None:
    for res in template["Resources"].values():
        for policy in res.get("Properties", {}).get("Policies", []) or []:
            if isinstance(policy, dict) and "Statement" in policy:
                for stmt in policy["Statement"]:
                    actions = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
                    assert all("*" not in a for a in actions), stmt


def test_authorizer_cache_ttl_is_a_parameter_and_off_by_default(template: dict[str, Any]) -> None:
    """A cached authorizer answer lets a revoked key in for the TTL: the operator chooses it, 0 unless they do."""
    param = template["Parameters"]["AuthorizerCacheSeconds"]
    assert (param["Type"], param["Default"], param["MinValue"]) == ("Number", 0, 0)
    assert param["MaxValue"] <= 3600  # API Gateway's own ceiling for an authorizer's result TTL
    auth = template["Resources"]["HttpApi"]["Properties"]["Auth"]["Authorizers"]["LambdaAuthorizer"]
    assert auth["Identity"]["ReauthorizeEvery"] == {"Ref": "AuthorizerCacheSeconds"}
    assert auth["Identity"]["Headers"] == ["Authorization"]  # the cache key is the whole credential


def test_cost_model_counts_the_park_branch_steps_a_resume_executes(template: dict[str, Any]) -> None:
    """Step Functions bills each step executed: the cost model's transition count is the success path's length."""
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("cost_model", ROOT / "bench" / "cost_model.py")
    assert spec and spec.loader
    cost_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cost_model)
    definition = template["Resources"]["ParkBranchStateMachine"]["Properties"]["Definition"]
    executed, name = [], definition["StartAt"]
    while name:
        executed.append(name)
        name = definition["States"][name].get("Next")
    assert executed == ["Park"]
    assert len(executed) == cost_model.SFN_TRANSITIONS
