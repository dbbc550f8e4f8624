"""Races over HTTP on the local stack (docs/SECURITY.md): concurrent inputs, resumes against the token's
arrival and against the expiry. Outcomes are checked, never timings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from tests.stack import Api, declare_agent, resumed_triggers
from tests.waiting import wait_until_epoch


def test_concurrent_messages_on_one_head_start_exactly_one_turn(api: Api, worker: Any) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    # The winner's turn parks on send_email, so it is still active however late a loser retries.
    body = {"type": "client.message", "message": {"role": "user", "content": "email Bob again"}}
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(lambda _: api.req("POST", f"/v1/sessions/{sid}/inputs", body), range(20)))
    codes = sorted(a.status_code for a in answers)
    assert codes.count(202) == 1, codes
    # A loser is refused as a second turn, or, once the winner's turn has parked (R9), as interrupted.
    assert all(a.json()["error"]["code"] in ("turn_already_active", "interrupted")
               for a in answers if a.status_code == 409)
    assert set(codes) <= {202, 409}
    view = api.wait_status(sid, "interrupted")
    assert [m["content"] for m in view["messages"] if m["role"] == "user"] == ["say hi", "email Bob again"]
    api.resume(sid, view["interrupts"][0]["interrupt_id"], {"approved": True})
    assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."


def test_concurrent_queued_messages_all_run_in_order(api: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    with ThreadPoolExecutor(max_workers=5) as pool:
        answers = list(pool.map(lambda i: api.req("POST", f"/v1/sessions/{sid}/inputs", {
            "type": "client.message", "queue": True, "message": {"role": "user", "content": f"say hi #{i}"}}),
            range(5)))
    assert all(a.status_code == 202 for a in answers), [a.text for a in answers]
    # How many found the session idle depends on timing (a retried commit may land after an earlier
    # turn ended); what may not vary: five distinct turns, each run alone, none lost.
    assert len({a.json()["turn_id"] for a in answers}) == 5
    view = api.wait(sid, lambda v: v["status"] == "done" and
                    len([m for m in v["messages"] if m["role"] == "user"]) == 6, timeout=120)
    assert [m["role"] for m in view["messages"]] == ["user", "assistant"] * 6


def test_resume_racing_the_task_token_still_wakes_exactly_once(api: Api, worker: Any) -> None:
    _, seen = worker
    sids = [api.start() for _ in range(4)]
    for sid in sids:  # resume the moment the session reads interrupted, token or not
        iid = api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
        assert api.resume(sid, iid, {"approved": True}).json()["noop"] is False
    for sid in sids:
        assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
        assert len(resumed_triggers(seen, sid)) == 1


def test_resume_racing_the_expiry_has_exactly_one_winner(api: Api, stack: Any, worker: Any) -> None:
    _, seen = worker
    declare_agent(api, worker[0], interrupt_expires_in=1)
    sid = api.start()
    interrupt = api.wait_status(sid, "interrupted")["interrupts"][0]
    iid = interrupt["interrupt_id"]
    expires = datetime.fromisoformat(interrupt["expires_at"].replace("Z", "+00:00")).timestamp()
    wait_until_epoch(expires - 0.1, "just before the expiry")  # aim the resume at it; either may win, never both
    answer = api.resume(sid, iid, {"approved": True}).json()
    final = api.wait_status(sid, "done", timeout=90)
    [resumed] = resumed_triggers(seen, sid)
    cleared = [e for e in api.events(sid) if e["type"] == "session.interrupt_resumed"]
    assert len(cleared) == 1
    if answer["noop"]:  # the expiry won
        assert resumed["payload"] == {"status": "cancelled", "reason": "expired"}
        assert final["messages"][-1]["content"] == "I did not send it."
    else:  # the person won; a late timeout only finds the interrupt already resolved
        assert resumed["payload"] == {"approved": True}
        assert final["messages"][-1]["content"] == "Email sent."
