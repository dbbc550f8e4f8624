"""The event stream and the JSON long-poll over HTTP on the local stack: a waiting request answers
when an event is committed, an `EventSource`-style client following a turn with `Last-Event-ID`
gets every event once with `id:` its seq and stops after `turn.finished`; client tokens reach only
their own session; bad input is a 400 naming the field and records nothing; other tenants 404."""

from __future__ import annotations

import json
import threading
from typing import Any

import requests

from tests.security.probes import client_token_api, refusal, table_count
from tests.stack import Api
from tests.waiting import wait_for


def frames(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """`(id, data)` of each event in an event-stream body, and its comment lines."""
    out: list[tuple[int, dict[str, Any]]] = []
    comments: list[str] = []
    for block in text.split("\n\n"):
        lines = block.splitlines()
        ids = [int(line[4:]) for line in lines if line.startswith("id: ")]
        data = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
        comments += [line[2:] for line in lines if line.startswith(": ")]
        if data:
            out.append((ids[0], data[0]))
    return out, comments


def in_background(call: Any) -> tuple[threading.Thread, list[Any]]:
    got: list[Any] = []
    thread = threading.Thread(target=lambda: got.append(call()), daemon=True)
    thread.start()
    return thread, got


def test_stream_answers_a_waiting_client_when_an_event_is_committed(api: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    last = api.events(sid)[-1]["seq"]
    sse, sse_got = in_background(lambda: api.http.get(f"{api.base}/v1/sessions/{sid}/events/stream",
                                                      params={"after_seq": last}, timeout=60))
    poll, poll_got = in_background(lambda: api.http.get(f"{api.base}/v1/sessions/{sid}/events",
                                                        params={"after_seq": last, "wait": 25}, timeout=60))
    api.ok("POST", f"/v1/sessions/{sid}/inputs", {"type": "client.message",
                                                  "message": {"role": "user", "content": "say hi again"}})
    sse.join(60)
    poll.join(60)
    [resp] = sse_got
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    got, _ = frames(resp.text)
    assert got and got[0][0] == last + 1 and all(event_id == data["seq"] for event_id, data in got)
    [page] = poll_got
    assert page.status_code == 200 and page.json()["events"][0]["seq"] == last + 1


def follow_turn(client: Api, sid: str, turn_id: str) -> list[tuple[int, dict[str, Any]]]:
    """Reconnect like an `EventSource` (sending `Last-Event-ID`) until the turn's end is sent."""
    seen: list[tuple[int, dict[str, Any]]] = []

    def reconnect() -> bool:
        headers = {"Last-Event-ID": str(seen[-1][0])} if seen else {}
        resp = client.http.get(f"{client.base}/v1/sessions/{sid}/events/stream", params={"turn_id": turn_id},
                               headers=headers, timeout=60)
        assert resp.status_code == 200, resp.text
        got, comments = frames(resp.text)
        seen.extend(got)
        return f"turn {turn_id} ended" in comments

    wait_for(reconnect, f"the stream to send the end of turn {turn_id}", 120)
    return seen


def test_stream_follows_a_turn_with_last_event_id_and_closes_after_it(api: Api) -> None:
    started = api.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "assistant",
                                              "message": {"role": "user", "content": "say hi"}})
    sid, turn_id = started["session_id"], started["turn_id"]
    seen = follow_turn(api, sid, turn_id)
    assert [i for i, _ in seen] == list(range(1, len(seen) + 1))  # every event once, in order
    assert seen[-1][1]["type"] == "turn.finished" and seen[-1][1]["data"]["turn_id"] == turn_id
    assert [d for _, d in seen] == api.events(sid)[:len(seen)]


def test_stream_client_tokens_reach_only_their_own_session(stack: Any, api: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    other = api.start("say hi")
    bound = client_token_api(stack, "dev-user", session_id=sid)
    resp = bound.http.get(f"{bound.base}/v1/sessions/{sid}/events/stream", timeout=60)
    assert resp.status_code == 200 and frames(resp.text)[0]
    assert bound.http.get(f"{bound.base}/v1/sessions/{sid}/events", params={"wait": 1}, timeout=60).ok
    refusal(bound.http.get(f"{bound.base}/v1/sessions/{other}/events/stream", timeout=60), 404)
    refusal(client_token_api(stack, "eve").http.get(f"{api.base}/v1/sessions/{sid}/events/stream", timeout=60), 404)


def test_stream_bad_input_names_the_field_and_other_tenants_get_404(stack: Any, api: Api,
                                                                   other_tenant: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    before = table_count(stack)
    url = f"{api.base}/v1/sessions/{sid}/events/stream"
    refusal(api.http.get(url, params={"after_seq": "-1"}, timeout=60), 400, param="after_seq")
    refusal(api.http.get(url, params={"turn_id": "no such id!"}, timeout=60), 400, param="turn_id")
    refusal(api.http.get(url, headers={"Last-Event-ID": "x"}, timeout=60), 400, param="Last-Event-ID")
    refusal(api.http.get(f"{api.base}/v1/sessions/{sid}/events", params={"wait": "30"}, timeout=60), 400,
            param="wait")
    refusal(other_tenant.http.get(url, timeout=60), 404)
    refusal(other_tenant.http.get(f"{api.base}/v1/sessions/{sid}/events", params={"wait": 1}, timeout=60), 404)
    assert requests.get(url, timeout=60).status_code == 401
    assert table_count(stack) == before
