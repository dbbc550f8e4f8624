"""The command line the framework examples share (strands_approval.py, langgraph_approval.py,
openai_agents_approval.py): each brings its agent, this brings Holdpoint.

    python examples/<example>.py resume    # the run's target: declares itself on the agent, takes
                                           # each delivery, resumes the run, prints the reply
    python examples/<example>.py start     # runs "Email Bob" until the agent asks; then exits

The agent's process ends after `start`: nothing runs while a person decides. `resume` is the
target Holdpoint delivers the answers to (a signed POST; in AWS a Lambda function or an SQS queue
would be, with `Deliveries.lambda_handler` or `sqs_handler`). It keeps each delivery it took in
its work folder, and `resume --delivery FILE` takes one from a file, as an SQS message would hand
it: a delivery taken before is a repeat, and resumes nothing.

Needs HOLDPOINT_URL and HOLDPOINT_API_KEY (`make serve` writes them to .holdpoint/local.env) and
the secret the deliveries are signed with in HOLDPOINT_WORKER_SECRET (the one `make serve` has).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holdpoint_sdk.client import Client, HoldpointError
from holdpoint_sdk.runs import Deliveries, FileSeen, RunDelivery, delivery

TARGET = "resume"
"""The name of the run target the examples declare on their agent."""


@dataclass
class Context:
    """What an example's agent is given: the client, its work folder and the run's settings."""

    client: Client
    workdir: Path
    run_id: str = ""
    asked: dict[str, Any] = field(default_factory=dict)
    jwks: dict[str, Any] | None = None
    """The deployment's receipt keys (`resume --check-receipts`): each approved call's receipt is checked."""

    def send_email(self, to: str) -> str:
        """The side effect an approval guards: one line in the outbox per email sent."""
        with (self.workdir / "outbox.txt").open("a") as out:
            out.write(f"to={to} pid={os.getpid()}\n")
        return f"email sent to {to}"


@dataclass(frozen=True)
class Example:
    """An example: its Holdpoint agent, how its agent starts a run, and how a delivery resumes one."""

    agent_id: str
    start: Callable[[Context], dict[str, Any] | None]
    resume: Callable[[Context, RunDelivery], str]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", help="where sessions, taken deliveries and the outbox are kept")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="run the agent until it asks; then exit")
    start.add_argument("--run", help="the run id (a new one by default)")
    start.add_argument("--expires-in", type=int, help="seconds until each approval expires")
    start.add_argument("--on-expiry", choices=["approve", "deny", "cancel"], help="what an expiry answers")
    start.add_argument("--approvers", help="comma-separated subjects who may answer")
    start.add_argument("--quorum", type=int, help="how many of them must approve")
    start.add_argument("--edit", action="store_true",
                       help="the approvers may edit the call's arguments (the agent must allow it: resume --edit)")
    resume = commands.add_parser("resume", help="take deliveries and resume the runs")
    resume.add_argument("--listen", default="127.0.0.1:8791", help="HOST:PORT to receive deliveries on (port 0: any)")
    resume.add_argument("--url", help="the URL Holdpoint posts to (http://HOST:PORT/ by default)")
    resume.add_argument("--secret-env", default="HOLDPOINT_WORKER_SECRET",
                        help="the variable holding the signing secret, here and in Holdpoint")
    resume.add_argument("--count", type=int, default=1, help="exit after resuming this many runs")
    resume.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    resume.add_argument("--delivery", help="take one delivery from this file instead of listening")
    resume.add_argument("--edit", action="store_true", help="declare the agent's approvals editable")
    resume.add_argument("--check-receipts", action="store_true",
                        help="run an approved call only if its answer's receipt verifies for it")
    return parser


def _asked(args: argparse.Namespace) -> dict[str, Any]:
    asked: dict[str, Any] = {"expires_in": args.expires_in, "on_expiry": args.on_expiry}
    if args.approvers:
        asked["approval"] = {"subjects": args.approvers.split(","), "quorum": args.quorum or 1,
                             **({"edit": True} if args.edit else {})}
    return {k: v for k, v in asked.items() if v is not None}


def start(example: Example, ctx: Context, args: argparse.Namespace) -> int:
    ctx.run_id, ctx.asked = args.run or f"run-{uuid.uuid4().hex[:12]}", _asked(args)
    raised = example.start(ctx)
    if raised is None:
        print("the agent finished without asking")
        return 0
    print(json.dumps({"run_id": raised["run_id"], "session_id": raised["session_id"],
                      "interrupts": [i["interrupt_id"] for i in raised["interrupts"]]}))
    return 0


def _taker(example: Example, ctx: Context, done: Callable[[], None]) -> Deliveries:
    def take(one: RunDelivery) -> None:
        (ctx.workdir / "deliveries").mkdir(exist_ok=True)
        (ctx.workdir / "deliveries" / f"{one.delivery_id}.json").write_text(one.model_dump_json())
        print(json.dumps({"run_id": one.run_id, "verdicts": [a.verdict for a in one.answers],
                          "reply": example.resume(ctx, one)}), flush=True)
        done()

    return Deliveries(take, FileSeen(ctx.workdir / "taken"))


def resume(example: Example, ctx: Context, args: argparse.Namespace) -> int:
    left = threading.Semaphore(0)
    ctx.jwks = ctx.client.jwks() if args.check_receipts else None
    deliveries = _taker(example, ctx, left.release)
    if args.delivery:
        if not deliveries.take(delivery(Path(args.delivery).read_bytes())):
            print(json.dumps({"repeat": True, "note": "this delivery was taken before: nothing resumed"}))
        return 0
    host, port = args.listen.rsplit(":", 1)
    server = deliveries.serve(os.environ[args.secret_env], host, int(port))
    url = args.url or f"http://{host}:{server.server_address[1]}/"
    ctx.client.declare_agent(example.agent_id, {"run_targets": {TARGET: {
        "url": url, "secret": f"env:{args.secret_env}"}}, **({"approval": {"edit": True}} if args.edit else {})})
    print(json.dumps({"listening": url}), flush=True)
    try:
        for _ in range(args.count):
            if not left.acquire(timeout=args.timeout):
                print("timed out waiting for a delivery", file=sys.stderr)
                return 1
        return 0
    finally:
        server.shutdown()


def main(example: Example, argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    workdir = Path(args.workdir or Path(".holdpoint") / "examples" / example.agent_id)
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(Client.from_env(), workdir)
    try:
        return (start if args.command == "start" else resume)(example, ctx, args)
    except HoldpointError as exc:
        print(exc.line(), file=sys.stderr)
        return 1
