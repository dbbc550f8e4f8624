"""The A2A server over HTTP on the local stack, driven by the official A2A Python SDK's client
(`a2a-sdk`, pinned in requirements-dev.txt): the card, SendMessage -> TASK_STATE_INPUT_REQUIRED
(the interrupt as a data part) -> the answer as a data part -> TASK_STATE_COMPLETED, a replayed
answer that changes nothing, GetTask, streaming, and CancelTask as a decline (PROTOCOL.md §8)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format

from tests.stack import Api, resumed_triggers
from tests.waiting import wait_for

T = TypeVar("T")


def run(coro: Awaitable[T]) -> T:
    return asyncio.run(coro)  # type: ignore[arg-type]


@pytest.fixture
def public(api: Api) -> Api:
    """The test agent, declaring its card public."""
    agent = api.ok("GET", "/v1/agents/assistant")["agent"]
    api.ok("PUT", "/v1/agents/assistant", {**agent, "a2a": {"public": True, "name": "Assistant"}})
    return api


def message(text: str | None = None, *, data: Any = None, task: pb.Task | None = None,
            message_id: str | None = None) -> pb.SendMessageRequest:
    part = pb.Part(text=text) if text is not None else json_format.ParseDict({"data": data}, pb.Part())
    msg = pb.Message(message_id=message_id or str(uuid.uuid4()), role=pb.ROLE_USER, parts=[part])
    if task is not None:
        msg.task_id, msg.context_id = task.id, task.context_id
    return pb.SendMessageRequest(message=msg)


async def _exchange(stack: Any, *, streaming: bool, steps: list[Any]) -> list[pb.Task]:
    """Each step (a request, or a callable of the tasks so far) sent with one SDK client."""
    headers = {"Authorization": f"Bearer {stack.api_key}"}
    async with httpx.AsyncClient(headers=headers, timeout=90) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
        client = await factory.create_from_url(f"{stack.base_url}/a2a/{stack.tenant}/assistant")
        tasks: list[pb.Task] = []
        for step in steps:
            request = step(tasks) if callable(step) else step
            last: pb.Task | None = None
            async for event in client.send_message(request):
                if event.HasField("task"):
                    last = event.task
                elif event.HasField("status_update") and last is not None:
                    last.status.CopyFrom(event.status_update.status)
            assert last is not None
            tasks.append(last)
        tasks.append(await client.get_task(pb.GetTaskRequest(id=tasks[-1].id)))
        return tasks


def test_a2a_sdk_client_completes_a_task_through_input_required(stack: Any, public: Api,
                                                                worker: tuple[str, list[dict[str, Any]]]) -> None:
    answer = str(uuid.uuid4())
    parked, done, replayed, got = run(_exchange(stack, streaming=False, steps=[
        message("Email Bob"),
        lambda t: message(data={"approved": True}, task=t[0], message_id=answer),
        lambda t: message(data={"approved": True}, task=t[0], message_id=answer),
    ]))
    assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    note = json_format.MessageToDict(parked.status.message)
    assert note["parts"][0]["text"] == "Send the email?"
    [interrupt] = note["parts"][1]["data"]["interrupts"]
    assert interrupt["reason"] == "confirm" and interrupt["origin"] == "worker"
    assert {o["label"] for o in interrupt["options"]} == {"Approve", "Deny"}
    assert done.id == parked.id and done.context_id == parked.context_id
    assert done.status.state == pb.TASK_STATE_COMPLETED
    assert done.status.message.parts[0].text == "Email sent."
    assert replayed.status.state == pb.TASK_STATE_COMPLETED and got.status.state == pb.TASK_STATE_COMPLETED
    sid = parked.context_id
    assert len(resumed_triggers(worker[1], sid)) == 1, "the replayed answer reached the worker again"
    assert public.view(sid)["status"] == "done"


def test_a2a_sdk_streaming_client_sees_input_required_then_completed(stack: Any, public: Api) -> None:
    parked, done, _ = run(_exchange(stack, streaming=True, steps=[
        message("Email Bob"), lambda t: message(data={"approved": True}, task=t[0])]))
    assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert done.status.state == pb.TASK_STATE_COMPLETED


def test_a2a_cancel_declines_the_interrupt(stack: Any, public: Api, worker: tuple[str, list[dict[str, Any]]]) -> None:
    async def go() -> tuple[pb.Task, pb.Task, pb.Task]:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {stack.api_key}"}, timeout=90) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(
                f"{stack.base_url}/a2a/{stack.tenant}/assistant")
            parked = [e.task async for e in client.send_message(message("Email Bob"))][0]
            canceled = await client.cancel_task(pb.CancelTaskRequest(id=parked.id))
            again = await client.cancel_task(pb.CancelTaskRequest(id=parked.id))
            return parked, canceled, again

    parked, canceled, again = run(go())
    assert parked.status.state == pb.TASK_STATE_INPUT_REQUIRED
    assert canceled.status.state == pb.TASK_STATE_CANCELED and again.status.state == pb.TASK_STATE_CANCELED
    # the cancel answers once the interrupt is declined; the worker hears of it when the parked
    # branch wakes (Step Functions, then the wake queue), which may be after the answer
    wait_for(lambda: resumed_triggers(worker[1], parked.context_id), "the worker's interrupt.resumed")
    [trigger] = resumed_triggers(worker[1], parked.context_id)
    assert (trigger["payload"], trigger["verdict"], trigger["channel"]) == (None, "cancelled", "a2a")


def test_a2a_answer_without_a_data_part_is_invalid_params_naming_the_field(stack: Any, public: Api) -> None:
    async def go() -> InvalidParamsError:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {stack.api_key}"}, timeout=90) as http:
            client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(
                f"{stack.base_url}/a2a/{stack.tenant}/assistant")
            parked = [e.task async for e in client.send_message(message("Email Bob"))][0]
            with pytest.raises(InvalidParamsError) as refused:
                async for _ in client.send_message(message(text="yes please", task=parked)):
                    pass
            return refused.value

    refused = run(go())
    assert refused.data == {"code": "validation_error", "param": "message.parts"}
