"""Each function of template.yaml, as `sam build` built it, invoked by `sam local invoke` in an arm64
Lambda-shaped container, against the stack provisioned in moto: the responses and what the table
and queues hold afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest

from holdpoint.aws.store import Store
from holdpoint_local.frontend import ApiGateway
from holdpoint_local.pollers import build_sqs_event

from .conftest import API_KEY, TENANT, Deployment, Invocation

pytestmark = pytest.mark.timeout(2400)  # the first test builds the base images (arm64 under qemu: minutes)


class ContainerFunction:
    """What the front end calls for a function (`invoke(event)`), run by `sam local invoke`."""

    def __init__(self, deployment: Deployment, logical_id: str) -> None:
        self.deployment, self.logical_id = deployment, logical_id
        self.last: Invocation | None = None

    def invoke(self, event: Any) -> Any:
        self.last = self.deployment.invoke(self.logical_id, event)
        assert self.last.returncode == 0, self.last.stderr[-4000:]
        assert self.last.response is not None, self.last.stderr[-4000:]
        if isinstance(self.last.response, dict) and "errorType" in self.last.response:
            raise AssertionError(f"{self.logical_id} raised: {self.last.response}")
        return self.last.response


def gateway(deployment: Deployment) -> ApiGateway:
    """The local stack's API Gateway (event shapes, authorizer, routes from the created HTTP API), with
    every function run in a container."""
    functions = {name: ContainerFunction(deployment, name) for name in deployment.provisioned.functions}
    return ApiGateway(deployment.provisioned.routes, functions, api_id=deployment.provisioned.api_id,  # type: ignore[arg-type]
                      cors=deployment.provisioned.cors)


def call(gw: ApiGateway, method: str, path: str, body: Any = None, key: str = API_KEY) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json", "user-agent": "sam-tier"}
    response = gw.handle(method, path, headers, data)
    text = response["body"]
    return response["statusCode"], json.loads(text) if text else None


AGENT = {"llm": {"provider": "scripted", "script": [{"when": {"role": "user"}, "reply": {"content": "Hi!"}}]}}


def work_messages(deployment: Deployment) -> list[dict[str, Any]]:
    """What is on the work queue (received as the operator; the engine's event is built from them)."""
    sqs = deployment.client("sqs")
    out = sqs.receive_message(QueueUrl=deployment.provisioned.env["WORK_QUEUE_URL"], MaxNumberOfMessages=10,
                              AttributeNames=["All"], MessageAttributeNames=["All"], WaitTimeSeconds=1)
    return list(out.get("Messages", []))


def test_a_session_is_created_by_the_api_and_answered_by_the_engine(deployment: Deployment) -> None:
    gw = gateway(deployment)
    store = Store(deployment.provisioned.env["TABLE_NAME"], deployment.client("dynamodb"), cache=False)
    status, body = call(gw, "PUT", "/v1/agents/assistant", AGENT)
    assert status == 200, body
    assert store.get_agent(TENANT, "assistant") is not None
    status, body = call(gw, "POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                      "message": {"role": "user", "content": "hello"}})
    assert status == 202 and body["queued"] is False, body
    sid = body["session_id"]
    assert store.session_exists(TENANT, sid)
    messages = work_messages(deployment)
    assert [json.loads(m["Body"]).get("session_id") for m in messages] == [sid]
    event = build_sqs_event(messages, deployment.provisioned.sqs_mappings[0].queue_arn)
    result = deployment.invoke("EngineFunction", event)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.response == {"batchItemFailures": []}, result.stderr[-4000:]
    status, view = call(gw, "GET", f"/v1/sessions/{sid}")
    assert status == 200, view
    assert view["status"] == "done", view
    contents = [n["message"].get("content") for n in view["message_tree"]["nodes"]]
    assert contents == ["hello", "Hi!"], view
