"""A2A push notification configs over HTTP on the local stack (PROTOCOL.md §8), driven by the A2A
Python SDK's client: a config set with `SendMessage` becomes Holdpoint signed webhook deliveries of
the task (input-required when the turn parks, completed when it ends) through the notifier that
reads the table's stream, each carrying the config's token; configs are listed and read without
their secrets, and deleted."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format

from tests.e2e.test_a2a_e2e import message, run
from tests.stack import Api, signed
from tests.waiting import wait_for

SECRET_REF = "env:HOLDPOINT_E2E_WORKER_SECRET"


class PushReceiver:
    """An A2A push endpoint: records each body, whether its Holdpoint signature verifies, and the
    A2A token and delivery headers; 204 when signed, 401 otherwise."""

    def __init__(self, secret: str) -> None:
        self.got: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ok = signed(secret, self.headers, body)
                with receiver.lock:
                    receiver.got.append({"body": json.loads(body), "signed": ok,
                                         "token": self.headers.get("X-A2A-Notification-Token"),
                                         "authorization": self.headers.get("Authorization"),
                                         "delivery": self.headers.get("X-Holdpoint-Delivery")})
                self.send_response(204 if ok else 401)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/a2a-push"

    def of(self, state: str) -> list[dict[str, Any]]:
        with self.lock:
            return [g for g in self.got if g["body"]["task"]["status"]["state"] == state]


@pytest.fixture
def receiver() -> Iterator[PushReceiver]:
    out = PushReceiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    yield out
    out.server.shutdown()


@pytest.fixture
def pushing(api: Api) -> Api:
    """The test agent, its card public and its pushes signed with the worker's secret."""
    agent = api.ok("GET", "/v1/agents/assistant")["agent"]
    api.ok("PUT", "/v1/agents/assistant", {**agent, "a2a": {"public": True, "push_secret": SECRET_REF}})
    return api


def test_a2a_push_config_delivers_signed_input_required_then_completed(
        stack: Any, pushing: Api, receiver: PushReceiver) -> None:
    token = "tok-" + uuid.uuid4().hex

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {stack.api_key}"}, timeout=90) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(
                f"{stack.base_url}/a2a/{stack.tenant}/assistant")
            assert client._card.capabilities.push_notifications  # type: ignore[attr-defined]
            request = message("Email Bob")
            request.configuration.task_push_notification_config.CopyFrom(pb.TaskPushNotificationConfig(
                id="hook-1", url=receiver.url, token=token,
                authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="cred-xyz")))
            parked = [e.task async for e in client.send_message(request)][0]
            [pushed] = wait_for(lambda: receiver.of("TASK_STATE_INPUT_REQUIRED") or None, "the input-required push")
            got = await client.get_task_push_notification_config(
                pb.GetTaskPushNotificationConfigRequest(task_id=parked.id, id="hook-1"))
            listed = await client.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=parked.id))
            answer = message(data={"approved": True}, task=parked)
            done = [e.task async for e in client.send_message(answer)][0]
            [finished] = wait_for(lambda: receiver.of("TASK_STATE_COMPLETED") or None, "the completed push")
            await client.delete_task_push_notification_config(
                pb.DeleteTaskPushNotificationConfigRequest(task_id=parked.id, id="hook-1"))
            after = await client.list_task_push_notification_configs(
                pb.ListTaskPushNotificationConfigsRequest(task_id=parked.id))
            return {"parked": parked, "pushed": pushed, "got": got, "listed": listed, "done": done,
                    "finished": finished, "after": after}

    out = run(go())
    parked, pushed, finished = out["parked"], out["pushed"], out["finished"]
    assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    for push in (pushed, finished):
        assert push["signed"] and push["token"] == token and push["authorization"] == "Bearer cred-xyz"
        assert push["delivery"].startswith("dlv_")
        task = json_format.ParseDict(push["body"], pb.StreamResponse()).task  # the SDK's own shape
        assert task.id == parked.id and task.context_id == parked.context_id
    interrupts = pushed["body"]["task"]["status"]["message"]["parts"][1]["data"]["interrupts"]
    assert [i["reason"] for i in interrupts] == ["confirm"]
    assert finished["body"]["task"]["status"]["message"]["parts"][0]["text"] == "Email sent."
    assert out["done"].status.state == pb.TASK_STATE_COMPLETED
    assert pushed["delivery"] != finished["delivery"]
    # Read back without the secrets; once deleted, none is left.
    got = json_format.MessageToDict(out["got"])
    assert got == {"id": "hook-1", "taskId": parked.id, "url": receiver.url,
                   "authentication": {"scheme": "Bearer"}}
    assert [c.id for c in out["listed"].configs] == ["hook-1"] and not out["after"].configs
    assert token not in json.dumps(got) and "cred-xyz" not in str(out["listed"])
    # Each state was pushed once (the stream's redeliveries and the retry path dedupe on the record).
    assert len(receiver.got) == 2


def test_a2a_push_config_created_on_a_parked_task_pushes_its_end(
        stack: Any, pushing: Api, receiver: PushReceiver) -> None:
    async def go() -> pb.Task:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {stack.api_key}"}, timeout=90) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(
                f"{stack.base_url}/a2a/{stack.tenant}/assistant")
            parked = [e.task async for e in client.send_message(message("Email Bob"))][0]
            made = await client.create_task_push_notification_config(
                pb.TaskPushNotificationConfig(task_id=parked.id, url=receiver.url))
            assert made.id == parked.id.partition("~")[2] and made.task_id == parked.id
            canceled = await client.cancel_task(pb.CancelTaskRequest(id=parked.id))
            assert canceled.status.state == pb.TASK_STATE_CANCELED
            return parked

    parked = run(go())
    [ended] = wait_for(lambda: receiver.of("TASK_STATE_CANCELED") or None, "the canceled push")
    assert ended["signed"] and ended["body"]["task"]["id"] == parked.id and ended["token"] is None
    assert not receiver.of("TASK_STATE_INPUT_REQUIRED")  # the config came after the park
