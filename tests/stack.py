"""Fixtures for tests over HTTP on the local stack (e2e, security): the real handlers, a signed
HTTP seed worker, and a small API client. Registered as a plugin by the root conftest."""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
import requests

from holdpoint.aws.keys import put_api_key
from holdpoint.core import signatures
from tests.conftest import ROOT
from tests.waiting import wait_for

sys.path.insert(0, str(ROOT / "examples"))
import seed_worker  # noqa: E402

SCRIPT = [
    {"when": {"role": "user", "contains": "say hi"}, "reply": {"content": "Hi!"}},
    {"when": {"role": "user"}, "reply": {"tool_calls": [{"name": "send_email", "arguments": {"to": "bob"}}]}},
    {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Email sent."}},
    {"when": {"role": "tool"}, "reply": {"content": "I did not send it."}},
]


class Api:
    """A small HTTP client for one tenant's key."""

    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"

    def req(self, method: str, path: str, body: Any = None) -> requests.Response:
        return self.http.request(method, self.base + path, json=body, timeout=60)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        resp = self.req(method, path, body)
        assert resp.status_code in (200, 202), f"{method} {path}: {resp.status_code} {resp.text}"
        return resp.json()

    def start(self, text: str = "Email Bob") -> str:
        return self.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                                 "message": {"role": "user", "content": text}})["session_id"]

    def view(self, sid: str) -> dict[str, Any]:
        return self.ok("GET", f"/v1/sessions/{sid}")

    def wait(self, sid: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        last: dict[str, Any] = {}

        def matched() -> dict[str, Any] | None:
            last.update(self.view(sid))
            return dict(last) if check(last) else None

        return wait_for(matched, f"session {sid}", timeout,
                        describe=lambda: f"{last.get('status')} {last.get('interrupts')}")

    def wait_status(self, sid: str, status: str, timeout: float = 60) -> dict[str, Any]:
        return self.wait(sid, lambda v: v["status"] == status, timeout)

    def resume(self, sid: str, iid: str, payload: Any) -> requests.Response:
        return self.req("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", {"payload": payload})

    def events(self, sid: str) -> list[dict[str, Any]]:
        return self.ok("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    secret = secrets.token_hex(16)
    monkeypatch.setenv("HOLDPOINT_E2E_WORKER_SECRET", secret)
    server, seen = seed_worker.serve(0, secret)
    yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    server.shutdown()


@pytest.fixture
def stack(local_stack_factory: Callable[..., Any], worker: tuple[str, list[dict[str, Any]]]) -> Any:
    stack = local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})
    os.environ["HOLDPOINT_E2E_WORKER_SECRET"] = os.environ.get("HOLDPOINT_E2E_WORKER_SECRET", "")
    return stack


def declare_agent(api: Api, worker_url: str, **extra: Any) -> None:
    agent = {"llm": {"provider": "scripted", "script": SCRIPT},
             "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}],
             "worker": {"url": worker_url, "secret": "env:HOLDPOINT_E2E_WORKER_SECRET"}, **extra}
    api.ok("PUT", "/v1/agents/assistant", agent)


@pytest.fixture
def api(stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> Api:
    client = Api(stack.base_url, stack.api_key)
    declare_agent(client, worker[0])
    return client


@pytest.fixture
def other_tenant(stack: Any) -> Api:
    key = "hp_other_tenant_key"
    put_api_key(stack.env["TABLE_NAME"], key, "other", "mallory", "operator")
    return Api(stack.base_url, key)


def signed(secret: str, headers: Any, body: bytes) -> bool:
    """Whether a POST Holdpoint made carries its signature under `secret` (PROTOCOL.md §2.7)."""
    return signatures.verify(secret, headers.get(signatures.TIMESTAMP_HEADER, ""), body,
                             headers.get(signatures.SIGNATURE_HEADER, ""), time.time())


Answer = Callable[[Any, dict[str, Any], dict[str, Any] | None], dict[str, Any] | None]


@contextmanager
def worker_answering(api: Api, answer: Answer, **agent: Any) -> Iterator[list[dict[str, Any]]]:
    """A signed HTTP worker (the SDK's, as the seed's) deciding with `answer(self, trigger, proposed)`,
    where `self.seen` holds the requests so far, `self.calls` the request's open calls and
    `self.headers` its HTTP headers (lower-cased); the agent
    is declared on it (with `agent`'s other fields). Yields the requests it saw."""
    worker = seed_worker.worker(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    worker.calls, worker.headers = None, {}
    received = threading.local()
    handle = worker.handle

    def handling(body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        received.headers = {k.lower(): v for k, v in headers.items()}
        return handle(body, headers)

    def answering(sent: dict[str, Any]) -> Any:
        worker.calls, worker.headers = sent.get("calls"), getattr(received, "headers", {})
        return answer(worker, sent["trigger"], sent.get("proposed"))

    worker.handle = handling  # type: ignore[method-assign]
    worker.decide = lambda request: answering(request.wire())
    server = worker.serve()
    declare_agent(api, f"http://127.0.0.1:{server.server_address[1]}/", **agent)
    try:
        yield worker.seen
    finally:
        server.shutdown()


@contextmanager
def worker_with_schema(api: Api, schema: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """The seed worker, except its `confirm` interrupt carries `schema` as its response schema."""

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        out = seed_worker.decide(trigger, proposed)
        for action in (out or {}).get("actions", []):
            if action["type"] == "interrupt":
                action["response_schema"] = schema
        return out

    with worker_answering(api, answer) as seen:
        yield seen


def resumed_triggers(seen: list[dict[str, Any]], sid: str) -> list[dict[str, Any]]:
    return [r["trigger"] for r in seen if r["session_id"] == sid and r["trigger"]["type"] == "interrupt.resumed"]


def execution_status(stack: Any, sid: str, iid: str) -> str:
    import json

    sfn = stack.client("stepfunctions")
    for execution in sfn.list_executions(stateMachineArn=stack.env["PARK_STATE_MACHINE_ARN"])["executions"]:
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        data = json.loads(described["input"])
        if data["session_id"] == sid and data["interrupt_id"] == iid:
            return described["status"]
    return "NOT_FOUND"


def wait_execution(stack: Any, sid: str, iid: str, status: str, timeout: float = 60) -> None:
    wait_for(lambda: execution_status(stack, sid, iid) == status, f"the ParkBranch execution to be {status}",
             timeout, describe=lambda: execution_status(stack, sid, iid))
