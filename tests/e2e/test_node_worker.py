"""The dependency-free Node worker (examples/node_worker.mjs) against the local stack over HTTP:
the seed's send_email interrupt, a resume, worker state round-tripping, and its signature check."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import ROOT
from tests.stack import SCRIPT, Api, wait_execution
from tests.waiting import wait_for

NODE = shutil.which("node")

WORKER_JS = ROOT / "examples" / "node_worker.mjs"
SECRET_ENV = "HOLDPOINT_NODE_WORKER_SECRET"


@dataclass
class NodeWorker:
    url: str
    secret: str
    proc: subprocess.Popen[bytes]
    log: Path

    def post(self, body: bytes, timestamp: str | None = None, signature: str | None = None) -> requests.Response:
        ts = timestamp if timestamp is not None else str(int(time.time()))
        sig = signature if signature is not None else sign(self.secret, ts, body)
        return requests.post(self.url, data=body, timeout=10, headers={
            "Content-Type": "application/json", "X-Holdpoint-Timestamp": ts, "X-Holdpoint-Signature": sig})


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


@pytest.fixture
def node_worker(tmp_path: Path) -> Iterator[NodeWorker]:
    assert NODE is not None, "node is needed for the Node worker tests (`make test` installs it)"
    secret = secrets.token_hex(16)
    log = tmp_path / "node_worker.log"
    env = {**os.environ, "PORT": "0", "HOLDPOINT_WORKER_SECRET": secret}
    with log.open("wb") as stderr:
        proc = subprocess.Popen([NODE, str(WORKER_JS)], stdout=subprocess.PIPE, stderr=stderr, env=env)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 15)
        line = proc.stdout.readline().decode().strip() if ready else ""
        assert line.startswith("listening on "), f"node worker did not start: {line!r} {log.read_text()}"
        port = int(line.rsplit(" ", 1)[1])
        yield NodeWorker(f"http://127.0.0.1:{port}/", secret, proc, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture
def node_stack(node_worker: NodeWorker, local_stack_factory: Callable[..., Any]) -> Any:
    # node_worker is requested first, so it outlives the stack's pollers at teardown.
    return local_stack_factory(extra_env={"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING"})


@pytest.fixture
def node_api(node_worker: NodeWorker, node_stack: Any, monkeypatch: pytest.MonkeyPatch) -> Api:
    """The local stack with the `assistant` agent's decisions going to the Node worker, signed."""
    stack = node_stack
    monkeypatch.setenv(SECRET_ENV, node_worker.secret)  # the engine resolves `env:NAME` in its own process
    api = Api(stack.base_url, stack.api_key)
    api.ok("PUT", "/v1/agents/assistant", {
        "llm": {"provider": "scripted", "script": SCRIPT},
        "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}],
        "worker": {"url": node_worker.url, "secret": f"env:{SECRET_ENV}"},
    })
    return api


def decision_count(view: dict[str, Any]) -> int:
    state = view.get("state") or {}
    return int(state.get("decisions") or 0)


def delivered(api: Api, sid: str) -> list[dict[str, Any]]:
    return [e for e in api.events(sid) if e["type"] == "decision.delivered"]


@pytest.mark.parametrize("approved", [True, False], ids=["approve", "decline"])
def test_node_worker_runs_the_seed_end_to_end(node_api: Api, node_stack: Any, node_worker: NodeWorker,
                                              approved: bool) -> None:
    api = node_api
    sid = api.start()
    parked = api.wait_status(sid, "interrupted")
    [interrupt] = parked["interrupts"]
    iid = interrupt["interrupt_id"]
    assert interrupt["reason"] == "confirm" and interrupt["payload"] == {"message": "Send the email?"}
    before = decision_count(parked)
    assert before > 0, parked["state"]
    wait_execution(node_stack, sid, iid, "RUNNING")  # the task token holds the pause

    out = api.resume(sid, iid, {"approved": approved})
    assert out.status_code == 200 and out.json() == {"ok": True, "interrupt_id": iid, "noop": False}
    view = api.wait_status(sid, "done")
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert view["messages"][2]["content"] == ("sent" if approved else "declined")
    assert view["messages"][3]["content"] == ("Email sent." if approved else "I did not send it.")

    # Worker state round-trips: each answer is the previous stored state + 1, so the count keeps
    # growing across the pause and ends equal to the number of decisions the engine applied.
    def counted() -> dict[str, Any] | None:
        current = api.view(sid)
        return current if decision_count(current) == len(delivered(api, sid)) else None

    view = wait_for(counted, "the stored worker state to count every applied decision", 30)
    assert decision_count(view) > before
    assert view["state"] == {"decisions": decision_count(view)}
    assert f"{sid} interrupt.resumed -> {'tool.result' if approved else 'tool.error'}" in node_worker.log.read_text()


def test_node_worker_rejects_bad_signatures_with_401(node_worker: NodeWorker) -> None:
    body = json.dumps({"session_id": "s-1", "decision_id": "d-1", "trigger": {"type": "turn.finished"},
                       "proposed": {}, "state": {"decisions": 41}}).encode()
    good = node_worker.post(body)
    assert good.status_code == 200 and good.json() == {"state": {"decisions": 42}}

    ts = str(int(time.time()))
    valid = sign(node_worker.secret, ts, body)
    tampered_sig = valid[:-1] + ("0" if valid[-1] != "0" else "1")
    assert node_worker.post(body, ts, tampered_sig).status_code == 401
    assert node_worker.post(body.replace(b"41", b"99"), ts, valid).status_code == 401  # tampered body
    assert node_worker.post(body, str(int(ts) + 1), valid).status_code == 401  # tampered timestamp
    assert node_worker.post(body, ts, valid[:-2]).status_code == 401  # wrong length
    assert node_worker.post(body, ts, sign("not-the-secret", ts, body)).status_code == 401
    stale = str(int(time.time()) - 301)
    assert node_worker.post(body, stale, sign(node_worker.secret, stale, body)).status_code == 401
    unsigned = requests.post(node_worker.url, data=body, timeout=10)
    assert unsigned.status_code == 401
    assert node_worker.proc.poll() is None
