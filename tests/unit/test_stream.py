"""LLM token streaming (issue 23 item 3, docs/PROTOCOL.md "Live events"): the batching of deltas
on an injected clock, each provider's `stream` against its emulation (`bedrock`: the real boto3
client against a local ConverseStream endpoint speaking AWS's event-stream encoding; `openai`:
server-sent chunks from a local chat-completions endpoint; `scripted`: word by word), and the
engine's streaming: `delta` frames then `delta_end`, one connections lookup when nobody follows,
and a call voided by a park stopping its stream."""

from __future__ import annotations

import binascii
import contextlib
import json
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

from holdpoint import llm
from holdpoint.ports import LlmError, StreamStopped
from holdpoint.services import sessions, streaming
from holdpoint.services.live import Live
from holdpoint.services.streaming import Batcher
from holdpoint_local.memory.frames import MemoryFrames
from tests.harness import Harness
from tests.unit.test_live import DownFrames, FakeConnections
from tests.unit.test_llm_providers import TOOLS, USER, ChatServer, openai_agent

LONG = " ".join(f"word{i}" for i in range(41)) + "."  # 41 pieces: the last waits for the end


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


# --- batching ----------------------------------------------------------------------------------


def test_stream_batcher_posts_the_first_delta_at_once_then_at_most_every_50_ms() -> None:
    clock, posts = FakeClock(0.0), []
    batcher = Batcher(posts.append, clock)
    batcher.add("a")
    assert posts == ["a"]  # the first token goes at once
    for i, piece in enumerate("bcd", 1):
        clock.now = 0.015 * i
        batcher.add(piece)
    assert posts == ["a"]  # 45 ms after the last post: waiting
    clock.now = 0.05
    batcher.add("e")  # 50 ms after the last post
    assert posts == ["a", "bcde"]
    clock.now = 0.06
    batcher.add("f")
    batcher.flush()  # the end of the stream posts what waits
    assert posts == ["a", "bcde", "f"]
    batcher.flush()
    assert posts == ["a", "bcde", "f"]


def test_stream_batcher_posts_at_1_kb_whatever_the_clock_and_splits_under_the_frame_limit() -> None:
    clock, posts = FakeClock(), []
    batcher = Batcher(posts.append, clock)
    batcher.add("x")
    batcher.add("é" * 511)  # 1,022 bytes waiting: under 1 KB
    assert posts == ["x"]
    batcher.add("yy")  # 1,024 bytes, no time passed
    assert posts == ["x", "é" * 511 + "yy"]
    batcher.add("\u0001" * 10_000)  # one huge delta: split so each frame stays under 32 KB
    frames = [{"type": "delta", "session_id": "s" * 40, "call_id": "c" * 40, "index": 0, "text": t}
              for t in posts[2:]]
    assert "".join(posts[2:]) == "\u0001" * 10_000 and len(frames) == 3
    assert all(len(json.dumps(f).encode()) < 32 * 1024 for f in frames)


def test_stream_batcher_times_its_50_ms_from_the_end_of_a_slow_post() -> None:
    """A slow fan-out (posts to many connections) sends fewer, larger frames, not one per token."""
    clock, posts = FakeClock(0.0), []

    def slow(text: str) -> None:
        posts.append(text)
        clock.now += 0.25

    batcher = Batcher(slow, clock)
    batcher.add("a")
    batcher.add("b")  # read at once after the 250 ms post: 0 ms since it ended
    assert posts == ["a"]
    clock.now += 0.0625
    batcher.add("c")
    assert posts == ["a", "bc"]


# --- providers -------------------------------------------------------------------------------------


def collecting(stop_after: int | None = None) -> tuple[list[str], Any]:
    pieces: list[str] = []

    def on_delta(text: str) -> bool:
        pieces.append(text)
        return stop_after is None or len(pieces) < stop_after

    return pieces, on_delta


def test_stream_scripted_hands_over_its_content_word_by_word_and_answers_as_complete() -> None:
    agent = {"llm": {"provider": "scripted", "script": [{"reply": {"content": "Hello  there,\nBob!"}}]}}
    pieces, on_delta = collecting()
    streamed = llm.stream(agent, {}, [USER], "c1", "t1", on_delta)
    assert pieces == ["Hello  ", "there,\n", "Bob!"]
    assert streamed == llm.complete(agent, {}, [USER], "c1", "t1")
    with pytest.raises(StreamStopped):
        llm.stream(agent, {}, [USER], "c1", "t1", collecting(stop_after=1)[1])


# bedrock: the real client against a local ConverseStream endpoint ------------------------------


def _header(name: str, value: str) -> bytes:
    raw = value.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def event_message(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One message of AWS's event-stream encoding: prelude (lengths, CRC), headers, payload, CRC."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(head) + len(body), len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + head + body
    return message + struct.pack(">I", binascii.crc32(message))


def converse_event(kind: str, payload: dict[str, Any]) -> bytes:
    return event_message({":message-type": "event", ":event-type": kind, ":content-type": "application/json"},
                         payload)


class ConverseStreamServer:
    """`POST /model/{id}/converse-stream` on 127.0.0.1, answering queued event-stream bodies."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append({"path": self.path, "body": json.loads(body)})
                raw = server.bodies.pop(0)
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def converse_stream(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConverseStreamServer]:
    server = ConverseStreamServer()
    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    monkeypatch.setattr(llm.bedrock, "bedrock_client", lambda region=None, timeout_secs=60.0: client)
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def bedrock_events(texts: list[str], tool: bool = False) -> bytes:
    out = converse_event("messageStart", {"role": "assistant"})
    for text in texts:
        out += converse_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})
    out += converse_event("contentBlockStop", {"contentBlockIndex": 0})
    if tool:
        out += converse_event("contentBlockStart", {"contentBlockIndex": 1, "start": {
            "toolUse": {"toolUseId": "tu-1", "name": "send_email"}}})
        for part in ('{"to": ', '"bob"}'):
            out += converse_event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": part}}})
        out += converse_event("contentBlockStop", {"contentBlockIndex": 1})
    out += converse_event("messageStop", {"stopReason": "tool_use" if tool else "end_turn"})
    out += converse_event("metadata", {"usage": {"inputTokens": 20, "outputTokens": 7, "totalTokens": 27},
                                       "metrics": {"latencyMs": 5}})
    return out


def bedrock_agent() -> dict[str, Any]:
    return {"model": "anthropic.claude-3-haiku", "tools": TOOLS,
            "llm": {"provider": "bedrock", "region": "eu-west-1", "price_in": 1.0, "price_out": 2.0}}


def test_stream_bedrock_converse_stream_hands_over_text_and_gathers_the_whole_reply(
        converse_stream: ConverseStreamServer) -> None:
    converse_stream.bodies.append(bedrock_events(["I will ", "email ", "Bob."], tool=True))
    pieces, on_delta = collecting()
    out = llm.stream(bedrock_agent(), {}, [USER], "c1", "t1", on_delta)
    assert pieces == ["I will ", "email ", "Bob."]
    assert converse_stream.requests[0]["path"] == "/model/anthropic.claude-3-haiku/converse-stream"
    assert converse_stream.requests[0]["body"]["messages"] == [{"role": "user", "content": [{"text": USER["content"]}]}]
    assert out["ok"] and out["message"]["content"] == "I will email Bob."
    assert out["message"]["tool_calls"] == [{"id": "tu-1", "type": "function", "function": {
        "name": "send_email", "arguments": json.dumps({"to": "bob"})}}]
    assert out["usage"] == {"prompt_tokens": 20, "completion_tokens": 7}
    assert out["cost"] == pytest.approx((20 * 1.0 + 7 * 2.0) / 1000)


def test_stream_bedrock_stops_reading_when_told_and_in_stream_errors_say_whether_to_retry(
        converse_stream: ConverseStreamServer) -> None:
    converse_stream.bodies.append(bedrock_events(["a ", "b ", "c ", "d"]))
    pieces, on_delta = collecting(stop_after=2)
    with pytest.raises(StreamStopped):
        llm.stream(bedrock_agent(), {}, [USER], "c1", "t1", on_delta)
    assert pieces == ["a ", "b "]
    throttled = converse_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x"}}) + event_message(
        {":message-type": "exception", ":exception-type": "throttlingException", ":content-type": "application/json"},
        {"message": "slow down"})
    converse_stream.bodies.append(throttled)
    with pytest.raises(LlmError) as err:
        llm.stream(bedrock_agent(), {}, [USER], "c1", "t1", collecting()[1])
    assert err.value.retryable and err.value.code == "throttled"


# openai: server-sent chunks from a local chat-completions endpoint -------------------------------


@pytest.fixture
def sse(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-123")
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "t1=TEST_LLM_KEY")
    server = ChatServer()
    yield server
    server.close()


def sse_body(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_stream_openai_asks_for_a_stream_hands_over_content_and_gathers_the_whole_reply(sse: ChatServer) -> None:
    body = sse_body([chunk({"role": "assistant", "content": ""}), chunk({"content": "Sending "}),
                     chunk({"content": "now."}),
                     chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                            "function": {"name": "send_email", "arguments": '{"to"'}}]}),
                     chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "bob"}'}}]}, "tool_calls"),
                     {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 4}}])
    sse.reply(200, body, {"Content-Type": "text/event-stream"})
    pieces, on_delta = collecting()
    out = llm.stream(openai_agent(sse.url), {}, [USER], "c1", "t1", on_delta)
    assert pieces == ["Sending ", "now."]
    request = sse.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["headers"]["Accept"] == "text/event-stream"
    assert request["body"]["stream"] is True and request["body"]["stream_options"] == {"include_usage": True}
    assert out["message"] == {"role": "assistant", "content": "Sending now.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "send_email", "arguments": '{"to": "bob"}'}}]}
    assert out["usage"] == {"prompt_tokens": 11, "completion_tokens": 4}


def test_stream_openai_stops_reading_when_told_and_bad_streams_are_errors(sse: ChatServer) -> None:
    sse.reply(200, sse_body([chunk({"content": w}) for w in ("a ", "b ", "c ")]), {"Content-Type": "text/event-stream"})
    pieces, on_delta = collecting(stop_after=1)
    with pytest.raises(StreamStopped):
        llm.stream(openai_agent(sse.url), {}, [USER], "c1", "t1", on_delta)
    assert pieces == ["a "]
    sse.reply(200, b"data: {not json\n\n", {"Content-Type": "text/event-stream"})
    with pytest.raises(LlmError, match="not JSON"):
        llm.stream(openai_agent(sse.url), {}, [USER], "c1", "t1", collecting()[1])
    sse.reply(200, b"data: [DONE]\n\n", {"Content-Type": "text/event-stream"})
    with pytest.raises(LlmError, match="no chunks"):
        llm.stream(openai_agent(sse.url), {}, [USER], "c1", "t1", collecting()[1])
    sse.reply(503, {"error": {"message": "busy"}})
    with pytest.raises(LlmError) as err:
        llm.stream(openai_agent(sse.url), {}, [USER], "c1", "t1", collecting()[1])
    assert err.value.retryable


# --- the engine --------------------------------------------------------------------------------------


class CountingConnections(FakeConnections):
    def __init__(self, following: list[str]) -> None:
        super().__init__(following)
        self.lookups = 0

    def following(self, tenant: str, session_id: str) -> list[str]:
        self.lookups += 1
        return super().following(tenant, session_id)

    def followers(self, tenant: str, session_id: str) -> dict[str, str]:
        self.lookups += 1
        return super().followers(tenant, session_id)


def streaming_harness(followers: list[str], content: str = LONG, **kw: Any) -> tuple[Harness, Any, MemoryFrames]:
    h = Harness(agent={"llm": {"provider": "scripted", "script": [{"reply": {"content": content}}]}}, **kw)
    connections, frames = CountingConnections(followers), MemoryFrames({"gone"})
    h.runner.live = Live(h.store, connections, frames)
    h.runner.llm_stream = llm.stream
    return h, connections, frames


def spaced(clock: FakeClock, step: float, each: Any = None) -> Any:
    """`llm.stream` whose provider hands a piece over every `step` seconds of the fake clock."""

    def stream(agent: Any, request: Any, messages: Any, call_id: str, tenant: str, on_delta: Any) -> Any:
        def paced(text: str) -> bool:
            clock.now += step
            if each is not None:
                each(text)
            return bool(on_delta(text))

        return llm.stream(agent, request, messages, call_id, tenant, paced)

    return stream


@pytest.mark.usefixtures("memory")
def test_stream_engine_posts_batched_deltas_then_delta_end_and_commits_the_whole_message() -> None:
    h, connections, frames = streaming_harness(["c1", "gone"])
    clock = FakeClock(time.time())
    h.runner.clock = clock
    h.runner.llm_stream = spaced(clock, 0.02)
    commit = h.store.commit

    def marked(state: Any) -> Any:  # where the commits fall among the frames
        if any(e.type == "message.added" and e.data.get("role") == "assistant" for e in state.events):
            frames.sent.append(("c1", {"type": "committed"}))
        return commit(state)

    h.store.commit = marked  # type: ignore[method-assign]
    h.say("go")
    sent = [f for c, f in frames.sent if c == "c1"]
    assert [f["type"] for f in sent[-2:]] == ["committed", "delta_end"]  # every delta came before the message
    sent.remove({"type": "committed"})
    deltas, end = sent[:-1], sent[-1]
    [call_id] = {f["call_id"] for f in sent}
    assert [f["index"] for f in deltas] == list(range(len(deltas)))
    assert all(set(f) == {"type", "session_id", "call_id", "index", "text"} and f["type"] == "delta"
               and f["session_id"] == h.session_id for f in deltas)
    assert 1 < len(deltas) < len(LONG.split())  # batched: 41 words 20 ms apart, a post at most every 50 ms
    assert "".join(f["text"] for f in deltas) == LONG == h.view()["messages"][-1]["content"]
    assert end == {"type": "delta_end", "session_id": h.session_id, "call_id": call_id, "reason": "finished"}
    assert connections.dropped == ["gone"] and frames.refused == ["gone"]  # a 410 stops its posts
    assert connections.lookups == 1


@pytest.mark.usefixtures("memory")
def test_stream_engine_with_nobody_following_calls_the_provider_whole_after_one_lookup() -> None:
    h, connections, frames = streaming_harness([])

    def never(*args: Any) -> Any:
        raise AssertionError("streamed with nobody following")

    h.runner.llm_stream = never
    h.say("go")
    assert h.view()["messages"][-1]["content"] == LONG
    assert connections.lookups == 1 and frames.sent == []


@pytest.mark.usefixtures("memory")
def test_stream_engine_a_failed_call_ends_failed() -> None:
    h, _, frames = streaming_harness(["c1"])

    def failing(agent: Any, request: Any, messages: Any, call_id: str, tenant: str, on_delta: Any) -> Any:
        on_delta("partial ")
        raise LlmError("the model refused", "invalid_request")

    h.runner.llm_stream = failing
    h.say("go")
    assert [f["type"] for _, f in frames.sent] == ["delta", "delta_end"]
    assert frames.sent[-1][1]["reason"] == "failed"


@pytest.mark.parametrize("backend", ["memory", "aws"])
def test_stream_engine_a_call_voided_by_a_park_stops_its_stream_and_ends_voided(
        backend: str, request: pytest.FixtureRequest) -> None:
    """R6: an operator parks the branch while the reply streams. Within a second of the clock the
    engine reads the call voided, stops reading the provider and tells the subscribers; nothing is
    recorded. On the in-memory store and on the DynamoDB store (moto)."""
    request.getfixturevalue(backend)
    h, _, frames = streaming_harness(["c1"], origin="operator")
    clock = FakeClock(time.time())
    h.runner.clock = clock
    seen: list[str] = []

    def park_on_the_third(text: str) -> None:
        seen.append(text)
        if len(seen) == 3:
            sessions.raise_interrupt(h.store, h.queue, h.caller, h.session_id or "", reason="hold on", payload=None,
                                     global_=True, interrupt_id="op-1", expires_in=None, request_id="r-park")

    h.runner.llm_stream = spaced(clock, 0.1, park_on_the_third)
    h.say("go")
    assert len(seen) <= 3 + 10 < len(LONG.split())  # stopped within one check period (1 s at 0.1 s a word)
    assert frames.sent[-1][1]["reason"] == "voided" and frames.sent[-1][1]["type"] == "delta_end"
    assert [f["type"] for _, f in frames.sent].count("delta_end") == 1
    assert h.events("call.voided") and not any(m["role"] == "assistant" for m in h.view()["messages"])
    assert h.runner.counters.counts["llm_streams_stopped"] == 1


def test_stream_void_checks_cost_at_most_one_read_a_second() -> None:
    clock, reads = FakeClock(), []
    live = Live(None, FakeConnections(["c1"]), MemoryFrames())  # type: ignore[arg-type]
    stream = streaming.DeltaStream(live, "t", "s", "c", ["c1"], clock, lambda: reads.append(clock.now) or True)
    for _ in range(1000):  # 10 s of deltas, 10 ms apart
        clock.now += 0.01
        assert stream.on_delta("x")
    assert 9 <= len(reads) == stream.checks <= 10  # the first one second in
    assert all(b - a >= 1.0 - 1e-9 for a, b in zip(reads, reads[1:], strict=False))


def test_live_publish_delta_never_raises_and_a_gone_connection_stops_following() -> None:
    connections = FakeConnections(["gone", "here"])
    frame = {"type": "delta", "session_id": "s", "call_id": "c", "index": 0, "text": "x"}
    live = Live(None, connections, MemoryFrames({"gone"}))  # type: ignore[arg-type]
    assert live.publish_delta("t", "s", {"gone": "events", "here": "events"}, frame) == {"here": "events"}
    assert connections.dropped == ["gone"]
    failing = Live(None, connections, DownFrames())  # type: ignore[arg-type]
    assert failing.publish_delta("t", "s", {"here": "events"}, frame) == {"here": "events"}  # not a gone connection


@pytest.mark.usefixtures("memory")
def test_stream_engine_a_crashing_provider_ends_the_stream_failed_and_fails_the_step() -> None:
    h, _, frames = streaming_harness(["c1"])

    def crashing(agent: Any, request: Any, messages: Any, call_id: str, tenant: str, on_delta: Any) -> Any:
        on_delta("partial ")
        raise RuntimeError("a bug in a provider")

    h.runner.llm_stream = crashing
    with pytest.raises(RuntimeError):
        h.say("go")  # the step fails (the message is redelivered), its subscribers are told
    assert [(f["type"], f.get("reason")) for _, f in frames.sent] == [("delta", None), ("delta_end", "failed")]


def test_stream_a_failed_void_check_stops_nothing() -> None:
    clock = FakeClock()
    live = Live(None, FakeConnections(["c1"]), MemoryFrames())  # type: ignore[arg-type]

    def unreadable() -> bool:
        raise RuntimeError("throttled")

    stream = streaming.DeltaStream(live, "t", "s", "c", ["c1"], clock, unreadable)
    clock.now += 2
    assert stream.on_delta("x") and stream.checks == 1 and not stream.stopped
