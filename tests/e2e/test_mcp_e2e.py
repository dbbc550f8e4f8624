"""The MCP server for approvals over HTTP on the local stack, driven by the official MCP Python SDK's
client (`mcp`, pinned in requirements-dev.txt, speaking MCP 2026-07-28): `request_approval` as a
task of the tasks extension (resolved by a `ClientExtension` that polls `tasks/get`) that a person
answers on the inbox page in headless Chromium; the `input_required` form answered by the client's
own elicitation; `list_pending_approvals`, `get_approval`, and `answer_approval` refused by an
approver policy (PROTOCOL.md §9)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from playwright.sync_api import Browser, expect
from pydantic import ConfigDict, Field

from tests.e2e.test_inbox_page import WAIT_MS, card, open_inbox
from tests.stack import Api

T = TypeVar("T")
TASKS = "io.modelcontextprotocol/tasks"


class TaskCreated(types.Result):
    """The tasks extension's `CreateTaskResult` (resultType `task`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class DetailedTask(types.Result):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: str = Field(alias="taskId")
    status: str
    result: dict[str, Any] | None = None


class Tasks(ClientExtension):
    """The tasks extension's client side, on the SDK's extension interface: a `task` result of
    `tools/call` is polled with `tasks/get` until it is terminal; `seen` records each poll."""

    identifier = TASKS

    def __init__(self, on_created: Callable[[str], Awaitable[None]] | None = None) -> None:
        self.on_created = on_created
        self.seen: list[DetailedTask] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self._resolve)]

    async def _resolve(self, created: TaskCreated, ctx: ClaimContext) -> types.CallToolResult:
        if self.on_created is not None:
            await self.on_created(created.task_id)
        with anyio.fail_after(90):
            while True:
                task = await ctx.session.send_request(GetTask(params=TaskParams(taskId=created.task_id)), DetailedTask)
                self.seen.append(task)
                if task.status not in ("working", "input_required"):
                    assert task.result is not None, task
                    return types.CallToolResult.model_validate(task.result)
                await anyio.sleep(0.2)


def run(coro: Awaitable[T]) -> T:
    """The coroutine on a thread of its own: Playwright's sync API keeps an event loop on this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]


def client(stack: Any, credential: str, **options: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {credential}"}, timeout=60)
    return Client(streamable_http_client(f"{stack.base_url}/mcp/assistant", http_client=http), **options)


def test_mcp_sdk_task_completes_when_a_person_answers_on_the_inbox_page(
        stack: Any, api: Api, browser: Browser) -> None:
    """The done criterion: the SDK's client requests an approval; a person approves it on the inbox
    page in Chromium; the tool's task completes with that answer. The client runs on a thread of
    its own (Playwright's sync API owns this one)."""
    created: queue.Queue[str] = queue.Queue()
    outcome: queue.Queue[Any] = queue.Queue()

    async def announce(task_id: str) -> None:
        created.put(task_id)

    tasks = Tasks(announce)

    async def go() -> tuple[types.CallToolResult, Any, list[str]]:
        async with client(stack, stack.api_key, extensions=[tasks]) as mcp:
            assert mcp.protocol_version == "2026-07-28"
            names = [t.name for t in (await mcp.list_tools()).tools]
            done = await mcp.call_tool("request_approval", {"question": "Deploy v2 to production?"})
            got = await mcp.call_tool("get_approval", {"id": tasks.seen[-1].task_id})
            return done, got.structured_content, names

    def background() -> None:
        try:
            outcome.put(run(go()))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.put(exc)
            created.put("")

    thread = threading.Thread(target=background, daemon=True)
    thread.start()
    errors: list[str] = []
    page = open_inbox(browser, stack, stack.api_key, errors)
    task_id = created.get(timeout=90)
    assert task_id, outcome.get()
    item = card(page, task_id.split("~")[1])
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator(".message")).to_have_text("Deploy v2 to production?")
    item.locator("button.approve").click()
    expect(item).to_have_count(0, timeout=WAIT_MS)
    result = outcome.get(timeout=120)
    thread.join(timeout=30)
    page.context.close()
    if isinstance(result, BaseException):
        raise result
    done, got, names = result
    assert errors == []
    assert names == ["request_approval", "list_pending_approvals", "get_approval", "answer_approval"]
    assert not done.is_error
    out = done.structured_content
    assert out is not None and out["status"] == "resolved" and out["answer"] == {"approved": True}
    assert out["responder"]["subject"] == "dev-user" and out["question"] == "Deploy v2 to production?"
    assert [t.status for t in tasks.seen][-1] == "completed" and tasks.seen[0].status == "working"
    assert got["status"] == "resolved"
    sid = out["id"].split("~")[0]
    assert api.view(sid)["agent_id"] == "assistant"  # the caller's approvals session, with the agent's config


def test_mcp_sdk_input_required_is_answered_by_the_clients_own_user(stack: Any, api: Api) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"choice": "1"})

    async def go() -> types.CallToolResult:
        async with client(stack, stack.api_key, elicitation_callback=user) as mcp:
            return await mcp.call_tool("request_approval", {
                "question": "Which region?", "options": ["eu-west-1", {"label": "US East", "value": "us-east-1"}],
                "answered_by": "user"})

    done = run(go())
    [form] = asked
    assert form.message == "Which region?"
    schema = form.requested_schema
    assert [o["title"] for o in schema["properties"]["choice"]["oneOf"]] == ["eu-west-1", "US East"]
    out = done.structured_content
    assert out is not None and out["status"] == "resolved"
    assert out["answer"] == "us-east-1" and out["verdict"] == "answered"  # the option's value, as given


def test_mcp_sdk_list_get_and_a_policy_refused_answer(stack: Any, api: Api) -> None:
    async def go() -> tuple[Any, ...]:
        async with client(stack, stack.api_key) as mcp:  # no tasks extension: the approval's id to poll
            raised = await mcp.call_tool("request_approval", {
                "question": "Rotate the keys?", "policy": {"subjects": ["alice"]}})
            approval = raised.structured_content
            assert approval is not None
            listed = await mcp.call_tool("list_pending_approvals", {})
            got = await mcp.call_tool("get_approval", {"id": approval["id"]})
            refused = await mcp.call_tool("answer_approval", {"id": approval["id"], "payload": {"approved": True}})
            after = await mcp.call_tool("get_approval", {"id": approval["id"]})
            with pytest.raises(MCPError) as bad:
                await mcp.call_tool("answer_approval", {"id": approval["id"]})
            return approval, listed, got, refused, after, bad.value
    approval, listed, got, refused, after, bad = run(go())
    assert approval["status"] == "open" and approval["policy"] == {"subjects": ["alice"]}
    assert approval["id"] in [a["id"] for a in listed.structured_content["approvals"]]
    assert got.structured_content["status"] == "open"
    assert refused.is_error and refused.structured_content["error"]["code"] == "not_an_approver"
    assert after.structured_content["status"] == "open"  # nothing recorded
    assert bad.error.code == -32602 and bad.error.data["param"] == "arguments.payload"
