"""LLM providers (PROTOCOL.md §4): `bedrock` against botocore's Stubber (recorded Converse exchanges),
`openai` against a local chat-completions server on 127.0.0.1, `scripted` unchanged. Offline."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from holdpoint import llm
from holdpoint.aws import secretrefs
from holdpoint.aws.errors import SdkFailure
from holdpoint.core.state import derive

SYSTEM = {"role": "system", "content": "You are a mail assistant."}
USER = {"id": "m1", "role": "user", "content": "Send Bob the report."}
TOOLS = [{"name": "send_email", "description": "Send an email",
          "input": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}]


# --- bedrock --------------------------------------------------------------------------------


@pytest.fixture
def converse(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    seen: list[tuple[Any, float]] = []

    def fake_client(region: str | None = None, timeout_secs: float = llm.DEFAULT_TIMEOUT_SECS) -> Any:
        seen.append((region, timeout_secs))
        return client

    monkeypatch.setattr(llm.bedrock, "bedrock_client", fake_client)
    with Stubber(client) as stubber:
        stubber.seen = seen  # type: ignore[attr-defined]
        yield stubber
        stubber.assert_no_pending_responses()


def bedrock_agent(**llm_fields: Any) -> dict[str, Any]:
    return {"model": "anthropic.claude-3-haiku", "tools": TOOLS,
            "llm": {"provider": "bedrock", "region": "eu-west-1", **llm_fields}}


def converse_reply(blocks: list[dict[str, Any]], stop: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {"output": {"message": {"role": "assistant", "content": blocks}}, "stopReason": stop,
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out, "totalTokens": tokens_in + tokens_out},
            "metrics": {"latencyMs": 12}}


TOOL_CONFIG = {"tools": [{"toolSpec": {"name": "send_email", "description": "Send an email",
                                       "inputSchema": {"json": TOOLS[0]["input"]}}}]}


def test_bedrock_tool_use_round_trip(converse: Stubber) -> None:
    agent = bedrock_agent(price_in=3.0, price_out=15.0, timeout_secs=30)
    # 1) the model asks for a tool
    converse.add_response("converse", converse_reply(
        [{"text": "Sending it now."},
         {"toolUse": {"toolUseId": "tooluse_1", "name": "send_email", "input": {"to": "bob@example.com"}}}],
        "tool_use", 1000, 200), expected_params={
        "modelId": "anthropic.claude-3-haiku",
        "system": [{"text": "You are a mail assistant."}],
        "messages": [{"role": "user", "content": [{"text": "Send Bob the report."}]}],
        "toolConfig": TOOL_CONFIG})
    first = llm.complete(agent, {}, [SYSTEM, USER], "call-1")
    assert first == {
        "ok": True, "truncated": False,
        "message": {"role": "assistant", "content": "Sending it now.", "tool_calls": [
            {"id": "tooluse_1", "type": "function",
             "function": {"name": "send_email", "arguments": '{"to": "bob@example.com"}'}}]},
        "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
        "cost": pytest.approx(3.0 + 3.0)}  # 1k in at $3/1k + 0.2k out at $15/1k
    assert converse.seen == [("eu-west-1", 30.0)]  # type: ignore[attr-defined]

    # 2) the tool result goes back as a toolResult block in a user turn, the call as toolUse
    history = [SYSTEM, USER, {"id": "m2", **first["message"]},
               {"id": "m3", "role": "tool", "tool_call_id": "tooluse_1", "content": "sent: id 42"}]
    converse.add_response("converse", converse_reply([{"text": "Done: the report is on its way."}],
                                                     "end_turn", 1300, 9), expected_params={
        "modelId": "anthropic.claude-3-haiku",
        "system": [{"text": "You are a mail assistant."}],
        "messages": [
            {"role": "user", "content": [{"text": "Send Bob the report."}]},
            {"role": "assistant", "content": [
                {"text": "Sending it now."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "send_email", "input": {"to": "bob@example.com"}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "sent: id 42"}]}}]}],
        "toolConfig": TOOL_CONFIG})
    second = llm.complete(agent, {}, history, "call-2")
    assert second["ok"] and not second["truncated"]
    assert second["message"] == {"role": "assistant", "content": "Done: the report is on its way."}
    assert second["usage"] == {"prompt_tokens": 1300, "completion_tokens": 9}


def test_bedrock_max_tokens_truncates_and_request_overrides(converse: Stubber) -> None:
    request = {"model": "amazon.nova-lite-v1:0", "temperature": 0.2, "max_completion_tokens": 5,
               "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]}
    converse.add_response("converse", converse_reply([{"text": "The report covers"}], "max_tokens", 40, 5),
                          expected_params={
        "modelId": "amazon.nova-lite-v1:0",
        "messages": [{"role": "user", "content": [{"text": "Summarise the report."}]}],
        "inferenceConfig": {"maxTokens": 5, "temperature": 0.2},
        "toolConfig": {"tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {"type": "object"}}}}]}})
    out = llm.complete(bedrock_agent(), request, [{"role": "user", "content": "Summarise the report."}], "c")
    assert out["ok"] and out["truncated"] is True
    assert out["message"] == {"role": "assistant", "content": "The report covers"}
    assert out["cost"] == 0.0  # no prices configured


def test_bedrock_merges_same_role_turns_and_hoists_system(converse: Stubber) -> None:
    bad_id = derive("tu", "b/1 2")  # an id Converse would refuse, replaced stably
    messages = [
        SYSTEM,
        {"role": "user", "content": "Two things:"},
        {"role": "user", "content": [{"type": "text", "text": "send the report"}, {"type": "text", "text": ""}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "send_email", "arguments": '{"to": "x"}'}},
            {"id": "b/1 2", "type": "function", "function": {"name": "send_email", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sent"},
        {"role": "tool", "tool_call_id": "b/1 2", "content": ""},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "and tell me when done"},
    ]
    converse.add_response("converse", converse_reply([{"text": "Both sent."}], "end_turn", 10, 2), expected_params={
        "modelId": "m", "system": [{"text": "You are a mail assistant."}, {"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Two things:"}, {"text": "send the report"}]},
            {"role": "assistant", "content": [
                {"toolUse": {"toolUseId": "a", "name": "send_email", "input": {"to": "x"}}},
                {"toolUse": {"toolUseId": bad_id, "name": "send_email", "input": {"raw": "not json"}}}]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "a", "content": [{"text": "sent"}]}},
                {"toolResult": {"toolUseId": bad_id, "content": []}},
                {"text": "and tell me when done"}]}],
        # the tools were withdrawn, but Converse needs a toolConfig for toolUse history
        "toolConfig": {"tools": [{"toolSpec": {"name": "send_email", "inputSchema": {"json": {"type": "object"}}}}]}})
    agent = {"model": "m", "llm": {"provider": "bedrock"}}
    assert llm.complete(agent, {}, messages, "c")["message"]["content"] == "Both sent."


@pytest.mark.parametrize(("error", "status", "code", "retryable"), [
    ("ThrottlingException", 429, "throttled", True),
    ("ServiceUnavailableException", 503, "provider_unavailable", True),
    ("InternalServerException", 500, "provider_unavailable", True),
    ("ModelTimeoutException", 408, "timeout", True),
    ("ValidationException", 400, "invalid_request", False),
    ("AccessDeniedException", 403, "auth_error", False),
    ("ResourceNotFoundException", 404, "model_not_found", False),
])
def test_bedrock_errors_say_whether_to_retry(converse: Stubber, error: str, status: int, code: str,
                                             retryable: bool) -> None:
    converse.add_client_error("converse", service_error_code=error, service_message="nope",
                              http_status_code=status)
    with pytest.raises(llm.LlmError) as info:
        llm.complete(bedrock_agent(), {}, [USER], "c")
    assert (info.value.code, info.value.retryable) == (code, retryable)
    assert error in str(info.value) and "nope" in str(info.value)


@pytest.mark.parametrize(("kind", "code", "retryable"), [
    ("timeout", "timeout", True), ("unreachable", "provider_unavailable", True),
    ("no_credentials", "auth_error", False), ("other", "provider_error", False),
])
def test_bedrock_failures_without_an_answer_say_whether_to_retry(kind: Any, code: str, retryable: bool) -> None:
    got = llm.errors.from_bedrock(SdkFailure(kind, "no answer"))
    assert (got.code, got.retryable) == (code, retryable) and "no answer" in str(got)


def test_bedrock_without_model_is_a_config_error(converse: Stubber) -> None:
    with pytest.raises(llm.LlmError) as info:
        llm.complete({"llm": {"provider": "bedrock"}}, {}, [USER], "c")
    assert info.value.code == "config_error" and not info.value.retryable


def test_bedrock_client_is_cached_per_region_with_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm.bedrock, "_CLIENTS", {})
    client = llm.bedrock_client("eu-west-1", 42.0)
    assert llm.bedrock_client("eu-west-1", 42.0) is client
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.read_timeout == 42.0
    assert client.meta.config.retries["total_max_attempts"] == 1  # retries are the engine's


def test_timeouts_are_capped_to_fit_one_engine_invocation(converse: Stubber) -> None:
    converse.add_response("converse", converse_reply([{"text": "hi"}], "end_turn", 1, 1))
    llm.complete(bedrock_agent(timeout_secs=600), {}, [USER], "c")
    assert converse.seen == [("eu-west-1", llm.MAX_TIMEOUT_SECS)]  # type: ignore[attr-defined]
    for agent in (bedrock_agent(timeout_secs=-1), bedrock_agent(price_in="cheap")):
        with pytest.raises(llm.LlmError) as info:
            llm.complete(agent, {}, [USER], "c")  # refused before any (paid) call
        assert info.value.code == "config_error"


# --- openai-compatible ----------------------------------------------------------------------


class ChatServer:
    """A chat-completions endpoint on 127.0.0.1: records each request, answers from a queue."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[tuple[int, Any, dict[str, str], float]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "body": json.loads(body)})
                status, payload, headers, delay = server.replies.pop(0)
                time.sleep(delay)
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def reply(self, status: int, payload: Any, headers: dict[str, str] | None = None, delay: float = 0.0) -> None:
        self.replies.append((status, payload, headers or {}, delay))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-123")
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "t1=TEST_LLM_KEY,t1=NO_SUCH_VAR")
    monkeypatch.setattr(llm, "complete", functools.partial(llm.complete, tenant="t1"))  # env: keys are a tenant's
    server = ChatServer()
    yield server
    server.close()


def openai_agent(base_url: str, **llm_fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "tools": TOOLS,
            "llm": {"provider": "openai", "base_url": base_url + "/v1", "api_key": "env:TEST_LLM_KEY", **llm_fields}}


def completion(message: dict[str, Any], finish: str, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out}}


def test_openai_request_shape_and_tool_calls(chat: ChatServer) -> None:
    chat.reply(200, completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "send_email", "arguments": '{"to":"bob"}'}}]},
        "tool_calls", 2000, 100))
    history = [SYSTEM, USER,
               {"id": "m2", "role": "assistant", "content": None, "tool_calls": [
                   {"id": "call_0", "type": "function",
                    "function": {"name": "send_email", "arguments": {"to": "al"}}}]},
               {"id": "m3", "role": "tool", "tool_call_id": "call_0", "content": "sent"}]
    agent = openai_agent(chat.url, price_in=0.5, price_out=1.5)
    out = llm.complete(agent, {"temperature": 0.3, "max_completion_tokens": 64}, history, "call-9")

    [req] = chat.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["headers"]["Content-Type"] == "application/json"
    assert req["body"] == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a mail assistant."},
            {"role": "user", "content": "Send Bob the report."},  # engine ids stripped
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "send_email", "arguments": '{"to": "al"}'}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "sent"}],
        "tools": [{"type": "function", "function": {"name": "send_email", "description": "Send an email",
                                                    "parameters": TOOLS[0]["input"]}}],
        "temperature": 0.3,
        "max_completion_tokens": 64}
    assert out == {
        "ok": True, "truncated": False,
        "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "send_email", "arguments": '{"to":"bob"}'}}]},
        "usage": {"prompt_tokens": 2000, "completion_tokens": 100},
        "cost": pytest.approx(1.0 + 0.15)}


def test_openai_length_is_truncated_and_request_overrides(chat: ChatServer) -> None:
    chat.reply(200, completion({"role": "assistant", "content": "The report"}, "length", 12, 2))
    agent = openai_agent(chat.url, max_tokens_param="max_tokens", max_tokens=900, temperature=1.0)
    out = llm.complete(agent, {"model": "llama3", "tools": [], "max_completion_tokens": 2},
                       [{"role": "user", "content": "Summarise"}], "c")
    assert out["truncated"] is True and out["message"] == {"role": "assistant", "content": "The report"}
    body = chat.requests[0]["body"]
    assert body == {"model": "llama3", "messages": [{"role": "user", "content": "Summarise"}],
                    "temperature": 1.0, "max_tokens": 2}


@pytest.mark.parametrize(("status", "code", "retryable"), [
    (429, "throttled", True), (500, "provider_unavailable", True), (503, "provider_unavailable", True),
    (400, "invalid_request", False), (401, "auth_error", False), (404, "model_not_found", False),
])
def test_openai_http_errors_say_whether_to_retry(chat: ChatServer, status: int, code: str, retryable: bool) -> None:
    chat.reply(status, {"error": {"message": "model says no", "type": "x"}})
    with pytest.raises(llm.LlmError) as info:
        llm.complete(openai_agent(chat.url), {}, [USER], "c")
    assert (info.value.code, info.value.retryable) == (code, retryable)
    assert f"HTTP {status}" in str(info.value) and "model says no" in str(info.value)
    assert "sk-test-123" not in str(info.value)


def test_openai_timeout_and_refused_connection_are_retryable(chat: ChatServer) -> None:
    chat.reply(200, completion({"role": "assistant", "content": "late"}, "stop", 1, 1), delay=1.0)
    with pytest.raises(llm.LlmError) as info:
        llm.complete(openai_agent(chat.url, timeout_secs=0.2), {}, [USER], "c")
    assert (info.value.code, info.value.retryable) == ("timeout", True)

    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{closed.server_address[1]}"
    closed.server_close()
    with pytest.raises(llm.LlmError) as info:
        llm.complete(openai_agent(url), {}, [USER], "c")
    assert info.value.retryable and info.value.code == "provider_unavailable"


def test_openai_does_not_follow_redirects(chat: ChatServer) -> None:
    chat.reply(302, {}, headers={"Location": chat.url + "/elsewhere"})
    with pytest.raises(llm.LlmError) as info:
        llm.complete(openai_agent(chat.url), {}, [USER], "c")
    assert "HTTP 302" in str(info.value) and not info.value.retryable
    assert len(chat.requests) == 1  # the key never went to the redirect target


def test_openai_bad_bodies_are_errors(chat: ChatServer) -> None:
    chat.reply(200, b"<html>gateway</html>")
    chat.reply(200, {"error": {"message": "overloaded"}})
    for expected in ("not JSON", "overloaded"):
        with pytest.raises(llm.LlmError) as info:
            llm.complete(openai_agent(chat.url), {}, [USER], "c")
        assert expected in str(info.value) and info.value.code == "bad_response"


def test_openai_config_is_checked(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def err(agent: dict[str, Any]) -> llm.LlmError:
        with pytest.raises(llm.LlmError) as info:
            llm.complete(agent, {}, [USER], "c")
        assert not info.value.retryable and info.value.code == "config_error"
        return info.value

    assert "never the secret itself" in str(err(openai_agent(chat.url, api_key="sk-literal")))
    assert "not set" in str(err(openai_agent(chat.url, api_key="env:NO_SUCH_VAR")))
    assert "base_url is required" in str(err({"model": "m", "llm": {"provider": "openai"}}))
    assert "model" in str(err({"llm": {"provider": "openai", "base_url": chat.url}}))
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS")
    assert "https" in str(err(openai_agent(chat.url)))
    assert "llm.base_url" in str(err(openai_agent("https://169.254.169.254")))
    assert chat.requests == []


def test_openai_key_without_auth_and_from_secrets_manager(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    chat.reply(200, completion({"role": "assistant", "content": "hi"}, "stop", 1, 1))
    agent = openai_agent(chat.url)
    del agent["llm"]["api_key"]  # a local endpoint (ollama, vLLM) may need no key
    assert llm.complete(agent, {}, [USER], "c")["message"]["content"] == "hi"
    assert "Authorization" not in chat.requests[-1]["headers"]

    monkeypatch.setattr(secretrefs, "_CACHE", {})
    monkeypatch.setenv("HOLDPOINT_ACCOUNT_ID", "123456789012")
    with mock_aws():
        arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
            Name="holdpoint/tenants/t1/llm-key", SecretString="sk-from-sm")["ARN"]
        chat.reply(200, completion({"role": "assistant", "content": "hi"}, "stop", 1, 1))
        llm.complete(openai_agent(chat.url, api_key=f"secretsmanager:{arn}"), {}, [USER], "c", tenant="t1")
    assert chat.requests[-1]["headers"]["Authorization"] == "Bearer sk-from-sm"


# --- scripted and dispatch --------------------------------------------------------------------


def test_scripted_is_unchanged_and_default() -> None:
    script = {"provider": "scripted", "script": [
        {"when": {"role": "user", "contains": "report"},
         "reply": {"content": "on it", "tool_calls": [{"name": "send_email", "arguments": {"to": "bob"}}]}},
        {"reply": {"content": "done"}}]}
    out = llm.complete({"llm": script}, {}, [USER], "call-1")
    assert out["message"]["content"] == "on it"
    assert out["message"]["tool_calls"][0]["function"] == {"name": "send_email", "arguments": '{"to": "bob"}'}
    assert out["usage"] == {"prompt_tokens": 4, "completion_tokens": 10} and out["cost"] == 0.0
    assert llm.complete({"llm": script}, {}, [{"role": "tool", "content": "x"}], "c")["message"]["content"] == "done"
    assert llm.complete(None, {}, [USER], "c")["message"]["content"] == "ok"
    assert llm.complete({"llm": {"provider": "nope"}}, {}, [USER], "c")["code"] == "provider_unavailable"


def test_llm_error_keeps_its_old_signature() -> None:
    err = llm.LlmError("boom")
    assert (str(err), err.code, err.retryable) == ("boom", "provider_error", False)
