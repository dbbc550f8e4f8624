"""Parked sessions hold nothing: park many sessions at once on the local stack and compare threads,
processes and memory before and after.

Measured at three points (after a warm-up that parks and resumes a few sessions, so every lazily built
pool - handler instances, HTTP keep-alive connections, boto3 clients - exists before the baseline):

- this process (front end, authorizer/API/resume/engine "Lambdas", SQS pollers, the in-process worker):
  `threading.active_count()`, `Threads:` and `VmRSS:` from /proc/self/status;
- processes: descendants of this process, from /proc/*/stat parent ids;
- the moto server child ("AWS"): `Threads:` and `VmRSS:` from /proc/<pid>/status;
- RUNNING ParkBranch executions (ListExecutions) and the items in the session table (a counting Scan):
  the stored state, which is what is supposed to grow.

The thread pool that drives the session creation (and its HTTP keep-alive connections, each holding a
front-end thread) is shut down before a measurement is taken. At the end a sample of 10 parked sessions
is resumed and checked to reach `done` with exactly one `interrupt.resumed` delivered.

    /work/main/.venv/bin/python bench/parked_sessions.py [--n 1000]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import resume_latency as rl  # noqa: E402  (path setup, stack, seed worker, parking helpers)


def proc_status(pid: int | str) -> dict[str, str]:
    out: dict[str, str] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def rss_mib(status: dict[str, str]) -> float:
    return int(status["VmRSS"].split()[0]) / 1024  # kB


def descendants(root: int) -> list[int]:
    """Every live process whose parent chain leads to root (from /proc/<pid>/stat)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry)] = int(fields[1])  # fields after "(comm)": state, ppid, ...
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == pid]
        found.extend(kids)
        frontier.extend(kids)
    return sorted(found)


def running_executions(stack: Any) -> int:
    sfn = stack.client("stepfunctions")
    total, token = 0, None
    while True:
        kwargs: dict[str, Any] = {"stateMachineArn": stack.env["PARK_STATE_MACHINE_ARN"],
                                  "statusFilter": "RUNNING", "maxResults": 1000}
        if token:
            kwargs["nextToken"] = token
        page = sfn.list_executions(**kwargs)
        total += len(page["executions"])
        token = page.get("nextToken")
        if not token:
            return total


def snapshot(stack: Any, settle: float = 2.0) -> dict[str, Any]:
    time.sleep(settle)  # closed keep-alive connections let their front-end threads finish
    gc.collect()
    me = proc_status("self")
    moto_pid = stack.moto._proc.pid  # the child this stack started (read only)
    moto = proc_status(moto_pid)
    kids = descendants(os.getpid())
    return {
        "threading.active_count() (this process)": threading.active_count(),
        "/proc/self/status Threads (this process)": int(me["Threads"]),
        "descendant processes of this process": len(kids),
        "RSS of this process (MiB)": rss_mib(me),
        "moto server Threads (/proc/<pid>/status)": int(moto["Threads"]),
        "RSS of the moto server (MiB)": rss_mib(moto),
        "RUNNING ParkBranch executions": running_executions(stack),
        "items in the session table": rl.table_items(stack),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="sessions to park at once (default 1000)")
    parser.add_argument("--pool", type=int, default=8, help="threads that drive the session creation")
    parser.add_argument("--warmup", type=int, default=8, help="sessions parked and resumed before the baseline")
    parser.add_argument("--sample", type=int, default=10, help="parked sessions resumed at the end")
    args = parser.parse_args()
    if not 1 <= args.n <= 5000:
        parser.error("--n must be in 1..5000")

    t_start = time.perf_counter()
    stack = rl.start_stack()
    print(f"moto server with holdpoint_local.moto's fixes; parking stops early past "
          f"{rl.MOTO_RSS_CAP_MIB:.0f} MiB of moto RSS")
    try:
        worker = rl.setup(stack)
        print(f"local stack up: front end {stack.base_url}, moto {stack.moto_endpoint} "
              f"(moto pid {stack.moto._proc.pid}; {time.perf_counter() - t_start:.1f} s)", flush=True)

        # Warm-up: park and resume a few at once, so lazily created pools exist before the baseline.
        warm, _ = rl.park_many(stack, args.warmup, pool=args.pool, progress=False)
        api = rl.Api(stack)
        for sid, iid in warm:
            api.resume(sid, iid, {"approved": True})
        for sid, _ in warm:
            api.wait(sid, lambda v: v["status"] == "done", timeout=120, interval=0.05)
        api.close()

        before = snapshot(stack)
        print(f"baseline taken; parking {args.n} sessions with {args.pool} threads ...", flush=True)
        parked, t_park = rl.park_many(stack, args.n, pool=args.pool)
        print(f"parked {len(parked)} sessions in {t_park:.1f} s ({len(parked) / t_park:.2f}/s)", flush=True)
        after = snapshot(stack)

        # Resume a sample: they still resume, each exactly once.
        sample = parked[:: max(1, len(parked) // args.sample)][: args.sample]
        api = rl.Api(stack)
        t0 = time.perf_counter()
        events = {sid: worker.expect(sid) for sid, _ in sample}
        answers = [api.resume(sid, iid, {"approved": True}) for sid, iid in sample]
        finals = [api.wait(sid, lambda v: v["status"] == "done", timeout=120, interval=0.05) for sid, _ in sample]
        t_resume = time.perf_counter() - t0
        api.close()
        resumed_ok = sum(
            1 for (sid, _), answer, final in zip(sample, answers, finals, strict=True)
            if answer.get("noop") is False and events[sid].is_set() and worker.resumed_count.get(sid) == 1
            and final["messages"][-1].get("content") == "Email sent.")
        end = snapshot(stack)

        print()
        print(f"Parked sessions on the local stack: N = {len(parked)} parked at once (asked {args.n}) "
              f"(+{len(warm)} warm-up sessions parked and resumed before the baseline)")
        print()
        width = max(len(k) for k in before)
        head = f"| {'measurement':<{width}} | before | after parking {len(parked)} | delta | " \
               f"per parked session | after resuming {len(sample)} |"
        print(head)
        cols = [c.strip() for c in head.split("|")[1:-1]]
        cols[0] = " " * width
        print("|" + "|".join("-" * (len(c) + 2) for c in cols) + "|")
        for key in before:
            b, a, e = before[key], after[key], end[key]
            delta = a - b
            per = delta / len(parked) if parked else 0.0
            if isinstance(b, float):
                cells = (f"{b:.1f}", f"{a:.1f}", f"{delta:+.1f}", f"{per * 1024:+.1f} KiB", f"{e:.1f}")
            else:
                cells = (f"{b}", f"{a}", f"{delta:+d}", f"{per:+.3f}", f"{e}")
            print(f"| {key:<{width}} | " + " | ".join(f"{v:>{len(cols[i + 1])}}" for i, v in enumerate(cells)) + " |")
        print()
        print(f"park time: {t_park:.1f} s for {len(parked)} sessions ({len(parked) / t_park:.2f}/s, "
              f"{args.pool} client threads)")
        print(f"sample resumed: {resumed_ok}/{len(sample)} reached done with exactly one interrupt.resumed "
              f"({t_resume:.1f} s for the sample, resumed back to back)")
        print(f"5xx answers retried by the bench's client: {dict(rl.SERVER_ERRORS) or 0}")
        print(f"total run time {time.perf_counter() - t_start:.1f} s")
        return 0 if resumed_ok == len(sample) else 1
    finally:
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
