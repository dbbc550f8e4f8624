"""The client examples, run exactly as the documents print them (each command line is read from
the ```sh blocks of the README and the pages of docs/, where a reader finds it: docs/CHANNELS.md
and docs/RUNS.md), against the local stack and the shipped seed worker, unwrapped:

- `examples/agui_approve.mjs`: AG-UI's `HttpAgent` parks, approves through `resume[]`, and ends with
  "Email sent.";
- `examples/a2a_approve.py`: the `a2a-sdk` client's task waits for input, the data part approves
  it, and it completes with "Email sent.";
- `examples/follow_live.py`: a WebSocket follower prints the session's events as they commit, from
  the parked interrupt to the finished turn."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.stack import Api, resumed_triggers
from tests.waiting import wait_for

EXAMPLES = ROOT / "examples"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def printed_lines(example: str) -> list[str]:
    """Every command line of the documents' ```sh blocks that runs `examples/<example>`, without its
    trailing comment."""
    return [re.sub(r"\s+#\s.*$", "", line) for page in DOCUMENTS
            for block in re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
            for line in block.splitlines() if f"examples/{example}" in line and not line.lstrip().startswith("#")]


def readme_command(example: str) -> str:
    """The documents' one command line that runs `examples/<example>`."""
    lines = printed_lines(example)
    assert len(lines) == 1, f"the documents run examples/{example} once, as a command: {lines}"
    return lines[0]


def run_as_printed(example: str, stack: Any, **env: str) -> subprocess.CompletedProcess[str]:
    """The documents' command, as printed, in a shell at the checkout's root, with the settings
    `make serve` writes to `.holdpoint/local.env` (which the documents source) pointing at this stack."""
    settings = {**os.environ, "HOLDPOINT_URL": stack.base_url, "HOLDPOINT_API_KEY": stack.api_key,
                "HOLDPOINT_LIVE_URL": stack.live.url, **env}
    return subprocess.run(["bash", "-c", readme_command(example)], cwd=ROOT, env=settings, capture_output=True,
                          text=True, timeout=180, check=False)


@pytest.fixture(scope="session")
def example_packages() -> None:
    """The examples' npm packages, installed from their lock file, as the documents' `npm ci` does."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed (`make test` installs it)"
    lock = hashlib.sha256((EXAMPLES / "package-lock.json").read_bytes()).hexdigest()
    stamp = EXAMPLES / "node_modules" / ".holdpoint-lock"
    if not stamp.exists() or stamp.read_text() != lock:
        subprocess.run([npm, "ci", "--prefix", str(EXAMPLES), "--no-audit", "--no-fund", "--loglevel=error"],
                       check=True, timeout=600)
        stamp.write_text(lock)


def test_example_agui_approve_ends_with_email_sent(stack: Any, api: Api, worker: Any, example_packages: None) -> None:
    done = run_as_printed("agui_approve.mjs", stack)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["asked: Send the email?", "Email sent."]
    [sid] = {r["session_id"] for r in worker[1]}
    [trigger] = resumed_triggers(worker[1], sid)
    assert (trigger["payload"], trigger["channel"]) == ({"approved": True}, "agui")


def test_example_a2a_approve_completes_the_task(stack: Any, api: Api, worker: Any) -> None:
    agent = api.ok("GET", "/v1/agents/assistant")["agent"]
    api.ok("PUT", "/v1/agents/assistant", {**agent, "a2a": {"public": True}})
    done = run_as_printed("a2a_approve.py", stack)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["TASK_STATE_INPUT_REQUIRED Send the email?", "TASK_STATE_COMPLETED Email sent."]


def test_example_follow_live_prints_the_session_to_its_finished_turn(stack: Any, api: Api, worker: Any) -> None:
    sid = api.start()
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    env = {**os.environ, "HOLDPOINT_LIVE_URL": stack.live.url, "HOLDPOINT_API_KEY": stack.api_key, "SID": sid}
    follower = subprocess.Popen(["bash", "-c", readme_command("follow_live.py")], cwd=ROOT, text=True, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert api.resume(sid, interrupt["interrupt_id"], {"approved": True}).status_code == 200
        out, err = follower.communicate(timeout=120)
    finally:
        follower.kill()
    assert follower.returncode == 0, err[-3000:]
    kinds = [line.split(" ", 1)[1] for line in out.splitlines()]
    assert kinds[-1] == "turn.finished" and "session.interrupted" in kinds and "session.interrupt_resumed" in kinds
    seqs = [int(line.split(" ", 1)[0]) for line in out.splitlines()]
    assert seqs == sorted(set(seqs))  # each event once, in order
    wait_for(lambda: api.view(sid)["status"] == "done", "the session done")


def readme_lines(example: str) -> dict[str, str]:
    """The documents' command lines that run `examples/<example>`, by their subcommand."""
    lines = printed_lines(example)
    by_subcommand = {line.split()[-1]: line for line in lines}
    assert len(by_subcommand) == len(lines), f"the documents run examples/{example} twice alike: {lines}"
    return by_subcommand


def test_example_strands_approval_as_printed_sends_the_email_once(stack: Any, api: Api, monkeypatch: Any) -> None:
    """The documents' two commands (docs/RUNS.md), in a shell whose `python` is the one `pip install "./sdk[strands]"`
    installed into (the strands venv, `make sdk-venvs`): `resume` listens, `start` asks and ends,
    the API approves, and `resume` prints the agent's reply and exits."""
    import json
    import secrets

    commands = readme_lines("strands_approval.py")
    assert set(commands) == {"resume", "start"}, commands
    monkeypatch.setenv("HOLDPOINT_WORKER_SECRET", secrets.token_hex(16))  # exported for `make serve` and both shells
    workdir = ROOT / ".holdpoint" / "examples" / "strands-mailer"
    shutil.rmtree(workdir, ignore_errors=True)
    env = {**os.environ, "HOLDPOINT_URL": stack.base_url, "HOLDPOINT_API_KEY": stack.api_key,
           "PATH": f"{ROOT / '.venv-sdk' / 'strands' / 'bin'}:{os.environ['PATH']}"}
    resuming = subprocess.Popen(["bash", "-c", commands["resume"]], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        assert resuming.stdout is not None
        assert "listening" in resuming.stdout.readline()
        started = subprocess.run(["bash", "-c", commands["start"]], cwd=ROOT, env=env, capture_output=True,
                                 text=True, timeout=120, check=False)
        assert started.returncode == 0, started.stderr
        raised = json.loads(started.stdout.splitlines()[-1])
        assert api.resume(raised["session_id"], raised["interrupts"][0], {"approved": True}).status_code == 200
        out, err = resuming.communicate(timeout=120)
    finally:
        if resuming.poll() is None:
            resuming.kill()
    assert resuming.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["reply"].startswith("I emailed Bob")
    assert len((workdir / "outbox.txt").read_text().splitlines()) == 1
