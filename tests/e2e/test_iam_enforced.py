"""Every function calls "AWS" with its own role and IAM is enforced (local/README.md, "IAM"): a
call the template does not grant fails with AccessDenied, as on AWS, and the real template grants
every call the seed scenario makes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from holdpoint_local.emulators import credentials
from holdpoint_local.provision import REPO_ROOT, TEMPLATE_PATH
from tests.stack import Api, declare_agent, execution_status, wait_execution
from tests.waiting import wait_for

PARK_GRANT = """        - StepFunctionsExecutionPolicy:
            StateMachineName: !GetAtt ParkBranchStateMachine.Name
"""
"""The engine's grants of states:StartExecution (ParkBranch, then Timer) in template.yaml."""


def _without_engine_park_grant(tmp_path: Path) -> Path:
    text = TEMPLATE_PATH.read_text()
    engine = text.index("  EngineFunction:")
    at = text.index(PARK_GRANT, engine)
    assert at < text.index("  NotifierFunction:"), "the engine's ParkBranch grant moved"
    copy = tmp_path / "template.yaml"
    copy.write_text(text[:at] + text[at + len(PARK_GRANT):])
    return copy


def _denials_since(before: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    return set(credentials.CALLS.denied()) - before


def test_iam_a_call_the_template_does_not_grant_is_denied(
        local_stack_factory: Callable[..., Any], worker: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    before = set(credentials.CALLS.denied())
    stack = local_stack_factory(template_path=_without_engine_park_grant(tmp_path), code_root=REPO_ROOT,
                                extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "ERROR"})
    api = Api(stack.base_url, stack.api_key)
    declare_agent(api, worker[0])
    sid = api.start()
    wait_for(lambda: ("EngineFunction", "states", "StartExecution") in _denials_since(before),
             "the engine's StartExecution of ParkBranch to be denied", 60, describe=lambda: _denials_since(before))
    assert _denials_since(before) == {("EngineFunction", "states", "StartExecution")}
    [interrupt] = api.view(sid)["interrupts"]  # committed before the park, which is what IAM refused
    assert execution_status(stack, sid, interrupt["interrupt_id"]) == "NOT_FOUND"


def test_iam_the_real_template_grants_the_seed_scenario(api: Api, stack: Any, worker: Any) -> None:
    before = set(credentials.CALLS.denied())
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    wait_execution(stack, sid, interrupt["interrupt_id"], "RUNNING")
    assert api.resume(sid, interrupt["interrupt_id"], {"approved": True}).status_code == 200
    api.wait_status(sid, "done")
    assert _denials_since(before) == set()
    called = {k[:3] for k in credentials.CALLS.calls}
    for function in ("ApiFunction", "AuthorizerFunction", "EngineFunction", "ResumeFunction", "NotifierFunction"):
        assert any(c[0] == function for c in called), f"{function} made no call under its role"


def test_iam_each_function_signs_with_its_own_role(stack: Any) -> None:
    import boto3

    fn = stack.functions["AuthorizerFunction"]
    with fn.acting():
        who = boto3.client("sts").get_caller_identity()["Arn"]
        denied = None
        try:
            boto3.client("dynamodb").put_item(TableName=stack.env["TABLE_NAME"],
                                              Item={"PK": {"S": "x"}, "SK": {"S": "y"}})
        except Exception as exc:  # noqa: BLE001 - the error is the assertion
            denied = exc
    assert fn.role_arn.rsplit("/", 1)[-1] in who and ":assumed-role/" in who
    assert denied is not None and "AccessDenied" in str(denied)  # the authorizer only reads the table


def test_iam_a_function_without_manage_connections_is_refused_by_the_management_api(stack: Any) -> None:
    """The local gateway's `@connections` API is checked as API Gateway checks it: the authorizer
    (no `execute-api:ManageConnections`) may not post, the engine (granted POST on `@connections/*`
    only) may post but not delete (only the live function closes connections), and each refusal is
    a denial the IAM log shows."""
    import asyncio

    import boto3
    from botocore.exceptions import ClientError
    from websockets.asyncio.client import connect

    def call(function: str, op: str, connection_id: str) -> str:
        with stack.functions[function].acting():
            client = boto3.client("apigatewaymanagementapi", endpoint_url=stack.live.management_url)
            try:
                if op == "post":
                    client.post_to_connection(ConnectionId=connection_id, Data=b'{"type":"ping"}')
                else:
                    client.delete_connection(ConnectionId=connection_id)
            except ClientError as exc:
                return str(exc.response["Error"]["Code"])
        return "ok"

    async def scenario() -> list[str]:
        before = set(stack.live.connections)
        async with connect(stack.live.url, additional_headers={"Authorization": f"Bearer {stack.api_key}"},
                           open_timeout=30, ping_interval=None, compression=None) as ws:
            new = await asyncio.to_thread(wait_for, lambda: set(stack.live.connections) - before, "the connection")
            (connection_id,) = new
            answers = [await asyncio.to_thread(call, fn, op, connection_id) for fn, op in (
                ("AuthorizerFunction", "post"), ("EngineFunction", "delete"), ("EngineFunction", "post"))]
            assert await asyncio.wait_for(ws.recv(), 30) == '{"type":"ping"}'  # the one allowed post
            assert connection_id in stack.live.connections
            return answers

    denials = set(credentials.CALLS.denied())
    assert asyncio.run(scenario()) == ["ForbiddenException", "ForbiddenException", "ok"]
    assert _denials_since(denials) == {("AuthorizerFunction", "execute-api", "PostToConnection"),
                                      ("EngineFunction", "execute-api", "DeleteConnection")}
