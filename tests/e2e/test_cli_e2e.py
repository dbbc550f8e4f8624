"""The `holdpoint` command and `holdpoint_sdk.client` over HTTP on the local stack: list the inbox,
show an interrupt, approve it (the worker acts on it), follow the event log, and one-line errors
carrying the API's error code."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

from holdpoint_sdk import cli
from holdpoint_sdk.client import Client
from tests.conftest import ROOT
from tests.stack import Api, resumed_triggers, wait_execution


def run(stack: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), client=Client(stack.base_url, stack.api_key), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_approve_resolves_an_interrupt_over_http(api: Api, stack: Any, worker: Any) -> None:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    wait_execution(stack, sid, iid, "RUNNING")

    code, out, _ = run(stack, "inbox")
    assert code == 0 and iid in out and sid in out and "Send the email?" in out
    code, out, _ = run(stack, "--json", "inbox", "--reason", "confirm", "--mine")
    assert code == 0 and [i["interrupt_id"] for i in json.loads(out)["interrupts"]] == [iid]
    code, out, _ = run(stack, "--json", "show", iid)
    shown = json.loads(out)
    assert code == 0 and shown["session_id"] == sid and shown["action"]["tool"] == "send_email"

    code, _, err = run(stack, "approve", sid, iid, "--fingerprint", "0" * 64)  # A3: not this action
    assert code == 1 and err.startswith("error: stale_approval: ") and err.endswith("(expect_fingerprint)\n")
    code, out, err = run(stack, "approve", sid, iid, "--fingerprint", shown["action"]["fingerprint"])
    assert (code, err) == (0, "") and out == f"approved {iid} in {sid}\n"
    view = api.wait_status(sid, "done")
    wait_execution(stack, sid, iid, "SUCCEEDED")
    assert view["messages"][2]["content"] == "sent"
    assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]

    code, out, _ = run(stack, "deny", sid, iid)  # A4: the second answer changes nothing
    assert code == 0 and out.startswith("already answered by dev-user")
    code, out, _ = run(stack, "--json", "tail", sid, "--no-follow")
    types = [json.loads(line)["type"] for line in out.splitlines()]
    assert code == 0 and types.count("session.interrupted") == 1 and types.count("session.interrupt_resumed") == 1


def test_cli_errors_are_one_line_with_the_api_code(api: Api, stack: Any) -> None:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    iid = interrupt["interrupt_id"]
    code, out, err = run(stack, "resume", "sess-unknown", iid, "--payload", "{}")
    assert (code, out) == (1, "") and err == "error: not_found: session sess-unknown not found\n"
    code, _, err = run(stack, "resume", sid, iid, "--payload", "{not json")
    assert code == 1 and err.startswith("error: usage: --payload is not valid JSON") and err.count("\n") == 1
    code, _, err = run(stack, "show", "int-none")
    assert code == 1 and err == "error: not_found: no open interrupt int-none (interrupt_id)\n"
    bad = cli.main(["inbox"], client=Client(stack.base_url, "hp_wrong_key"), stdout=io.StringIO(),
                   stderr=(wrong := io.StringIO()))
    assert bad == 1 and wrong.getvalue().startswith("error: http_403: Forbidden: the API's authorizer refused")
    assert wrong.getvalue().endswith("check the key\n")  # API Gateway's bare 403, with the next step
    assert api.view(sid)["status"] == "interrupted"  # nothing was answered


def test_cli_reads_its_configuration_from_the_environment(api: Api, stack: Any) -> None:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    env = {**os.environ, "HOLDPOINT_URL": stack.base_url, "HOLDPOINT_API_KEY": stack.api_key,
           "PYTHONPATH": str(ROOT / "sdk/src")}
    done = subprocess.run([sys.executable, "-m", "holdpoint_sdk.cli", "--json", "inbox"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert interrupt["interrupt_id"] in [i["interrupt_id"] for i in json.loads(done.stdout)["interrupts"]]
    env.pop("HOLDPOINT_API_KEY")
    done = subprocess.run([sys.executable, "-m", "holdpoint_sdk.cli", "inbox"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1 and done.stderr == "error: config: no credentials: set HOLDPOINT_API_KEY\n"
