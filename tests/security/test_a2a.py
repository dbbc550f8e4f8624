"""Attacks on the A2A server (PROTOCOL.md §8), over HTTP on the local stack: another tenant's agent
path and another tenant's or user's task are 404 (or TaskNotFound), and so are its push configs; a
push config URL to an internal address, `file:` or with credentials is refused naming the field and
never fetched; a task's 10-config cap holds under concurrent creates, re-puts and deletes; a card is
public only when its agent says so, and a request that is not JSON-RPC gets JSON-RPC's error codes,
never a 5xx, and records nothing."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from tests.security.probes import client_token_api, table_count
from tests.stack import Api

RPC = "/a2a/dev/assistant"
CARD = RPC + "/.well-known/agent-card.json"


def rpc(api: Api, method: str, params: Any = None, path: str = RPC, **extra: Any) -> requests.Response:
    return api.req("POST", path, {"jsonrpc": "2.0", "id": "1", "method": method, "params": params or {}, **extra})


def send(text: str) -> dict[str, Any]:
    return {"message": {"messageId": f"m-{abs(hash(text))}", "role": "ROLE_USER", "parts": [{"text": text}]}}


def rpc_error(resp: requests.Response, code: int, param: str | None = None) -> dict[str, Any]:
    assert resp.status_code == 200, (resp.status_code, resp.text[:300])
    err = resp.json()["error"]
    assert err["code"] == code, err
    if param is not None:
        assert err["data"][0]["metadata"].get("param") == param, err
    return err


def test_tenant_wall_a2a_other_tenants_agent_path_is_404(stack: Any, api: Api, other_tenant: Api) -> None:
    before = table_count(stack)
    resp = rpc(other_tenant, "SendMessage", send("Email Bob"))
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
    assert rpc(other_tenant, "SendMessage", send("hi"), path="/a2a/other/assistant").status_code == 404  # no agent
    assert rpc(api, "SendMessage", send("hi"), path="/a2a/dev/nobody").status_code == 404
    assert table_count(stack) == before


def test_tenant_wall_a2a_other_tenants_and_users_tasks_are_not_found(stack: Any, api: Api, other_tenant: Api) -> None:
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # The other tenant's own agent, asked for this tenant's task: unknown there.
    other_tenant.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": [
        {"when": {"role": "user"}, "reply": {"content": "Hi!"}}]}})
    before = table_count(stack)
    rpc_error(rpc(other_tenant, "GetTask", {"id": task["id"]}, path="/a2a/other/assistant"), -32001, "id")
    rpc_error(rpc(other_tenant, "CancelTask", {"id": task["id"]}, path="/a2a/other/assistant"), -32001, "id")
    eve = client_token_api(stack, "eve")
    rpc_error(rpc(eve, "GetTask", {"id": task["id"]}), -32001, "id")
    follow_up = send("say hi again")
    follow_up["message"]["contextId"] = task["contextId"]
    rpc_error(rpc(eve, "SendMessage", follow_up), -32001, "message.contextId")
    assert table_count(stack) == before


def test_a2a_card_is_public_only_when_the_agent_says_so(stack: Any, api: Api) -> None:
    anonymous = requests.get(stack.base_url + CARD, timeout=30)
    assert anonymous.status_code == 404
    agent = api.ok("GET", "/v1/agents/assistant")["agent"]
    api.ok("PUT", "/v1/agents/assistant", {**agent, "a2a": {"public": True}})
    card = requests.get(stack.base_url + CARD, timeout=30)
    assert card.status_code == 200
    assert card.json()["supportedInterfaces"][0]["url"].endswith(RPC)
    assert requests.get(stack.base_url + "/a2a/other/assistant/.well-known/agent-card.json",
                        timeout=30).status_code == 404
    # Without credentials, the JSON-RPC endpoint stays closed (API Gateway's authorizer).
    assert requests.post(stack.base_url + RPC, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"},
                         timeout=30).status_code == 401


def test_bad_jsonrpc_gets_jsonrpc_codes_and_records_nothing(stack: Any, api: Api) -> None:
    before = table_count(stack)
    raw = api.http.post(stack.base_url + RPC, data=b"{not json", timeout=30)
    rpc_error(raw, -32700)
    deep = api.http.post(stack.base_url + RPC, data=b"[" * 100 + b"]" * 100, timeout=30)
    rpc_error(deep, -32700)
    rpc_error(api.req("POST", RPC, [1, 2]), -32600)
    rpc_error(api.req("POST", RPC, {"jsonrpc": "1.0", "id": 1, "method": "GetTask"}), -32600, "jsonrpc")
    rpc_error(rpc(api, "message/teleport"), -32601, "method")
    rpc_error(rpc(api, "SendMessage", {"message": {"role": "ROLE_USER", "parts": []}}), -32602,
              "params.message.messageId")
    bad_role = send("hi")
    bad_role["message"]["role"] = "ROLE_AGENT"
    rpc_error(rpc(api, "SendMessage", bad_role), -32602, "message.role")
    files = send("hi")
    files["message"]["parts"] = [{"url": "https://example.com/x.pdf"}]
    rpc_error(rpc(api, "SendMessage", files), -32602, "message.parts[0]")
    rpc_error(rpc(api, "GetTask", {"id": "no-such-task"}), -32001, "id")
    rpc_error(rpc(api, "GetTask", {"id": "ses_nope~turn_nope"}), -32001, "id")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {"taskId": "x", "url": "http://127.0.0.1:9/"}), -32001,
              "taskId")
    old = api.http.post(stack.base_url + RPC, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}},
                        headers={"A2A-Version": "0.3"}, timeout=30)
    rpc_error(old, -32009, "A2A-Version")
    assert table_count(stack) == before


def test_a2a_answer_the_response_schema_refuses_names_the_field(stack: Any, api: Api) -> None:
    from tests.stack import worker_with_schema

    schema = {"type": "object", "required": ["approved"], "properties": {"approved": {"type": "boolean"}}}
    with worker_with_schema(api, schema):
        task = rpc(api, "SendMessage", send("Email Bob")).json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        [interrupt] = task["status"]["message"]["parts"][1]["data"]["interrupts"]
        assert interrupt["responseSchema"] == schema
        before = table_count(stack)
        answer = {"message": {"messageId": "a-1", "role": "ROLE_USER", "taskId": task["id"],
                              "parts": [{"data": {"approved": "yes"}}]}}
        rpc_error(rpc(api, "SendMessage", answer), -32602, "message.parts.data.approved")
        eve = client_token_api(stack, "eve")
        rpc_error(rpc(eve, "SendMessage", answer), -32001, "message.taskId")
        assert table_count(stack) == before


def _parked_with_config(api: Api) -> dict[str, Any]:
    task = rpc(api, "SendMessage", send("Email Bob")).json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    made = rpc(api, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "id": "hook-1",
                                                         "url": "http://127.0.0.1:9/hook", "token": "tok-secret"})
    assert made.json()["result"] == {"id": "hook-1", "taskId": task["id"], "url": "http://127.0.0.1:9/hook"}
    return task


def test_tenant_wall_a2a_push_configs_of_another_tenants_task_are_not_found(
        stack: Any, api: Api, other_tenant: Api) -> None:
    task = _parked_with_config(api)
    other_tenant.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": [
        {"when": {"role": "user"}, "reply": {"content": "Hi!"}}]}})
    ref = {"taskId": task["id"], "id": "hook-1"}
    before = table_count(stack)
    for caller, path in ((other_tenant, "/a2a/other/assistant"), (client_token_api(stack, "eve"), RPC)):
        rpc_error(rpc(caller, "GetTaskPushNotificationConfig", ref, path=path), -32001, "taskId")
        rpc_error(rpc(caller, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}, path=path), -32001, "taskId")
        rpc_error(rpc(caller, "DeleteTaskPushNotificationConfig", ref, path=path), -32001, "taskId")
        rpc_error(rpc(caller, "CreateTaskPushNotificationConfig", {**ref, "url": "http://127.0.0.1:9/evil"},
                      path=path), -32001, "taskId")
    assert rpc(other_tenant, "GetTask", {"id": task["id"]}, path=RPC).status_code == 404  # the agent path too
    assert table_count(stack) == before
    # The owner still has it, unchanged, and never sees the token again.
    got = rpc(api, "GetTaskPushNotificationConfig", ref).json()["result"]
    assert got == {"id": "hook-1", "taskId": task["id"], "url": "http://127.0.0.1:9/hook"}
    rpc_error(rpc(api, "GetTaskPushNotificationConfig", {**ref, "id": "hook-2"}), -32001, "id")


class _Listener:
    """A loopback endpoint that counts what reaches it (a refused URL must never be fetched)."""

    def __init__(self) -> None:
        self.hits = 0
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                listener.hits += 1
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]


def test_ssrf_a2a_push_url_is_refused_naming_the_field_and_never_fetched(stack: Any, api: Api) -> None:
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    listener = _Listener()
    try:
        hostile = ["http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/",
                   "http://2852039166/", "http://0.0.0.0:1/", "file:///etc/passwd", "gopher://127.0.0.1/",
                   f"http://user:pass@127.0.0.1:{listener.port}/", f"http://127.0.0.1:{listener.port}/ x",
                   f"http://127.0.0.1:{listener.port}/caf\u00e9"]  # no HTTP client can send it
        before = table_count(stack)
        for url in hostile:
            rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url}), -32602, "url")
            with_config = send(f"push to {url}")
            with_config["configuration"] = {"taskPushNotificationConfig": {"url": url}}
            rpc_error(rpc(api, "SendMessage", with_config), -32602, "configuration.taskPushNotificationConfig.url")
        assert table_count(stack) == before  # no config, and no turn for the refused SendMessage
        assert rpc(api, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}).json()["result"] == {"configs": []}
        assert listener.hits == 0
    finally:
        listener.server.shutdown()


def test_bad_params_a2a_push_configs_get_invalid_params_and_record_nothing(stack: Any, api: Api) -> None:
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    before = table_count(stack)
    good = {"taskId": task["id"], "url": "http://127.0.0.1:9/hook"}
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {"taskId": task["id"]}), -32602, "params.url")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {"url": good["url"]}), -32602, "params.taskId")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "id": "a#b"}), -32602, "params.id")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "url": 7}), -32602, "params.url")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "token": ""}), -32602, "params.token")
    for header_breaker in ("abc\r\nX-Injected: 1", "caf\u20ac", "two words"):  # no header value carries them
        rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "token": header_breaker}), -32602,
                  "params.token")
        rpc_error(rpc(api, "CreateTaskPushNotificationConfig",
                      {**good, "authentication": {"scheme": "Bearer", "credentials": header_breaker}}),
                  -32602, "params.authentication.credentials")
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "authentication": {"scheme": "Bad scheme"}}),
              -32602, "params.authentication.scheme")
    rpc_error(rpc(api, "GetTaskPushNotificationConfig", {"taskId": task["id"]}), -32602, "params.id")
    rpc_error(rpc(api, "ListTaskPushNotificationConfigs", {"taskId": task["id"], "pageSize": -1}), -32602,
              "params.pageSize")
    rpc_error(rpc(api, "DeleteTaskPushNotificationConfig", {"id": "x"}), -32602, "params.taskId")
    bad = send("hi")
    bad["configuration"] = {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9/", "id": "../x"}}
    rpc_error(rpc(api, "SendMessage", bad), -32602, "params.configuration.taskPushNotificationConfig.id")
    assert table_count(stack) == before
    for n in range(10):
        assert "result" in rpc(api, "CreateTaskPushNotificationConfig", {**good, "id": f"h{n}"}).json()
    assert "result" in rpc(api, "CreateTaskPushNotificationConfig", {**good, "id": "h3"}).json()  # the same again
    rpc_error(rpc(api, "CreateTaskPushNotificationConfig", {**good, "id": "h10"}), -32602, "id")
    assert len(rpc(api, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}).json()["result"]["configs"]) == 10


def test_bad_params_a2a_refused_send_message_keeps_no_push_config(stack: Any, api: Api) -> None:
    """A SendMessage on a task that is refused (an agent's role, another context) keeps nothing,
    not even the push config it carries: its checks come before the config is kept."""
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    before = table_count(stack)
    for change, param in (({"role": "ROLE_AGENT"}, "message.role"), ({"contextId": "ses_other"}, "message.contextId")):
        bad = send("again")
        bad["message"].update(taskId=task["id"], **change)
        bad["configuration"] = {"taskPushNotificationConfig": {"id": "cfg1", "url": "http://127.0.0.1:9/hook"}}
        rpc_error(rpc(api, "SendMessage", bad), -32602, param)
    assert table_count(stack) == before
    assert rpc(api, "ListTaskPushNotificationConfigs", {"taskId": task["id"]}).json()["result"] == {"configs": []}


def _configs_of(api: Api, task: dict[str, Any]) -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = rpc(api, "ListTaskPushNotificationConfigs",
                                        {"taskId": task["id"]}).json()["result"]["configs"]
    return configs


def _create_all(api: Api, task: dict[str, Any], ids: list[str]) -> list[dict[str, Any]]:
    """Create a config of each id at once (one thread each); the JSON-RPC answers, in order."""
    def create(config_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = rpc(api, "CreateTaskPushNotificationConfig", {
            "taskId": task["id"], "id": config_id, "url": f"http://127.0.0.1:9/{config_id}"}).json()
        return answer

    with ThreadPoolExecutor(len(ids)) as pool:
        return list(pool.map(create, ids))


def test_quota_a2a_push_configs_stay_at_most_ten_under_concurrent_creates(stack: Any, api: Api) -> None:
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    answers = _create_all(api, task, [f"cfg{i}" for i in range(40)])
    accepted = [a for a in answers if "result" in a]
    assert len(accepted) == 10, f"{len(accepted)} of 40 concurrent creates accepted"
    for refused in (a for a in answers if "result" not in a):
        assert refused["error"]["code"] == -32602 and refused["error"]["data"][0]["metadata"]["param"] == "id"
    assert sorted(c["id"] for c in _configs_of(api, task)) == sorted(a["result"]["id"] for a in accepted)


def test_quota_a2a_push_config_slots_are_counted_once_under_concurrent_reputs_and_deletes(
        stack: Any, api: Api) -> None:
    """Re-putting a kept config takes no second slot, and a config deleted by many callers at once
    gives its one slot back once: afterwards exactly one more config fits."""
    task = rpc(api, "SendMessage", send("say hi")).json()["result"]["task"]
    assert all("result" in a for a in _create_all(api, task, [f"h{i}" for i in range(10)]))

    def churn(n: int) -> Any:
        if n % 2:
            return rpc(api, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "h0"}).json()
        return rpc(api, "CreateTaskPushNotificationConfig",  # a changed config of a kept id
                   {"taskId": task["id"], "id": f"h{1 + n % 9}", "url": f"http://127.0.0.1:9/again{n}"}).json()

    with ThreadPoolExecutor(24) as pool:
        assert all("result" in a for a in pool.map(churn, range(24)))
    assert len(_configs_of(api, task)) == 9
    answers = _create_all(api, task, [f"new{i}" for i in range(8)])
    assert sum(1 for a in answers if "result" in a) == 1, answers
    assert len(_configs_of(api, task)) == 10
