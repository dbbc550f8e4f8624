"""Run a moto server ("AWS" for the local stack) in a child process with Step Functions execution on.

A child process rather than a thread: it outlives a restarted front end / poller set (so tests can
simulate a Lambda fleet restart while "AWS" keeps its state), and moto's own threads (Step Functions
executions waiting on task tokens) do not compete with the handlers for this process's GIL.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .. import ACCOUNT_ID, FAKE_ENV
from ..processes import end
from . import awslambda

# The child runs moto.server and exits when its parent goes away (killed test run, Ctrl-C twice),
# so a moto server is never left orphaned holding a port. It applies the fixes (holdpoint_local.moto)
# first (atomic conditional writes, item-level transaction rollback).
_CHILD = """
import os, sys, threading, time
sys.path.insert(0, os.environ["HOLDPOINT_LOCAL_DIR"])
from holdpoint_local import moto as fixes
fixes.apply()
if os.environ.get("HOLDPOINT_IAM", "1") != "0":
    from holdpoint_local.moto import iam
    iam.enforce(os.environ["HOLDPOINT_ACCOUNT_ID"])
print(f"{fixes.MARKER} (moto {fixes.PINNED})", flush=True)
parent = os.getppid()
def _watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=_watch, daemon=True).start()
from moto.server import main
sys.argv[0] = "moto_server"
main(sys.argv[1:])
"""

SFN_CONFIG = {"stepfunctions": {"execute_state_machine": True}}


def free_port() -> int:
    """Ask the OS for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _http(method: str, url: str, body: dict[str, Any] | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - local endpoint only
        return resp.status, resp.read()


def wait_ready(endpoint: str, timeout: float = 60.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Poll the moto API until the server answers (a cold start imports a lot of moto)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"moto server exited with {proc.returncode} (port taken?)")
        try:
            # /moto-api/config is cheap; data.json would dump every resource (slow once tests pile up)
            _http("GET", f"{endpoint}/moto-api/config", timeout=2.0)
            return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
            time.sleep(0.1)
    raise TimeoutError(f"moto server at {endpoint} not ready after {timeout}s: {last}")


def enable_sfn_execution(endpoint: str) -> None:
    """Switch moto's Step Functions backend to the executing one (the ASL interpreter).

    moto 5.2.5 reads `stepfunctions.execute_state_machine` from its user config per request; it is set
    through POST /moto-api/config. Must happen before a state machine is created, because the
    executing backend and the plain one keep separate state. (GET /moto-api/config does not echo
    the stepfunctions key back in 5.2.5, so the POST status is all there is to check.)
    """
    status, _ = _http("POST", f"{endpoint}/moto-api/config", SFN_CONFIG)
    if status not in (200, 201):
        raise RuntimeError(f"moto refused the Step Functions config (HTTP {status})")


def _set_lambda(endpoint: str, key: str, url: str | None) -> None:
    """One of Lambda's local settings (fixes 29-30, awslambda.py); the others are kept."""
    status, body = _http("GET", f"{endpoint}/moto-api/config")  # moto answers it 201, as a POST
    if status not in (200, 201):
        raise RuntimeError(f"moto did not give its config (HTTP {status})")
    config = dict(json.loads(body).get("lambda") or {})
    config.pop(key, None)
    if url is not None:
        config[key] = url
    status, _ = _http("POST", f"{endpoint}/moto-api/config", {"lambda": config})
    if status not in (200, 201):
        raise RuntimeError(f"moto refused the Lambda setting {key} (HTTP {status})")


def set_durable_endpoint(endpoint: str, url: str | None) -> None:
    """Fix 29: the durable execution emulator that answers the durable functions' callbacks (None:
    none, every callback unknown)."""
    _set_lambda(endpoint, awslambda.ENDPOINT_KEY, url)


def set_invoke_endpoint(endpoint: str, url: str | None) -> None:
    """Fix 30: the Lambda Invoke API (`sam local start-lambda`) that runs the functions moto is
    asked to invoke (None: moto's own Docker invoke)."""
    _set_lambda(endpoint, awslambda.INVOKE_KEY, url)


def set_execution_cap(endpoint: str, cap: int | None) -> None:
    """Local-only control (stepfunctions.CAP_KEY): past `cap` running executions StartExecution answers
    ExecutionLimitExceeded, as Step Functions does at its open-execution ceiling; None lifts it."""
    config: dict[str, Any] = {**SFN_CONFIG["stepfunctions"]}
    if cap is not None:
        config["open_executions_cap"] = cap
    status, _ = _http("POST", f"{endpoint}/moto-api/config", {"stepfunctions": config})
    if status not in (200, 201):
        raise RuntimeError(f"moto refused the execution cap (HTTP {status})")


class MotoServer:
    """A moto server child process bound to 127.0.0.1 on a free (or given) port."""

    def __init__(self, port: int | None = None, log_path: str | os.PathLike[str] | None = None,
                 *, iam: bool = True) -> None:
        self.port = port or free_port()
        self.iam = iam  # IAM enforced: every call is checked against its caller's policies (iam.py)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log_path = Path(log_path) if log_path else None
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> MotoServer:
        env = {**os.environ, **FAKE_ENV, "MOTO_PORT": str(self.port), "HOLDPOINT_ACCOUNT_ID": ACCOUNT_ID,
               "HOLDPOINT_IAM": "1" if self.iam else "0",
               "HOLDPOINT_LOCAL_DIR": str(Path(__file__).resolve().parents[2])}
        # Step Functions' service integrations call back into moto at http://localhost:$MOTO_PORT.
        env.pop("AWS_ENDPOINT_URL", None)
        out = open(self._log_path, "ab") if self._log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, "-H", "127.0.0.1", "-p", str(self.port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if not isinstance(out, int):
                out.close()
        try:
            wait_ready(self.endpoint, timeout, self._proc)
            enable_sfn_execution(self.endpoint)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)  # no orphaned server when the owner exits without stop()
        return self

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self) -> None:
        atexit.unregister(self.stop)
        if self._proc is None:
            return
        end(self._proc, grace=10)
        self._proc = None

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
