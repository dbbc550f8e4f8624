"""Import time of each handler module (the code part of a Lambda cold start), next to `import boto3`.

    python bench/cold_start.py [--runs 5]

Each measurement is a fresh `python -X importtime -c "import app"` subprocess with the
function's directory as the working directory and `layers/core` on PYTHONPATH, which is how
Lambda imports `app.handler` with the layer under /opt/python. The figure is the cumulative
time of the top-level import (`app`, or `boto3` for the baseline), i.e. everything that import
pulled in that the interpreter had not loaded at startup. One discarded warm-up run per module
fills the bytecode cache (kept outside the repo via PYTHONPYCACHEPREFIX); then `--runs` runs,
median reported. Interpreter startup itself (not import) is reported separately.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, table  # noqa: E402

HANDLERS = {
    "api": ROOT / "functions" / "api",
    "engine": ROOT / "functions" / "engine",
    "resume": ROOT / "functions" / "resume",
    "authorizer": ROOT / "functions" / "authorizer",
}
LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")
PYCACHE = Path(tempfile.gettempdir()) / "holdpoint-bench-pycache"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({
        "PYTHONPATH": str(ROOT / "layers" / "core"),
        "PYTHONPYCACHEPREFIX": str(PYCACHE),
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
        "TABLE_NAME": "holdpoint", "WORK_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/w.fifo",
        "PARK_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:park",
        "POWERTOOLS_SERVICE_NAME": "holdpoint", "POWERTOOLS_METRICS_NAMESPACE": "Holdpoint",
    })
    return env


def one(module: str, cwd: Path) -> tuple[float, list[tuple[str, float]]]:
    """(cumulative ms of the top-level import, [(direct child, ms)] biggest first)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=cwd, env=_env(),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"import {module} in {cwd} failed:\n{proc.stderr[-2000:]}")
    entries = []
    for line in proc.stderr.splitlines():
        m = LINE.match(line)
        if m:
            entries.append((len(m.group(3)), m.group(4), int(m.group(2)) / 1000))
    # importtime prints children before their parent; the parent's depth is one less.
    top = next(i for i, (depth, name, _) in enumerate(entries) if depth == 1 and name == module)
    children = []
    for depth, name, ms in reversed(entries[:top]):
        if depth == 1:
            break
        if depth == 3:
            children.append((name, ms))
    return entries[top][2], sorted(children, key=lambda c: -c[1])


def startup_ms(runs: int) -> float:
    import time

    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=_env(), check=True)
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def measure(runs: int) -> list[dict[str, object]]:
    targets = [("boto3 (baseline)", "boto3", ROOT)] + [
        (f"functions/{name}/app.py", "app", path) for name, path in HANDLERS.items()]
    rows = []
    for label, module, cwd in targets:
        one(module, cwd)  # warm-up: bytecode cache
        got = sorted((one(module, cwd) for _ in range(runs)), key=lambda r: r[0])
        samples = [ms for ms, _ in got]
        children = got[len(got) // 2][1]  # the breakdown of the median run
        rows.append({"module": label, "median_ms": statistics.median(samples), "min_ms": min(samples),
                     "max_ms": max(samples), "samples": samples, "top_children": children[:4]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = measure(args.runs)
    base = rows[0]["median_ms"]
    print(table(
        ["module", f"median ms ({args.runs} runs)", "min", "max", "vs boto3", "biggest imports inside (ms)"],
        [[r["module"], f"{r['median_ms']:.1f}", f"{r['min_ms']:.1f}", f"{r['max_ms']:.1f}",
          f"{r['median_ms'] / base:.2f}x",
          ", ".join(f"{n} {ms:.0f}" for n, ms in r["top_children"][:3])] for r in rows],
        "Import time of each handler module (python -X importtime, cumulative of the top-level import)"))
    print(f"\ninterpreter startup (python -c pass), median of {args.runs}: {startup_ms(args.runs):.1f} ms; "
          f"python {sys.version.split()[0]}, nproc {os.cpu_count()}")


if __name__ == "__main__":
    main()
