"""The AG-UI channel over HTTP on the local stack, driven by AG-UI's own client library
(`@ag-ui/client` and `@ag-ui/core` 1.0.0, pinned in tests/agui/package-lock.json and installed
with `npm ci` here): run -> interrupt outcome -> resume[] -> finished, a replayed resume, connect,
and every event body parsed with the library's schemas. Also bad input and other tenants."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api, declare_agent, seed_worker

AGUI = ROOT / "tests" / "agui"
NODE, NPM = shutil.which("node"), shutil.which("npm")
RUN = "/v1/channels/ag-ui/agents/assistant/run"
CONNECT = "/v1/channels/ag-ui/agents/assistant/connect"


@pytest.fixture(scope="session")
def agui_client() -> Path:
    """The pinned AG-UI packages, installed from the lock file (again whenever the lock changed)."""
    assert NODE is not None and NPM is not None, "node and npm are needed (`make test` installs them)"
    lock = hashlib.sha256((AGUI / "package-lock.json").read_bytes()).hexdigest()
    stamp = AGUI / "node_modules" / ".holdpoint-lock"
    if not stamp.exists() or stamp.read_text() != lock:
        subprocess.run([NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=AGUI, check=True,
                       timeout=600)
        stamp.write_text(lock)
    return AGUI / "roundtrip.mjs"


@pytest.fixture
def agui_worker(api: Api) -> Iterator[list[dict[str, Any]]]:
    """The shipped seed worker, as it is: an AG-UI answer reaches it as any other does."""
    server, seen = seed_worker.serve(0, os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    declare_agent(api, f"http://127.0.0.1:{server.server_address[1]}/")
    yield seen
    server.shutdown()


def test_agui_round_trip_with_the_ag_ui_client_library(stack: Any, api: Api, agui_worker: list[dict[str, Any]],
                                                       agui_client: Path) -> None:
    env = {**os.environ, "HP_BASE": stack.base_url, "HP_KEY": stack.api_key, "HP_AGENT": "assistant"}
    done = subprocess.run([str(NODE), str(agui_client)], cwd=AGUI, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["schemaErrors"] == [], report["schemaErrors"][:3]
    parked, finished = report["runs"]
    assert parked["outcome"]["type"] == "interrupt"
    [interrupt] = parked["pending"]
    assert interrupt["reason"] == "confirm" and interrupt["message"] == "Send the email?"
    assert interrupt["metadata"]["origin"] == "worker" and interrupt["toolCallId"]
    assert finished["outcome"] == {"type": "success"} and finished["pending"] == 0
    assert finished["last"]["role"] == "assistant" and finished["last"]["content"] == "Email sent."
    first_types = report["bodies"][0]["types"]
    assert first_types[0] == "RUN_STARTED" and first_types[-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert "TOOL_CALL_START" in first_types and "TEXT_MESSAGE_CONTENT" in report["bodies"][1]["types"]
    assert report["replay"]["status"] == 200 and report["replay"]["contentType"].startswith("text/event-stream")
    assert report["replay"]["outcome"] == {"type": "success"}
    assert report["connect"]["status"] == 200 and report["connect"]["outcome"] == {"type": "success"}
    sid = report["threadId"]
    resumed = [r for r in agui_worker if r["session_id"] == sid and r["trigger"]["type"] == "interrupt.resumed"]
    assert len(resumed) == 1, "the replayed resume reached the worker again"
    trigger = resumed[0]["trigger"]  # the answer as given, as on every channel (PROTOCOL.md §2.3.1)
    assert (trigger["payload"], trigger["verdict"], trigger["channel"]) == ({"approved": True}, "approved", "agui")
    view = api.view(sid)
    assert view["status"] == "done" and view["agent_id"] == "assistant"
    assert [m["id"] for m in view["messages"]] == [m["id"] for m in report["messages"]]


def test_agui_bad_input_is_400_naming_the_field_and_records_nothing(stack: Any, api: Api) -> None:
    before = table_count(stack)
    good = {"threadId": "t-e2e", "runId": "r-1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    refusal(api.req("POST", RUN, {**good, "threadId": 7}), 400, param="threadId")
    refusal(api.req("POST", RUN, {**good, "messages": [{"id": "u1", "role": "robot"}]}), 400,
            param="messages[0].role")
    refusal(api.req("POST", RUN, {**good, "resume": [{"interruptId": "i1", "status": "resolved"}]}), 404,
            param="threadId")  # resume[] on a thread that does not exist
    refusal(api.req("POST", "/v1/channels/ag-ui/agents/nobody/run", good), 404, param="agent_id")
    refusal(api.req("POST", CONNECT, {**good, "messages": []}), 404, param="threadId")
    assert table_count(stack) == before


def test_agui_other_tenants_and_other_users_get_404(stack: Any, api: Api, other_tenant: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    thread = {"threadId": sid, "runId": "c-1", "messages": []}
    resp = api.req("POST", CONNECT, thread)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    assert '"RUN_FINISHED"' in resp.text
    before = table_count(stack)
    refusal(other_tenant.req("POST", CONNECT, thread), 404)
    refusal(client_token_api(stack, "eve").req("POST", CONNECT, thread), 404)
    assert table_count(stack) == before
