"""Holdpoint's A2A server from the official client (`a2a-sdk`): a message starts a task that waits
for input (the agent's approval), the next message on that task approves it with a data part, and
the task's last status is printed ("Email sent." with the seed worker).

    .venv/bin/python examples/a2a_approve.py   # HOLDPOINT_URL, HOLDPOINT_API_KEY: make serve's (.holdpoint/local.env)

The agent must declare `"a2a": {"public": true}`: the client reads its card first.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format


def message(part: pb.Part, task: pb.Task | None = None) -> pb.SendMessageRequest:
    sent = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[part])
    if task is not None:
        sent.task_id, sent.context_id = task.id, task.context_id
    return pb.SendMessageRequest(message=sent)


async def last_task(client: object, request: pb.SendMessageRequest) -> pb.Task:
    task = None
    async for event in client.send_message(request):  # type: ignore[attr-defined]
        if event.HasField("task"):
            task = event.task
        elif event.HasField("status_update") and task is not None:
            task.status.CopyFrom(event.status_update.status)
    assert task is not None
    return task


async def main() -> None:
    api = os.environ.get("HOLDPOINT_URL", "http://127.0.0.1:8787")
    key = os.environ.get("HOLDPOINT_API_KEY", "hp_dev_local_key")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=90) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http)).create_from_url(f"{api}/a2a/dev/assistant")
        parked = await last_task(client, message(pb.Part(text="Email Bob that the report is ready")))
        print(pb.TaskState.Name(parked.status.state), parked.status.message.parts[0].text)
        answer = json_format.ParseDict({"data": {"approved": True}}, pb.Part())  # the answer, as on every channel
        done = await last_task(client, message(answer, parked))
        print(pb.TaskState.Name(done.status.state), done.status.message.parts[0].text)


if __name__ == "__main__":
    asyncio.run(main())
