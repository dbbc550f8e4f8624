"""The walkthrough, followed in order as a new user would: the README's "Try it with curl" and
"The `holdpoint` command", then docs/WALKTHROUGH.md, which goes on in the same shells.

Every ```sh block of those parts runs as written, in one shell, against `make serve` on a port
that is not the default one (so a command that ignores `HOLDPOINT_PORT` fails). The first block
starts the worker and the stack; each line of it runs in the background, as in its own shell. The
others run in order with `set -euo pipefail`; `curl` records each answer's status, and a 4xx or
5xx fails the test unless the block announces it (a comment such as `# 400 {...}` or `# 403`), as
does a refusal a block announces that its commands never get.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
STATUS = re.compile(r"#\s*([45]\d\d)\b")
CURL = r'''
curl() {
  local out code
  out=$(command curl --max-time 60 -w '\n%{http_code}' "$@") || return $?
  code=${out##*$'\n'}
  printf '%s\n' "${out%$'\n'*}"
  printf '%s %s\n' "$HP_BLOCK" "$code" >> "$HP_STATUS_LOG"
}
'''


WALKTHROUGH = [("README.md", "## Try it with curl"), ("README.md", "## The `holdpoint` command"),
               ("docs/WALKTHROUGH.md", None)]
"""The parts a reader follows, in order: a page's section (up to the next `## `), or a whole page."""


def section(page: str, heading: str | None) -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    if heading is None:
        return text
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def blocks() -> list[str]:
    out = []
    for page, heading in WALKTHROUGH:
        found = re.findall(r"```sh\n(.*?)```", section(page, heading), re.S)
        assert found, f"{page} {heading or ''}: no ```sh block to run"
        out += found
    return out


def commands(block: str) -> list[str]:
    """A block's command lines, without their trailing comments (`  # shell 1: ...`)."""
    return [re.sub(r"\s+#\s.*$", "", line) for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def free_pair() -> int:
    """A port that is free, with the next one free too (make serve's WebSocket API takes it)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = int(a.getsockname()[1])
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            if port != 8787:
                return port
    raise RuntimeError("no two free ports in a row")


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def launch(first: list[str], env: dict[str, str], tmp_path: Path,
           attempt: int) -> tuple[list[subprocess.Popen[bytes]], list[TextIO]]:
    """Each line of the first block but its exports, started in the background with its own log."""
    logs, procs = [], []
    for n, command in enumerate(c for c in first if not c.startswith("export ")):
        log = (tmp_path / f"server{n}.{attempt}.log").open("w")
        logs.append(log)
        procs.append(subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=ROOT, env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
    return procs, logs


def stop(procs: list[subprocess.Popen[bytes]], logs: list[TextIO]) -> None:
    for proc in procs:
        with _quiet():
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    for log in logs:
        log.close()


def serve_outcome(proc: subprocess.Popen[bytes], log: Path) -> str | None:
    """`ready` once make serve says so, `exited` if it ended first (None: not yet)."""
    if "ready at" in log.read_text():
        return "ready"
    return "exited" if proc.poll() is not None else None


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The first block: its exports kept for the later blocks, each other line started in the
    background (make serve on a port of its own), until both answer. The ports are chosen free,
    but another test's process may take one before make serve binds it: then make serve ends
    saying so, and it starts again on other ports."""
    first = commands(blocks()[0])
    exports = [c for c in first if c.startswith("export ")]
    env = {k: v for k, v in os.environ.items() if k != "HOLDPOINT_WS_PORT"}
    prelude = "\n".join(exports)
    secret = subprocess.run(["bash", "-c", f"{prelude}\necho \"$HOLDPOINT_WORKER_SECRET\""], env=env,
                            capture_output=True, text=True, check=True).stdout.strip()
    env["HOLDPOINT_WORKER_SECRET"] = secret
    for attempt in range(3):
        env["HOLDPOINT_PORT"] = str(free_pair())
        procs, logs = launch(first, env, tmp_path, attempt)
        log = tmp_path / f"server0.{attempt}.log"
        outcome = wait_for(lambda proc=procs[0], path=log: serve_outcome(proc, path), "make serve to be ready", 240)
        if outcome == "ready":
            break
        stop(procs, logs)
        assert "Address already in use" in log.read_text(), f"make serve ended:\n{log.read_text()[-3000:]}"
    else:
        raise AssertionError("make serve found its ports taken three times")
    try:
        wait_for(lambda: listening(9001) or None, "the seed worker on 9001", 30)
        yield env
    finally:
        stop(procs, logs)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is ProcessLookupError


def test_readme_walkthrough_runs_in_order_against_make_serve(servers: dict[str, str], tmp_path: Path) -> None:
    later = blocks()[1:]
    assert len(later) >= 12, "the walkthrough's blocks were not found"
    status_log = tmp_path / "statuses"
    script = ["set -euo pipefail", CURL]
    for n, block in enumerate(later, start=2):
        script += [f"HP_BLOCK={n}", f"echo '::block {n}'", textwrap.dedent(block)]
    env = {**servers, "HP_STATUS_LOG": str(status_log)}
    run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, f"a command of the walkthrough failed (exit {run.returncode}):\n{out[-4000:]}"
    announced = {n: set(STATUS.findall(block)) for n, block in enumerate(later, start=2)}
    seen = [line.split() for line in status_log.read_text().splitlines()]
    unannounced = [(block, code) for block, code in seen if code >= "400" and code not in announced[int(block)]]
    assert not unannounced, f"answers the walkthrough does not announce (block, status): {unannounced}\n{out[-4000:]}"
    unseen = [(n, code) for n, codes in announced.items() for code in codes
              if [str(n), code] not in seen]
    assert not unseen, f"refusals the walkthrough announces that never came (block, status): {unseen}\n{out[-4000:]}"
    assert len(seen) >= 30 and '"interrupted"' in out and '"done"' in out, out[-4000:]
