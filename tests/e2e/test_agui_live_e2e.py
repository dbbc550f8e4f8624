"""Live events in `format: "ag-ui"` on the local stack, followed by AG-UI's own client library
(`@ag-ui/client` 1.0.0's AbstractAgent over a WebSocket transport, tests/agui/live.mjs, `ws`
pinned in tests/agui/package-lock.json): the library's event verification accepts what Holdpoint
sends, each run it follows is the session's turn (RUN_STARTED .. RUN_FINISHED, an interrupt
outcome for a park), every message's text arrives once, and a connection cut in the middle of a
run reconnects from its last seq and loses nothing and repeats nothing; a catch-up a page per
subscribe is followed on with `has_more`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from holdpoint.services import live as live_service
from holdpoint.services.live import Live
from tests.e2e.streaming import HeldStream, no_engine_stream
from tests.e2e.test_agui_e2e import AGUI, NODE, agui_client
from tests.stack import Api

__all__ = ["agui_client"]
AGAIN = {"type": "client.message", "message": {"role": "user", "content": "say hi again"}}


def follow(stack: Any, sid: str, inputs: list[Any], drop_after: int | None = None) -> dict[str, Any]:
    """live.mjs following `sid`, one run an entry of `inputs` (posted once that run is subscribed)."""
    env = {**os.environ, "HP_LIVE": stack.live.url, "HP_BASE": stack.base_url, "HP_KEY": stack.api_key,
           "HP_SESSION": sid, "HP_INPUTS": json.dumps(inputs)}
    if drop_after is not None:
        env["HP_DROP_AFTER"] = str(drop_after)
    done = subprocess.run([str(NODE), str(AGUI / "live.mjs")], cwd=AGUI, env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["errors"] == [] and report["stats"]["schemaErrors"] == [], report
    return report


def texts(report: dict[str, Any]) -> dict[str, str]:
    """Each message's text as the TEXT_MESSAGE_CONTENT events the client saw spell it."""
    out: dict[str, str] = {}
    for event in report["textMessages"]:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            out[event["messageId"]] = out.get(event["messageId"], "") + event["delta"]
    return out


def assistant_texts(api: Api, sid: str) -> dict[str, str]:
    return {m["id"]: m["content"] for m in api.view(sid)["messages"] if m["role"] == "assistant" and m.get("content")}


def test_agui_live_the_ag_ui_client_follows_runs_over_the_websocket(stack: Any, api: Api, agui_client: Path) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    report = follow(stack, sid, [None, AGAIN])  # the first run from the log, the second live
    first, second = report["runs"]
    for run in (first, second):
        assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED"
        assert run["outcome"] == "success" and "TEXT_MESSAGE_CONTENT" in run["types"]
    api.wait_status(sid, "done")
    assert texts(report) == assistant_texts(api, sid)
    assert [m["id"] for m in report["messages"] if m["role"] == "assistant"] == list(assistant_texts(api, sid))
    assert report["stats"]["reconnects"] == 0


def test_agui_live_a_catch_up_in_pages_gives_the_whole_run(stack: Any, api: Api, agui_client: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """One subscribe sends one page of the log; the client follows `has_more` from `through_seq`."""
    monkeypatch.setattr(live_service, "MAX_CATCH_UP", 2)
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    report = follow(stack, sid, [None])
    [run] = report["runs"]
    assert run["types"][0] == "RUN_STARTED" and run["types"][-1] == "RUN_FINISHED"
    assert run["outcome"] == "success" and texts(report) == assistant_texts(api, sid)


def test_agui_live_a_park_ends_the_run_with_its_interrupt(stack: Any, api: Api, agui_client: Path) -> None:
    sid = api.start("Email Bob")
    [interrupt] = api.wait_status(sid, "interrupted")["interrupts"]
    report = follow(stack, sid, [None])
    [run] = report["runs"]
    assert run["outcome"] == "interrupt" and run["pending"] == [interrupt["interrupt_id"]]
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"} <= set(run["types"])


def test_agui_live_a_reconnect_loses_nothing_and_repeats_nothing(stack: Any, api: Api, agui_client: Path) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    report = follow(stack, sid, [None, AGAIN], drop_after=2)  # cut after the second run's first 2 events
    assert report["stats"]["reconnects"] == 1 and report["stats"]["duplicates"] >= 1  # the catch-up overlapped
    first, second = report["runs"]
    assert second["types"][0] == "RUN_STARTED" and second["types"][-1] == "RUN_FINISHED"
    assert second["types"].count("RUN_STARTED") == 1 and second["types"].count("TEXT_MESSAGE_START") == 1
    api.wait_status(sid, "done")
    assert texts(report) == assistant_texts(api, sid)  # each text once: a repeat would double it


def test_agui_live_the_engines_tokens_stream_to_the_ag_ui_client_and_the_commit_adds_no_second_text(
        stack: Any, api: Api, agui_client: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23: tokens stream to the real AG-UI client. The engine streams the scripted reply in
    two pieces: TEXT_MESSAGE_START, a CONTENT per delta and TEXT_MESSAGE_END under the committed
    message's id, then the commit without its text; the library's message holds the text once."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    held = HeldStream(monkeypatch, [1])
    held.release(0)  # the second piece follows the first at once: the batch still posts it as its own delta
    report = follow(stack, sid, [None, AGAIN])
    api.wait_status(sid, "done")
    [mid] = [m["id"] for m in api.view(sid)["messages"] if m["role"] == "assistant"][1:]
    mine = [(e["type"], e.get("delta")) for e in report["textMessages"] if e["messageId"] == mid]
    assert mine[0] == ("TEXT_MESSAGE_START", None) and mine[-1] == ("TEXT_MESSAGE_END", None)
    assert "".join(d for kind, d in mine if kind == "TEXT_MESSAGE_CONTENT") == "Hi!"
    assert [m["content"] for m in report["messages"] if m["id"] == mid] == ["Hi!"]
    assert held.pieces == ["H", "i!"]
    assert texts(report) == assistant_texts(api, sid)


def test_agui_live_deltas_stream_to_the_ag_ui_client_and_the_commit_adds_no_second_text(
        stack: Any, api: Api, agui_client: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deltas posted the way the engine posts them (`Live.fan_out` before the commit that
    records the message): TEXT_MESSAGE_START/CONTENT/END under the committed message's id, then
    the commit without its text, and the library's message holds the text once."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    no_engine_stream(monkeypatch)
    real, streamed = Live.publish, []

    def streaming(self: Live, state: Any) -> None:
        added = [e for e in state.events if e.type == "message.added" and e.data.get("call_id")]
        if state.header.session_id == sid and added and not streamed:
            call = str(added[0].data["call_id"])
            streamed.append(added[0].data["message_id"])
            frames = [{"type": "delta", "session_id": sid, "call_id": call, "index": i, "text": t}
                      for i, t in enumerate(["H", "i!"])]
            frames.append({"type": "delta_end", "session_id": sid, "call_id": call, "reason": "finished"})
            for frame in frames:
                self.fan_out(state.header.tenant, sid, [frame])
        real(self, state)

    monkeypatch.setattr(Live, "publish", streaming)
    report = follow(stack, sid, [None, AGAIN])
    [mid] = streamed
    mine = [(e["type"], e.get("delta")) for e in report["textMessages"] if e["messageId"] == mid]
    assert mine == [("TEXT_MESSAGE_START", None), ("TEXT_MESSAGE_CONTENT", "H"), ("TEXT_MESSAGE_CONTENT", "i!"),
                    ("TEXT_MESSAGE_END", None)]
    assert [m["content"] for m in report["messages"] if m["id"] == mid] == ["Hi!"]
    api.wait_status(sid, "done")
    assert texts(report) == assistant_texts(api, sid)


def test_agui_live_a_reconnect_between_the_deltas_and_the_commit_repeats_no_text(
        stack: Any, api: Api, agui_client: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway drops the client's connection after a message's last delta and before its
    commit: the message comes again whole from the log under the same id, and the client (which
    has it whole) hands on no second text."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    no_engine_stream(monkeypatch)
    real, streamed = Live.publish, []

    def streaming(self: Live, state: Any) -> None:
        added = [e for e in state.events if e.type == "message.added" and e.data.get("call_id")]
        if state.header.session_id == sid and added and not streamed:
            call = str(added[0].data["call_id"])
            streamed.append(added[0].data["message_id"])
            for frame in ({"type": "delta", "session_id": sid, "call_id": call, "index": 0, "text": "Hi!"},
                          {"type": "delta_end", "session_id": sid, "call_id": call, "reason": "finished"}):
                self.fan_out(state.header.tenant, sid, [frame])
            for connection_id in list(stack.live.connections):
                stack.live.close(connection_id)
        real(self, state)

    monkeypatch.setattr(Live, "publish", streaming)
    report = follow(stack, sid, [None, AGAIN])
    [mid] = streamed
    assert report["stats"]["reconnects"] == 1 and report["stats"]["repeatedMessages"] == 1, report
    mine = [(e["type"], e.get("delta")) for e in report["textMessages"] if e["messageId"] == mid]
    assert mine == [("TEXT_MESSAGE_START", None), ("TEXT_MESSAGE_CONTENT", "Hi!"), ("TEXT_MESSAGE_END", None)]
    assert [m["content"] for m in report["messages"] if m["id"] == mid] == ["Hi!"]
    assert report["runs"][1]["types"][-1] == "RUN_FINISHED"
