"""Issue item 7, "one trace per session": a turn that parks, is resumed and finishes reads as one
trace, over HTTP on the local stack. The functions' hops go to moto's X-Ray through the local
X-Ray daemon's UDP protocol; `holdpoint trace SESSION` reads them back through the API."""

from __future__ import annotations

import io
import json
from typing import Any

from holdpoint_sdk import cli
from holdpoint_sdk.client import Client
from tests.stack import Api, seed_worker, wait_execution, worker_answering
from tests.waiting import wait_for

TURN = ["api", "engine kick", "engine park", "resume", "engine wake"]
"""The hops of a parked and resumed turn: the submit, the engine's step that parks, ParkBranch's
park message, the resume, and the engine's step on the wake."""


def trace(stack: Any, sid: str, *flags: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([*flags, "trace", sid], client=Client(stack.base_url, stack.api_key), stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def traces(stack: Any, sid: str) -> list[dict[str, Any]]:
    code, out = trace(stack, sid, "--json")
    assert code == 0, out
    return list(json.loads(out)["traces"])


def test_item7_a_parked_and_resumed_turn_reads_as_one_trace(api: Api, stack: Any) -> None:
    parents: list[tuple[str, str | None]] = []

    def answer(self: Any, trigger: dict[str, Any], proposed: dict[str, Any] | None) -> dict[str, Any] | None:
        parents.append((trigger["type"], self.headers.get("traceparent")))
        return seed_worker.decide(trigger, proposed)

    with worker_answering(api, answer):
        sid = api.start()
        [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
        iid = interrupt["interrupt_id"]
        wait_execution(stack, sid, iid, "RUNNING")
        assert api.resume(sid, iid, {"approved": True}).status_code == 200
        api.wait_status(sid, "done")

    def whole() -> list[dict[str, Any]] | None:
        found = traces(stack, sid)
        names = [h["name"] for t in found for h in t["hops"]]
        return found if all(name in names for name in TURN) else None

    found = wait_for(whole, "the turn's hops in X-Ray",
                     describe=lambda: (stack.xray.received, stack.xray.forwarded, traces(stack, sid)))
    [one] = found  # the turn, its pause and resume included, is one trace
    names = [h["name"] for h in one["hops"]]
    assert sorted(n for n in names if n in TURN) == sorted(TURN)  # each once
    first = names.index
    # In the order they ran; the park message and the resume race (the resume may land first).
    assert first("api") < first("engine kick") < min(first("engine park"), first("resume"))
    assert first("resume") < first("engine wake")
    hops = {h["name"]: h for h in one["hops"]}
    assert hops["resume"]["parent_id"] == hops["engine kick"]["id"]  # the resume joined the parked turn
    # The wake message carried it on. Its sender is the resume, or the park message's hop when that
    # one lands after the resolve and releases the branch itself (the queue keeps the first wake).
    assert hops["engine wake"]["parent_id"] in {hops["resume"]["id"], hops["engine park"]["id"]}
    assert hops["engine park"]["parent_id"] == hops["engine kick"]["id"]  # through Step Functions
    assert all(h["start_ms"] >= 0 and h["duration_ms"] >= 0 for h in one["hops"])

    w3c_trace = one["trace_id"][2:].replace("-", "")  # X-Ray's 1-{8}-{24} is W3C's 32 hex digits
    assert parents and all(p is not None and p.split("-")[1] == w3c_trace for _, p in parents), parents
    assert {kind for kind, _ in parents} >= {"tool.execute", "interrupt.resumed"}

    code, out = trace(stack, sid)  # the table a person reads
    assert code == 0 and one["trace_id"] in out and f"{len(one['hops'])} hops" in out
    for name in TURN:
        assert name in out


def test_item7_another_tenant_gets_no_trace_of_the_session(api: Api, other_tenant: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    assert other_tenant.req("GET", f"/v1/sessions/{sid}/trace").status_code == 404
