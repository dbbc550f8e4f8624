"""Cold start of each handler against a bare `import boto3`, both with their first three clients.

    python bench/cold_start.py [--pairs 9] [--python .venv-runtime/bin/python] [--breakdown]
    python bench/cold_start.py --instructions   # the same ratios in instructions (valgrind)

What a cold start pays for in code is the handler module's import plus the first DynamoDB, SQS
and Step Functions clients it builds; the floor is what any boto3 function pays: `import boto3`
and the same three clients. Each run is a fresh interpreter of the *runtime* venv (only
`requirements.txt`, built by `make venv-runtime`), so nothing the dev venv adds (moto, pytest,
cryptography) is imported by accident. A handler is loaded by file path with its directory on
sys.path and `layers/core` on PYTHONPATH, the way Lambda loads `app.handler` with the layer under
/opt/python, and with the environment variables a Lambda has (dummies).

Runs come in pairs, handler and baseline back to back (the order alternates), so load on the
machine hits both sides of a pair alike; each pair gives a ratio and the median ratio is
reported next to the target. One discarded warm-up pair fills the bytecode cache (kept outside
the repo via PYTHONPYCACHEPREFIX). `--breakdown` adds, from one `python -X importtime` run, the
import time of each handler by package (boto3 and botocore included: the baseline pays them too).

A handler that builds part of itself on its first request (`holdpoint.coldstart.Deferred`: the
API's routes, the engine's step loop) gets a second line: the same pairs with those builds added to
its load, i.e. what its cold start's load and first request pay together before the request's own
work.

`--artifact` runs the same programs where Lambda runs them: in the x86_64 Lambda-shaped image
(holdpoint_local.containers), on `sam build`'s artifact (samlocal.build_x86_64, compiled to
bytecode as the container tier builds it), the function's directory read-only at /var/task and
the layer at /opt, one fresh container per run with no network; the baseline's boto3 is the
layer's. The timer runs inside the container, so the container's own start is not counted.
(The emulator's REPORT line is no help here: its `Init Duration` is under 2 ms for every function,
since the emulator stops that clock before the runtime starts, and counts the handler's import in
the first invocation's `Duration`; local/README.md, "Container tier".)

`--instructions` gives the same ratios in instructions executed instead of milliseconds: each
program runs once under valgrind's callgrind (`valgrind` from Debian's package), which counts every
instruction of the process, and an empty program's count (the interpreter's own start) is taken off
each. A count does not move with the machine's load or with another process on the other core (the
same program gives the same count to within 0.1 %), so it settles what a millisecond ratio within
about 0.1 of the target cannot. It counts work, not waiting: reading files and cache misses cost
time and no instructions, so its ratios are not the millisecond ones, and the target is judged on
the milliseconds.

Reference lines follow (`--no-references` leaves them out): the same pairs for programs with
nothing of Holdpoint in them (`REFERENCES`): Powertools' HTTP resolver with request validation and
one route taking one pydantic body, the least a validated Powertools API pays before its first
answer; the resolver with Logger and Metrics and no validation; Logger and Metrics alone; pydantic
with one model; the engine's libraries together (Logger, Metrics, pydantic); and the least any HTTP
function validating with pydantic pays (the resolver unvalidated, Logger, Metrics, pydantic). They
are the floor under a handler built on those libraries: a handler whose floor is over the target
cannot meet it while it keeps them.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_PYTHON = ROOT / ".venv-runtime" / "bin" / "python"
HANDLERS = tuple(sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "app.py").is_file()))
"""Every function of template.yaml (each has functions/<name>/app.py)."""
TARGET = 1.3
PYCACHE = Path(tempfile.gettempdir()) / "holdpoint-bench-pycache"
sys.path.insert(0, str(ROOT / "local"))
from figures import figure  # noqa: E402

from holdpoint_local import LAMBDA_ENV  # noqa: E402

_CLIENTS = 'import boto3\nfor _s in ("dynamodb", "sqs", "stepfunctions"):\n    boto3.client(_s)\n'
_LOAD = ('import importlib.util, sys\nsys.path.insert(0, {dir!r})\n'
         'spec = importlib.util.spec_from_file_location("app", {dir!r} + "/app.py")\n'
         'module = importlib.util.module_from_spec(spec)\nsys.modules["app"] = module\n'
         'spec.loader.exec_module(module)\n')
_FIRST = ('from holdpoint.coldstart import Deferred\n'
          'for _v in list(vars(module).values()):\n    if isinstance(_v, Deferred):\n        _v.get()\n')
REFERENCES = {
    "validated Powertools resolver, one pydantic body, nothing of Holdpoint": (
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver\n"
        "from pydantic import BaseModel\n"
        "class Body(BaseModel):\n    type: str\n"
        "app = APIGatewayHttpResolver(enable_validation=True)\n"
        "@app.post('/v1/sessions')\ndef start(body: Body) -> dict:\n    return {}\n"),
    "Powertools' HTTP resolver, Logger and Metrics, no validation, no route": (
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver\n"
        "from aws_lambda_powertools import Logger, Metrics\n"
        "app = APIGatewayHttpResolver()\nLogger()\nMetrics(namespace='x')\n"),
    "Powertools' Logger and Metrics alone": (
        "from aws_lambda_powertools import Logger, Metrics\nLogger()\nMetrics(namespace='x')\n"),
    "pydantic and one model, validated once": (
        "from pydantic import BaseModel\n"
        "class Body(BaseModel):\n    type: str\n"
        "Body.model_validate({'type': 'x'})\n"),
    "the engine's libraries: Logger and Metrics, pydantic and one model": (
        "from aws_lambda_powertools import Logger, Metrics\n"
        "from pydantic import BaseModel\n"
        "class Body(BaseModel):\n    type: str\n"
        "Logger()\nMetrics(namespace='x')\nBody.model_validate({'type': 'x'})\n"),
    "the least an HTTP function on both pays: the resolver unvalidated, Logger, Metrics, pydantic": (
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver\n"
        "from aws_lambda_powertools import Logger, Metrics\n"
        "from pydantic import BaseModel\n"
        "class Body(BaseModel):\n    type: str\n"
        "app = APIGatewayHttpResolver()\nLogger()\nMetrics(namespace='x')\nBody.model_validate({'type': 'x'})\n"),
}
"""Programs with nothing of Holdpoint in them: what the libraries a handler is built on cost by
themselves, against the same baseline (the floor under a handler that uses them)."""
_TIMED = "import time\n_t0 = time.perf_counter()\n{body}print((time.perf_counter() - _t0) * 1000)\n"
LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


TRACED = {"LAMBDA_TASK_ROOT": tempfile.gettempdir(), "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
          "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
          "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"}
"""What Lambda sets for a function with `Tracing: Active` (the daemon's address, the invocation's
trace); `--tracing` compares a handler so against itself with `POWERTOOLS_TRACE_DISABLED`."""
UNTRACED = {**TRACED, "POWERTOOLS_TRACE_DISABLED": "true"}


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AWS_", "VIRTUAL_ENV", "_X_AMZN"))}
    out.update(LAMBDA_ENV)
    out.update({"PYTHONPATH": str(ROOT / "layers" / "core"), "PYTHONPYCACHEPREFIX": str(PYCACHE)})
    out.update(extra or {})
    return out


def script(handler: str | None, first: bool = False, code_dir: str | None = None) -> str:
    """The timed program: a handler's load (`first`: and its first-request builds) plus the three
    clients, a reference program (`REFERENCES`) plus them, or (None) the baseline. `code_dir`: where
    the handler's app.py is (default: functions/<handler>)."""
    if handler in REFERENCES:
        body = REFERENCES[handler]
    elif handler:
        body = _LOAD.format(dir=code_dir or str(ROOT / "functions" / handler)) + (_FIRST if first else "")
    else:
        body = ""
    return _TIMED.format(body=body + _CLIENTS)


class Runner:
    """Runs a timed program in a fresh interpreter of the runtime venv (`python`)."""

    def __init__(self, python: Path, extra_env: dict[str, str] | None = None) -> None:
        self.python = python
        self.extra_env = extra_env

    def __str__(self) -> str:
        return str(self.python)

    def run(self, handler: str | None, first: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.python), "-c", script(handler, first)], cwd=tempfile.gettempdir(),
                              env=env(self.extra_env), capture_output=True, text=True, check=False)


class ArtifactRunner(Runner):
    """Runs it in a fresh x86_64 Lambda-shaped container on `sam build`'s artifact (`build_dir`)."""

    def __init__(self, build_dir: Path, image: str) -> None:
        super().__init__(Path("/usr/bin/python3.13"))
        self.build_dir, self.image = build_dir, image

    def __str__(self) -> str:
        return f"{self.image}, {self.build_dir}"

    def run(self, handler: str | None, first: bool) -> subprocess.CompletedProcess[str]:
        # the reference's code (Powertools, pydantic) and the baseline's boto3 come from the layer too
        task = self.build_dir / f"{(handler or 'api').capitalize()}Function" if handler not in REFERENCES \
            else self.build_dir / "ApiFunction"
        variables = {**LAMBDA_ENV, "PYTHONPATH": "/opt/python", "LAMBDA_TASK_ROOT": "/var/task"}
        cmd = ["docker", "run", "--rm", "--network", "none", "-v", f"{task}:/var/task:ro",
               "-v", f"{self.build_dir / 'CoreLayer'}:/opt:ro", "-w", "/var/task",
               *[a for k, v in variables.items() for a in ("-e", f"{k}={v}")], "--entrypoint", str(self.python),
               self.image, "-c", script(handler, first, code_dir="/var/task")]
        return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)


def artifact_runner(work_dir: Path, compiled: bool = True) -> ArtifactRunner:
    """The Docker engine (started if none answers), the x86_64 base image and one `sam build`, compiled
    as `make deploy` compiles it (or, not `compiled`, as `sam build` alone leaves it)."""
    from holdpoint_local import containers
    from holdpoint_local.emulators import samlocal

    containers.Engine(work_dir / "dockerd.log").start()
    image = containers.BaseImage(samlocal.ARCHITECTURE).ensure()
    return ArtifactRunner(samlocal.build_x86_64(work_dir, compiled=compiled).build_dir, image)


def defers(handler: str) -> bool:
    """Whether the handler builds part of itself on its first request."""
    return "Deferred(" in (ROOT / "functions" / handler / "app.py").read_text(encoding="utf-8")


def run_ms(runner: Runner, handler: str | None, first: bool = False) -> float:
    proc = runner.run(handler, first)
    if proc.returncode != 0:
        raise RuntimeError(f"{handler or 'baseline'} failed:\n{proc.stderr[-2000:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def pairs(python: Runner, handler: str, count: int, first: bool = False) -> list[tuple[float, float]]:
    """(handler ms, baseline ms) per pair, after one discarded warm-up pair."""
    run_ms(python, handler, first)
    run_ms(python, None)
    out = []
    for i in range(count):
        if i % 2:
            base = run_ms(python, None)
            ms = run_ms(python, handler, first)
        else:
            ms = run_ms(python, handler, first)
            base = run_ms(python, None)
        out.append((ms, base))
    return out


def tracing_pairs(python: Path, handler: str, count: int, first: bool) -> list[tuple[float, float]]:
    """(traced ms, untraced ms) per pair: the same handler, with Lambda's tracing variables, against
    itself with POWERTOOLS_TRACE_DISABLED, back to back, the order alternating, after a warm-up pair."""
    traced, untraced = Runner(python, TRACED), Runner(python, UNTRACED)
    run_ms(traced, handler, first)
    run_ms(untraced, handler, first)
    out = []
    for i in range(count):
        order = (untraced, traced) if i % 2 else (traced, untraced)
        got = {id(r): run_ms(r, handler, first) for r in order}
        out.append((got[id(traced)], got[id(untraced)]))
    return out


_OWN = ("import boto3\nfrom aws_lambda_powertools import Logger, Metrics\nimport time\n_t0 = time.perf_counter()\n"
        "from holdpoint import tracing\n_h = tracing.capture(lambda e, c: None)\n"
        "with tracing.hop('api', tenant='t', session_id='s'):\n    _h({}, None)\n"
        "print((time.perf_counter() - _t0) * 1000)\n")
"""Tracing's own work in a cold start, after what every handler loads anyway (boto3, Powertools'
Logger and Metrics): the module, Powertools' Tracer and the handler's capture, and one hop sent."""


def own_cost(python: Path, count: int) -> tuple[float, float]:
    """Median ms of `_OWN` traced and untraced, `count` fresh interpreters each, alternating."""
    runs: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(count + 1):
        for name, extra in (("on", TRACED), ("off", UNTRACED)):
            proc = subprocess.run([str(python), "-c", _OWN], cwd=tempfile.gettempdir(), env=env(extra),
                                  capture_output=True, text=True, check=True)
            runs[name].append(float(proc.stdout.strip().splitlines()[-1]))
    return statistics.median(runs["on"][1:]), statistics.median(runs["off"][1:])


def tracing_cost(python: Path, handlers: list[str], count: int) -> None:
    """What tracing adds to each handler's cold start (its first-request builds included)."""
    on, off = own_cost(python, max(count, 15))
    print(f"tracing's own work (module, Tracer, capture, one hop; after boto3, Logger and Metrics): "
          f"{on:.2f} ms traced, {off:.2f} ms untraced")
    print(f"Tracing's cost: a handler's cold start with Lambda's X-Ray variables over the same without "
          f"(POWERTOOLS_TRACE_DISABLED); median of {count} pairs ({python})")
    ratios, untraced_ms = {}, {}
    for handler in handlers:
        got = tracing_pairs(python, handler, count, first=defers(handler))
        ratios[handler] = statistics.median(t / u for t, u in got)
        untraced_ms[handler] = statistics.median(u for _, u in got)
        print(f"{handler:<11} {ratios[handler]:.3f}x  (traced {statistics.median(t for t, _ in got):.0f} ms, "
              f"untraced {statistics.median(u for _, u in got):.0f} ms, median difference "
              f"{statistics.median(t - u for t, u in got):+.1f} ms)")
    smallest = min(untraced_ms.values())
    share = on / smallest  # all of tracing's own work, as if the untraced run had none of it
    print(f"its own work over the smallest untraced cold start measured ({smallest:.0f} ms): "
          f"{(on - off) / smallest:.2%} more with tracing on, {share:.2%} counted whole")
    # The figure is the isolated work: the pairs above move by more than 5 % on a busy machine.
    figure("tracing's own work in a cold start, over the smallest handler's", f"{share:.2%} "
           f"({on:.2f} ms traced, {off:.2f} ms untraced)", "<= 5 %", share <= 0.05)


def _group(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "holdpoint" else parts[0]


def breakdown(python: Path, handler: str, top: int = 6) -> str:
    """Where the handler's load goes, from one `-X importtime` run: self time summed per package
    (per subpackage for holdpoint), so a dependency counts once, wherever it is first imported."""
    proc = subprocess.run([str(python), "-X", "importtime", "-c", script(handler)], cwd=tempfile.gettempdir(),
                          env=env(), capture_output=True, text=True, check=True)
    totals: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = LINE.match(line)
        if m:
            key = _group(m.group(4))
            totals[key] = totals.get(key, 0.0) + int(m.group(1)) / 1000
    return ", ".join(f"{name} {ms:.0f}" for name, ms in sorted(totals.items(), key=lambda kv: -kv[1])[:top])


_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(python: Path, body: str) -> int:
    """Instructions one fresh interpreter executes to run `body`, counted by callgrind."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python), "-c", body],
                          cwd=tempfile.gettempdir(), env=env(), capture_output=True, text=True, check=False)
    found = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"callgrind gave no count:\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def instruction_ratios(python: Path, handlers: list[str], references: bool) -> None:
    """Every handler (with its first-request builds where it defers) and reference over the baseline,
    in instructions, each after a warm-up run that fills the bytecode cache."""
    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    def count(handler: str | None, first: bool = False) -> int:
        subprocess.run([str(python), "-c", script(handler, first)], cwd=tempfile.gettempdir(), env=env(),
                       capture_output=True, check=True)  # the bytecode cache, outside the count
        return instructions(python, script(handler, first)) - start
    start = instructions(python, "pass")
    base = count(None)
    print(f"Cold start in instructions (callgrind): handler load + first DynamoDB, SQS and Step Functions "
          f"clients, over `import boto3` + the same clients, the interpreter's start ({start / 1e6:.0f} M) taken "
          f"off each; baseline {base / 1e6:.0f} M ({python})")
    got = {}
    for handler in handlers:
        first = defers(handler)
        got[handler] = count(handler, first) / base
        print(f"{handler:<11} {got[handler]:.2f}x{'  with its first-request builds' if first else ''}")
    if references:
        for reference in REFERENCES:
            print(f"reference   {count(reference) / base:.2f}x  {reference}")
    figure("cold start in instructions over bare boto3 + the same clients (a count, not a time: the "
           "target is judged in ms)", ", ".join(f"{h} {r:.2f}x" for h, r in got.items()), f"<= {TARGET:.1f}x each",
           all(r <= TARGET for r in got.values()))


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=9, help="handler/baseline pairs per handler (at least 7)")
    ap.add_argument("--python", type=Path, default=RUNTIME_PYTHON, help="the runtime venv's interpreter")
    ap.add_argument("--handlers", default=",".join(HANDLERS), help="comma-separated subset, e.g. resume,engine")
    ap.add_argument("--breakdown", action="store_true", help="also print where each handler's import time goes")
    ap.add_argument("--no-references", dest="references", action="store_false",
                    help="leave out the reference programs (nothing of Holdpoint in them)")
    ap.add_argument("--tracing", action="store_true",
                    help="measure tracing's cost instead: each handler traced over itself untraced")
    ap.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                    help="with --artifact: the build as `sam build` alone leaves it, with no .pyc, so every run "
                         "compiles its modules from source (what a deploy without the bytecode step gets)")
    ap.add_argument("--instructions", action="store_true",
                    help="ratios in instructions executed (valgrind's callgrind), which load does not move")
    ap.add_argument("--artifact", action="store_true",
                    help="run in the Lambda-shaped x86_64 image on sam build's artifact (Docker, .venv-sam)")
    args = ap.parse_args()
    if args.pairs < 7:
        ap.error("--pairs must be at least 7")
    if args.instructions and (args.artifact or args.tracing):
        ap.error("--instructions counts in this machine's runtime venv, with neither --artifact nor --tracing")
    if not args.bytecode and not args.artifact:
        ap.error("--no-bytecode is for --artifact (in process, the bytecode cache is filled by a warm-up run)")
    args.python = args.python.absolute()  # runs start in a temporary dir; a venv's python must stay a symlink
    if not args.artifact and not args.python.exists():
        sys.exit(f"{args.python} is missing: run `make venv-runtime` (a venv with only requirements.txt)")
    return args


def main() -> None:
    args = parse_args()
    if args.instructions:
        instruction_ratios(args.python, [h for h in args.handlers.split(",") if h], args.references)
        return
    if args.tracing:
        tracing_cost(args.python, [h for h in args.handlers.split(",") if h], args.pairs)
        return
    runner: Runner = artifact_runner(Path(tempfile.mkdtemp(prefix="holdpoint-cold-")), args.bytecode) \
        if args.artifact else Runner(args.python)
    where = "fresh Lambda-shaped container each" if args.artifact else "fresh interpreter each"
    if args.artifact and not args.bytecode:
        where += ", no bytecode in the artifact"
    print(f"Cold start: handler load + first DynamoDB, SQS and Step Functions clients, over `import boto3` + "
          f"the same clients; median of {args.pairs} pairs, {where} ({runner})")
    failed, honest = [], {}
    for handler in [h for h in args.handlers.split(",") if h]:
        got = pairs(runner, handler, args.pairs)
        ratio = statistics.median(ms / base for ms, base in got)
        print(f"{handler:<11} {ratio:.2f}x  target <= {TARGET:.1f}x  {'ok' if ratio <= TARGET else 'OVER'}  "
              f"(handler {statistics.median(m for m, _ in got):.0f} ms, "
              f"baseline {statistics.median(b for _, b in got):.0f} ms)")
        if defers(handler):
            got = pairs(runner, handler, args.pairs, first=True)
            ratio = statistics.median(ms / base for ms, base in got)
            print(f"{'':<11} {ratio:.2f}x  with its first-request builds "
                  f"(handler {statistics.median(m for m, _ in got):.0f} ms)")
        honest[handler] = ratio  # what a cold start pays before the request's own work
        if ratio > TARGET:
            failed.append(handler)
        if args.breakdown and not args.artifact:
            print(f"            import self time by package (ms): {breakdown(args.python, handler)}")
    if args.references:
        for reference in REFERENCES:
            got = pairs(runner, reference, args.pairs)
            print(f"reference   {statistics.median(ms / base for ms, base in got):.2f}x  {reference} "
                  f"({statistics.median(m for m, _ in got):.0f} ms)")
    if failed:
        print(f"over target: {', '.join(failed)}")
    place = ""
    if args.artifact:
        place = " in the Lambda-shaped container" + ("" if args.bytecode else " without bytecode")
    figure(f"cold start{place} over bare boto3 + the same clients (with the first-request builds of a handler "
           "that defers them)", ", ".join(f"{h} {r:.2f}x" for h, r in honest.items()), f"<= {TARGET:.1f}x each",
           not failed)

if __name__ == "__main__":
    main()
