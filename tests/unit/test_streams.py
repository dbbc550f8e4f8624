"""The event stream and the JSON long-poll (services.streams, the `events` routes) on moto's
in-process AWS: SSE framing with `id:` per event, `Last-Event-ID`, cutting after the watched turn,
the bounded backoff and the wait cap, bad input naming the field, other tenants 404."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.store import Store
from holdpoint.core.state import Event
from holdpoint.services import streams
from holdpoint.services.caller import Caller
from tests.harness import Harness
from tests.unit.test_api import API, CONTEXT, api, assert_error, call_api, http_event, start_session, table_items

__all__ = ["api"]


def sse(reply: dict[str, Any]) -> tuple[int, str, list[tuple[int | None, dict[str, Any]]], list[str]]:
    """Status, content type, `(id, data)` frames and comment lines of an event-stream answer."""
    import json

    frames: list[tuple[int | None, dict[str, Any]]] = []
    comments: list[str] = []
    for block in reply["body"].split("\n\n"):
        event_id, data = None, None
        for line in block.splitlines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line.startswith(": "):
                comments.append(line[2:])
        if data is not None:
            frames.append((event_id, data))
    headers = {k.lower(): v for k, v in reply["headers"].items()}
    return reply["statusCode"], headers.get("content-type", ""), frames, comments


def stream(sid: str, query: dict[str, str] | None = None, headers: dict[str, str] | None = None,
           **kw: Any) -> dict[str, Any]:
    event = http_event("GET", f"/v1/sessions/{sid}/events/stream", query=query, **kw)
    event["headers"].update(headers or {})
    return API.handler(event, CONTEXT)


class Clock:
    """A fake monotonic clock that `sleep` advances: the wait loop, without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.sleeps.append(secs)
        self.now += secs


def test_stream_sends_every_event_with_its_seq_as_id(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    status, kind, frames, _ = sse(stream(sid))
    assert status == 200 and kind.startswith("text/event-stream")
    everything = h.events()
    assert [i for i, _ in frames] == [e["seq"] for e in everything][:100]
    assert [d for _, d in frames] == everything[:100]


def test_stream_resumes_from_last_event_id_over_after_seq(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    seqs = [e["seq"] for e in h.events()]
    _, _, frames, _ = sse(stream(sid, query={"after_seq": "0"}, headers={"last-event-id": str(seqs[2])}))
    assert [i for i, _ in frames] == seqs[3:]
    _, _, frames, _ = sse(stream(sid, query={"after_seq": str(seqs[1])}))
    assert [i for i, _ in frames] == seqs[2:]


def test_stream_closes_after_the_watched_turn_ends(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    first = h.say("say hi")
    h.say("say hi again")
    sid = h.session_id
    assert sid
    _, _, frames, comments = sse(stream(sid, query={"turn_id": first.turn_id}))
    assert frames[-1][1]["type"] == "turn.finished" and frames[-1][1]["data"]["turn_id"] == first.turn_id
    assert comments == [f"turn {first.turn_id} ended"]
    assert len(frames) < len(h.events())  # the second turn's events are not in this answer


def test_stream_bad_input_names_the_field_and_other_tenants_get_404(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    before = table_items()
    for query, headers, param in (({"after_seq": "-1"}, {}, "after_seq"), ({"after_seq": "x"}, {}, "after_seq"),
                                  ({"turn_id": "bad id"}, {}, "turn_id"),
                                  ({}, {"last-event-id": "abc"}, "Last-Event-ID")):
        reply = stream(sid, query=query, headers=headers)
        import json

        assert_error(reply["statusCode"], json.loads(reply["body"]), 400, param=param)
    reply = stream(sid, tenant="other")
    assert reply["statusCode"] == 404
    assert table_items() == before


def test_json_long_poll_wait_is_bounded_and_validated(api: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()  # the route's wait runs on the fake clock: the empty page's second, without waiting it
    monkeypatch.setitem(streams.wait_events.__kwdefaults__, "clock", clock)
    monkeypatch.setitem(streams.wait_events.__kwdefaults__, "sleep", clock.sleep)
    h = Harness(tenant="dev")
    sid = start_session(h)
    last = h.events()[-1]["seq"]
    status, page = call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": "0", "wait": "5"})
    assert status == 200 and page["events"] and page["events"][0]["seq"] == 1  # events exist: no waiting
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"wait": "26"}), 400, param="wait")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"wait": "-1"}), 400, param="wait")
    assert_error(*call_api("GET", f"/v1/sessions/{sid}/events", query={"wait": "1"}, tenant="other"), 404)
    status, page = call_api("GET", f"/v1/sessions/{sid}/events", query={"after_seq": str(last), "wait": "1"})
    assert status == 200 and page == {"events": [], "next_after_seq": last, "has_more": False}
    assert clock.now == pytest.approx(1) and len(clock.sleeps) > 1  # polled for its second, then answered


def test_wait_polls_with_a_bounded_backoff_under_the_cap(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h)
    last = h.events()[-1]["seq"]
    clock = Clock()
    reads: list[int] = []
    store = Store()

    class Counting:
        def events(self, *args: Any) -> list[Event]:
            reads.append(1)
            return store.events(*args)

    got = streams.wait_events(Counting(), "dev", sid, last, 10, 60, clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]
    assert got == []
    assert clock.now == streams.MAX_WAIT_SECS  # 60 s asked, 25 s waited: under API Gateway's 30 s
    assert clock.sleeps[0] == streams.FIRST_POLL_SECS and max(clock.sleeps) <= streams.MAX_POLL_SECS
    assert len(reads) <= 110  # about four Queries a second once backed off, not a busy loop


def test_wait_answers_as_soon_as_an_event_is_committed(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start_session(h, "say hi")
    last = h.events()[-1]["seq"]
    clock = Clock()

    def sleep(secs: float) -> None:
        clock.sleep(secs)
        if len(clock.sleeps) == 3:  # an event is committed while the client waits
            h.say("say hi")

    got = streams.wait_events(Store(), "dev", sid, last, 10, 25, clock=clock, sleep=sleep)
    assert got and got[0]["seq"] == last + 1
    assert len(clock.sleeps) == 3  # the next poll after the commit answered


def test_client_token_reaches_only_its_own_session(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    mine = Caller("dev", "dev-user", "client", own_only=True)
    h.caller = mine
    sid = h.say("Email Bob that the report is ready.").session_id
    assert streams.page(Store(), mine, sid, 0, 5)["events"]
    by_key = start_session(h)  # the API key `dev-user`'s session: not the end user's
    bound_elsewhere = Caller("dev", "dev-user", "client", session_id="ses_other", own_only=True)
    someone_else = Caller("dev", "eve", "client", own_only=True)
    for caller, session in ((bound_elsewhere, sid), (someone_else, sid), (mine, by_key)):
        try:
            streams.page(Store(), caller, session, 0, 5)
        except Exception as exc:  # noqa: BLE001 - the refusal is what is checked
            assert getattr(exc, "code", None) == "not_found"
        else:
            raise AssertionError("a client token read another subject's session")


def test_the_long_poll_cap_is_below_api_gateway_and_the_api_function_timeout(monkeypatch: Any) -> None:
    """API Gateway HTTP APIs give up on an integration after 30 s; the API function's timeout (from
    template.yaml) must outlast the wait with room for the answer; an operator may only lower it."""
    from pathlib import Path

    from holdpoint_local.provision import load_template

    template = load_template(Path(__file__).resolve().parents[2] / "template.yaml")
    function = template["Resources"]["ApiFunction"]["Properties"]
    timeout = function.get("Timeout", template["Globals"]["Function"]["Timeout"])
    assert streams.MAX_WAIT_SECS + 2 <= timeout < 30
    monkeypatch.setenv(streams.CAP_ENV, "90")
    assert streams.cap() == streams.MAX_WAIT_SECS
    monkeypatch.setenv(streams.CAP_ENV, "3")
    assert streams.cap() == 3
    monkeypatch.setenv(streams.CAP_ENV, "soon")
    assert streams.cap() == streams.MAX_WAIT_SECS
