"""The framework examples (examples/<name>_approval.py) run as docs/RUNS.md shows them, each with
the python of its own SDK venv (`make sdk-venvs`: .venv-sdk/<extra>, the SDK and the framework's
real package), against a local stack: `start` in a process that ends, `resume` in another that
receives the delivery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests.conftest import ROOT
from tests.waiting import wait_for

TARGET = "resume"
"""The run target the examples declare on their agent (examples/run_approvals.py)."""
SECRET_ENV = "HOLDPOINT_E2E_WORKER_SECRET"
"""The signing secret the stack's functions and the example's receiver share (the `worker` fixture's)."""


@dataclass(frozen=True)
class Framework:
    name: str  # the test id: `pytest -k strands`
    extra: str  # the SDK extra, and its venv's name
    agent_id: str

    @property
    def python(self) -> Path:
        return ROOT / ".venv-sdk" / self.extra / "bin" / "python"

    @property
    def script(self) -> str:
        return f"examples/{self.name}_approval.py"


FRAMEWORKS = [Framework("strands", "strands", "strands-mailer"),
              Framework("langgraph", "langgraph", "langgraph-mailer"),
              Framework("openai_agents", "openai-agents", "openai-agents-mailer")]


class ExampleRun:
    """One example's processes against `stack`, with its own work folder."""

    def __init__(self, framework: Framework, stack: Any, workdir: Path) -> None:
        self.framework, self.stack, self.workdir = framework, stack, workdir
        self.env = {**os.environ, "HOLDPOINT_URL": stack.base_url, "HOLDPOINT_API_KEY": stack.api_key,
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTHONPATH": str(ROOT / "sdk" / "src")}  # this checkout's SDK, whichever the venv installed

    def command(self, *args: str) -> list[str]:
        return [str(self.framework.python), self.framework.script, "--workdir", str(self.workdir), *args]

    def start(self, *args: str) -> dict[str, Any]:
        """`start` to its end: the run it raised in Holdpoint."""
        done = subprocess.run(self.command("start", *args), cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    def resume(self, count: int = 1, *args: str) -> Resuming:
        """`resume` in the background, once it listens (and has declared itself the target)."""
        proc = subprocess.Popen(self.command("resume", "--listen", "127.0.0.1:0", "--secret-env", SECRET_ENV,
                                             "--count", str(count), "--timeout", "120", *args),
                                cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        resuming = Resuming(proc)
        wait_for(lambda: resuming.line("listening"), "the example's receiver to listen", 60,
                 describe=resuming.stderr)
        return resuming

    def again(self, delivery_file: Path, *args: str) -> dict[str, Any]:
        """`resume --delivery FILE`: a delivery handed over from a file (the same once more, or one
        a test altered)."""
        done = subprocess.run(self.command("resume", "--delivery", str(delivery_file), *args), cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    def checks_receipts(self) -> bool:
        """Whether the framework's venv has the SDK's `receipts` extra (`cryptography`)."""
        return subprocess.run([str(self.framework.python), "-c", "import cryptography"], capture_output=True,
                              check=False).returncode == 0

    def outbox(self) -> list[str]:
        path = self.workdir / "outbox.txt"
        return path.read_text().splitlines() if path.exists() else []

    def deliveries(self) -> list[Path]:
        return sorted((self.workdir / "deliveries").glob("*.json"))


class Resuming:
    """A running `resume`: its printed lines, read on a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc, self.lines = proc, []
        import threading

        threading.Thread(target=self._read, args=(proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[str] | None) -> None:
        for raw in stream or []:
            self.lines.append(json.loads(raw))

    def line(self, key: str) -> dict[str, Any] | None:
        return next((line for line in list(self.lines) if key in line), None)

    def stderr(self) -> str:
        return "" if self.proc.poll() is None else (self.proc.stderr.read() if self.proc.stderr else "")

    def finished(self, timeout: float = 120) -> list[dict[str, Any]]:
        """Its replies, once it exits (after its `--count` deliveries)."""
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        err = self.proc.stderr.read() if self.proc.stderr else ""
        assert code == 0, err
        return [line for line in self.lines if "reply" in line]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        print(self.stderr(), file=sys.stderr)
