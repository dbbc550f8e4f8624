"""`make smoke URL=... KEY=...`: the seed scenario against any deployment, in one line.

It declares a throwaway agent (the scripted model and `send_email`, so no LLM is needed) whose
worker is the seed worker, then runs the scenario twice: the model asks for `send_email`, the
worker parks the branch with an `interrupt`, the session lists as `interrupted` and the inbox
shows it, a person resumes it (approve, then decline), a repeated resume is a no-op, and the
turn ends with the answer the model gives for "sent" or "declined". It prints one line, `smoke:
PASS ...` (exit 0) or `smoke: FAIL at <step>: <why>` (exit 1).

The deployment must reach the worker. By default the seed worker runs in this process on
127.0.0.1, which the local stack (`make serve`) reaches; a cloud deployment needs a public HTTPS
worker given as `--worker-url` (see the README, "First run on AWS"). When `HOLDPOINT_WORKER_SECRET`
is set, the in-process worker verifies signatures with it and the agent references it as
`env:HOLDPOINT_WORKER_SECRET` (the stack needs the same variable); `--worker-secret-ref` names
another reference (`secretsmanager:...` in the cloud).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from ..demo import SCRIPT, Client

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import seed_worker  # noqa: E402

SECRET_ENV = "HOLDPOINT_WORKER_SECRET"
EXPECTED = {True: "Done: the email to Bob is sent.", False: "OK, I did not send the email."}  # demo.SCRIPT's


class Failed(Exception):
    """A step of the scenario did not go as the seed says it must."""


def agent_config(worker_url: str, secret_ref: str | None) -> dict[str, Any]:
    worker: dict[str, Any] = {"url": worker_url}
    if secret_ref:
        worker["secret"] = secret_ref
    return {"llm": {"provider": "scripted", "script": SCRIPT}, "system": "You send emails for the user.",
            "tools": [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}], "worker": worker}


class Scenario:
    """The seed scenario against one deployment, step by step; `step` names where it is."""

    def __init__(self, client: Client, agent_id: str, timeout: float) -> None:
        self.client, self.agent_id, self.timeout = client, agent_id, timeout
        self.step = "start"

    def call(self, step: str, method: str, path: str, body: Any = None) -> Any:
        self.step = step
        try:
            return self.client.call(method, path, body)
        except SystemExit as exc:  # the demo client's way of saying the answer was not 200/202
            raise Failed(str(exc)) from None

    def wait(self, step: str, session_id: str, status: str) -> dict[str, Any]:
        self.step = step
        try:
            return self.client.wait(session_id, status, self.timeout)
        except SystemExit as exc:
            raise Failed(str(exc)) from None

    def declare(self, worker_url: str, secret_ref: str | None) -> None:
        self.call("declare agent", "PUT", f"/v1/agents/{self.agent_id}", agent_config(worker_url, secret_ref))

    def run(self, approved: bool) -> str:
        """Park, check the listing and the inbox, resume (twice), and check the outcome."""
        label = "approve" if approved else "decline"
        out = self.call(f"{label}: start session", "POST", "/v1/sessions", {
            "type": "client.message", "agent_id": self.agent_id,
            "message": {"role": "user", "content": "Email Bob that the report is ready."}})
        sid = str(out["session_id"])
        view = self.wait(f"{label}: park", sid, "interrupted")
        interrupts = view["interrupts"]
        if len(interrupts) != 1 or interrupts[0].get("reason") != "confirm":
            raise Failed(f"expected one open `confirm` interrupt, got {interrupts}")
        iid = interrupts[0]["interrupt_id"]
        self.check_listed(label, sid, iid)
        path = f"/v1/sessions/{sid}/interrupts/{iid}/resume"
        first = self.call(f"{label}: resume", "POST", path, {"payload": {"approved": approved}})
        again = self.call(f"{label}: repeated resume", "POST", path, {"payload": {"approved": approved}})
        if first.get("noop") is not False or again.get("noop") is not True:
            raise Failed(f"resume answered {first}, the repeat {again}")
        view = self.wait(f"{label}: finish", sid, "done")
        last = (view["messages"] or [{}])[-1].get("content")
        if last != EXPECTED[approved]:
            raise Failed(f"the turn ended with {last!r}, expected {EXPECTED[approved]!r}")
        return sid

    def check_listed(self, label: str, sid: str, iid: str) -> None:
        listed = self.call(f"{label}: list sessions", "GET", f"/v1/sessions?agent_id={self.agent_id}&limit=100")
        if sid not in [row["session_id"] for row in listed["sessions"]]:
            raise Failed(f"session {sid} is not in GET /v1/sessions")
        inbox = self.call(f"{label}: inbox", "GET", "/v1/interrupts?status=open&limit=100")
        if iid not in [i["interrupt_id"] for i in inbox["interrupts"]]:
            raise Failed(f"interrupt {iid} is not in GET /v1/interrupts (the newest 100)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m holdpoint_local.deploy.smoke",
                                     description=__doc__.split("\n\n")[0])
    local = f"http://127.0.0.1:{os.environ.get('HOLDPOINT_PORT') or 8787}"  # `make serve`'s
    parser.add_argument("--url", default=os.environ.get("URL") or local,
                        help="the API's base URL (make deploy prints it; default: make serve's)")
    parser.add_argument("--key", default=os.environ.get("KEY") or os.environ.get("HOLDPOINT_API_KEY")
                        or "hp_dev_local_key",
                        help="an API key of the tenant (not a client token: it declares an agent)")
    parser.add_argument("--worker-url", default=os.environ.get("WORKER_URL") or None,
                        help="a worker the deployment can reach (default: the seed worker, here, on 127.0.0.1)")
    parser.add_argument("--worker-secret-ref", default=os.environ.get("WORKER_SECRET_REF") or None,
                        help=f"the agent's worker.secret reference (default: env:{SECRET_ENV} when it is set)")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds each wait may take")
    args = parser.parse_args(argv)
    if not args.url.startswith(("http://", "https://")):
        parser.error("--url must start with http:// or https://")
    if args.worker_url and not args.worker_url.startswith(("http://", "https://")):
        parser.error("--worker-url must start with http:// or https://")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = args.url.rstrip("/")
    server = None
    secret_ref = args.worker_secret_ref
    worker_url = args.worker_url
    if worker_url is None:
        secret = os.environ.get(SECRET_ENV) or None
        server, _ = seed_worker.serve(0, secret)
        worker_url = f"http://127.0.0.1:{server.server_address[1]}/"
        secret_ref = secret_ref or (f"env:{SECRET_ENV}" if secret else None)
    scenario = Scenario(Client(base, args.key), f"smoke-{secrets.token_hex(4)}", args.timeout)
    started = time.monotonic()
    try:
        scenario.declare(worker_url, secret_ref)
        done = [scenario.run(approved) for approved in (True, False)]
    except Failed as exc:
        print(f"smoke: FAIL at {scenario.step}: {exc} ({base})")
        return 1
    except OSError as exc:  # connection refused, DNS, TLS: requests' errors are OSErrors
        print(f"smoke: FAIL at {scenario.step}: {exc.__class__.__name__}: {exc} ({base})")
        return 1
    finally:
        if server is not None:
            server.shutdown()
    print(f"smoke: PASS park, list, inbox, resume (approve and decline), repeated resume no-op, "
          f"{len(done)} sessions done in {time.monotonic() - started:.1f} s ({base}, agent {scenario.agent_id})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
