"""`make demo`: the seed's send_email example, end to end on the embedded local stack.

`make demo INVOKE=sam` runs it on `sam build`'s artifact, every function in its container.

A scripted model asks to call `send_email`; the worker (examples/seed_worker.py, over signed
HTTP) pauses with an `interrupt`; the session sits parked while a ParkBranch execution holds
the task token; a person resumes it; the worker's `tool.result` "sent" (or `tool.error`
"declined") reaches the model, which finishes the turn. Run twice: approved and declined.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import requests

from .stack import LocalStack

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import seed_worker  # noqa: E402

SCRIPT = [
    {"when": {"role": "user"}, "reply": {"content": None, "tool_calls": [
        {"name": "send_email", "arguments": {"to": "bob@example.com", "subject": "Report",
                                             "body": "The report is ready."}}]}},
    {"when": {"role": "tool", "contains": "sent"}, "reply": {"content": "Done: the email to Bob is sent."}},
    {"when": {"role": "tool"}, "reply": {"content": "OK, I did not send the email."}},
]


def show(title: str, obj: Any = None) -> None:
    print(f"\n== {title}")
    if obj is not None:
        print(json.dumps(obj, indent=2))


class Client:
    def __init__(self, base: str, key: str) -> None:
        self.base, self.session = base, requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    READ_TIMEOUT = 120
    """Seconds to wait for an answer. With every function in a container (`INVOKE=sam`), a request
    that reaches a cold function waits for its container to start, and for the authorizer's: on a
    busy 2-core machine the first request took over 30 s."""

    def call(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = (200, 202)) -> Any:
        resp = self.session.request(method, self.base + path, json=body, timeout=self.READ_TIMEOUT)
        if resp.status_code not in ok:
            raise SystemExit(f"{method} {path} -> {resp.status_code}: {resp.text}")
        return resp.json()

    def wait(self, session_id: str, status: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            view: dict[str, Any] = self.call("GET", f"/v1/sessions/{session_id}")
            if view["status"] == status:
                return view
            if time.monotonic() > deadline:
                raise SystemExit(f"session {session_id} stayed {view['status']!r}, wanted {status!r}")
            time.sleep(0.2)


def execution_status(stack: LocalStack, session_id: str, interrupt_id: str) -> str:
    sfn = stack.client("stepfunctions")
    arn = stack.env["PARK_STATE_MACHINE_ARN"]
    for execution in sfn.list_executions(stateMachineArn=arn)["executions"]:
        described = json.loads(sfn.describe_execution(executionArn=execution["executionArn"])["input"])
        if described["session_id"] == session_id and described["interrupt_id"] == interrupt_id:
            return str(execution["status"])
    return "NOT FOUND"


def expect_execution(stack: LocalStack, session_id: str, interrupt_id: str, want: str, secs: float = 30) -> str:
    """The ParkBranch execution's status once it is `want`; otherwise the demo stops, naming what
    it saw and where to look (exit 1), instead of printing a wrong line and going on."""
    deadline = time.monotonic() + secs
    while (got := execution_status(stack, session_id, interrupt_id)) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    if got != want:
        raise SystemExit(f"demo: FAIL: the ParkBranch execution of {interrupt_id} is {got}, wanted {want} after "
                         f"{secs:.0f} s; the engine's log (\"record failed\", at ERROR) says why, for example a "
                         "StartExecution that template.yaml does not grant")
    return got


def run_once(stack: LocalStack, client: Client, approved: bool) -> None:
    label = "approved" if approved else "declined"
    show(f"[{label}] the user asks; the model wants send_email; the worker interrupts")
    out = client.call("POST", "/v1/sessions", {
        "type": "client.message", "agent_id": "assistant",
        "message": {"role": "user", "content": "Email Bob that the report is ready."}})
    sid = out["session_id"]
    print(f"POST /v1/sessions -> 202 {out}")
    view = client.wait(sid, "interrupted")
    [interrupt] = view["interrupts"]
    show(f"[{label}] GET /v1/sessions/{sid}: status={view['status']}, open interrupt", interrupt)
    iid = interrupt["interrupt_id"]
    parked = expect_execution(stack, sid, iid, "RUNNING")
    print(f"ParkBranch execution: {parked} (holding the task token, no compute)")
    body = {"payload": {"approved": approved}}
    show(f"[{label}] a person resumes: POST /v1/sessions/{sid}/interrupts/{iid}/resume", body)
    print(json.dumps(client.call("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", body)))
    again = client.call("POST", f"/v1/sessions/{sid}/interrupts/{iid}/resume", body)
    print(f"resume again (duplicate) -> {json.dumps(again)}")
    view = client.wait(sid, "done")
    print(f"ParkBranch execution: {expect_execution(stack, sid, iid, 'SUCCEEDED')}")
    show(f"[{label}] final messages (status={view['status']})")
    for message in view["messages"]:
        text = message.get("content")
        if message.get("tool_calls"):
            text = "calls " + ", ".join(f"{c['function']['name']}({c['function']['arguments']})"
                                        for c in message["tool_calls"])
        print(f"  {message['role']:>9}: {text}")
    events = client.call("GET", f"/v1/sessions/{sid}/events?limit=500")["events"]
    print("events: " + ", ".join(e["type"] for e in events if not e["type"].startswith("decision.")))


def agent(worker_url: str) -> dict[str, Any]:
    """The demo's agent: the scripted model, the send_email tool, the seed worker over signed HTTP."""
    return {
        "model": "scripted-demo",
        "llm": {"provider": "scripted", "script": SCRIPT},
        "system": "You send emails for the user.",
        "tools": [{"name": "send_email", "description": "Send an email",
                   "input": {"type": "object", "required": ["to"],
                             "properties": {"to": {"type": "string"}, "subject": {"type": "string"},
                                            "body": {"type": "string"}}}}],
        "worker": {"url": worker_url, "secret": f"env:{SECRET_ENV}"},
    }


SECRET_ENV = "HOLDPOINT_DEMO_WORKER_SECRET"


def run(stack: LocalStack) -> list[dict[str, Any]]:
    """The scenario on a started stack (its secret set before the start): approved, then declined;
    returns the decisions the worker received."""
    worker, seen = seed_worker.serve(0, os.environ[SECRET_ENV], host=stack.host)
    worker_url = f"http://{stack.host}:{worker.server_address[1]}/"
    try:
        print(f"local stack ({stack.invoke}): API {stack.base_url}, moto {stack.moto_endpoint}, worker {worker_url}")
        client = Client(stack.base_url, stack.api_key)
        client.call("PUT", "/v1/agents/assistant", agent(worker_url))
        print("PUT /v1/agents/assistant -> 200 (scripted model, send_email tool, signed HTTP worker)")
        run_once(stack, client, approved=True)
        run_once(stack, client, approved=False)
        print(f"\nthe worker received {len(seen)} signed decisions; demo finished.")
        return list(seen)
    finally:
        worker.shutdown()
        worker.server_close()


def main() -> None:
    os.environ[SECRET_ENV] = secrets.token_hex(16)
    quiet = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    # HOLDPOINT_TEMPLATE: another template (a test's copy with a grant removed) with this checkout's code.
    template = os.environ.get("HOLDPOINT_TEMPLATE")
    where: dict[str, Any] = {"template_path": template, "code_root": ROOT} if template else {}
    with LocalStack(http_port=int(os.environ.get("HOLDPOINT_PORT", "0")), extra_env=quiet, **where) as stack:
        run(stack)


if __name__ == "__main__":
    main()
