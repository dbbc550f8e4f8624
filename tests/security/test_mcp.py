"""Attacks on the MCP server (PROTOCOL.md §9), over HTTP on the local stack: another tenant's agent
and another tenant's or end user's approvals are 404 or not found, and a request that is not
JSON-RPC, or not MCP 2026-07-28, gets the protocol's error codes, never a 5xx, and records nothing."""

from __future__ import annotations

from typing import Any

import requests

from tests.security.probes import client_token_api, table_count
from tests.stack import Api
from tests.waiting import wait_for

RPC = "/mcp/assistant"
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}


def rpc(api: Api, method: str, params: Any = None, path: str = RPC, **extra: Any) -> requests.Response:
    body = {"jsonrpc": "2.0", "id": "1", "method": method, "params": {**META, **(params or {})}, **extra}
    return api.req("POST", path, body)


def tool(api: Api, name: str, arguments: Any, path: str = RPC) -> dict[str, Any]:
    resp = rpc(api, "tools/call", {"name": name, "arguments": arguments}, path)
    assert resp.status_code == 200, resp.text[:300]
    out: dict[str, Any] = resp.json()["result"]
    return out


def rpc_error(resp: requests.Response, status: int, code: int, param: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    err: dict[str, Any] = resp.json()["error"]
    assert err["code"] == code, err
    if param is not None:
        assert (err.get("data") or {}).get("param") == param, err
    return err


def settled(api: Api, approval_id: str) -> None:
    """The approvals session's first engine step (its `session.start` delivered) is behind us."""
    sid = approval_id.split("~")[0]
    wait_for(lambda: any(e["type"] == "decision.delivered" for e in api.ok("GET", f"/v1/sessions/{sid}/events")[
        "events"]), "the approvals session's start to be delivered", 60)


def not_found(result: dict[str, Any]) -> None:
    assert result["isError"] and result["structuredContent"]["error"]["code"] == "not_found", result


def test_tenant_wall_mcp_other_tenants_agent_and_approvals_are_not_found(
        stack: Any, api: Api, other_tenant: Api) -> None:
    task = rpc(api, "tools/call", {"name": "request_approval", "arguments": {"question": "Ship it?"}}).json()["result"]
    assert task["resultType"] == "task" and task["status"] == "working"
    other_tenant.ok("PUT", "/v1/agents/assistant", {"llm": {"provider": "scripted", "script": []}})
    settled(api, task["taskId"])
    before = table_count(stack)
    resp = rpc(other_tenant, "tools/call", {"name": "get_approval", "arguments": {"id": task["taskId"]}},
               path="/mcp/nobody")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"  # no such agent there
    # The other tenant's own agent, asked for this tenant's approval: unknown there.
    not_found(tool(other_tenant, "get_approval", {"id": task["taskId"]}))
    not_found(tool(other_tenant, "answer_approval", {"id": task["taskId"], "payload": {"approved": True}}))
    rpc_error(rpc(other_tenant, "tasks/get", {"taskId": task["taskId"]}), 400, -32602, "taskId")
    rpc_error(rpc(other_tenant, "tasks/cancel", {"taskId": task["taskId"]}), 400, -32602, "taskId")
    assert tool(other_tenant, "list_pending_approvals", {})["structuredContent"] == {"approvals": []}
    assert table_count(stack) == before
    assert rpc(api, "tasks/get", {"taskId": task["taskId"]}).json()["result"]["status"] == "working"


def test_end_user_isolation_mcp_a_user_reaches_only_their_own_approvals(stack: Any, api: Api) -> None:
    alice, eve = client_token_api(stack, "alice"), client_token_api(stack, "eve")
    mine = tool(alice, "request_approval", {"question": "Refund order 7?"})
    assert mine["resultType"] == "task"
    theirs = tool(api, "request_approval", {"question": "Key rotation?"})
    settled(alice, mine["taskId"])
    settled(api, theirs["taskId"])
    before = table_count(stack)
    not_found(tool(eve, "get_approval", {"id": mine["taskId"]}))
    not_found(tool(eve, "answer_approval", {"id": mine["taskId"], "payload": {"approved": True}}))
    not_found(tool(alice, "answer_approval", {"id": theirs["taskId"], "payload": {"approved": True}}))
    not_found(tool(alice, "get_approval", {"id": theirs["taskId"]}))  # an API key's, not hers
    rpc_error(rpc(eve, "tasks/get", {"taskId": mine["taskId"]}), 400, -32602, "taskId")
    assert tool(eve, "list_pending_approvals", {})["structuredContent"] == {"approvals": []}
    assert table_count(stack) == before
    listed = tool(alice, "list_pending_approvals", {})["structuredContent"]["approvals"]
    assert [a["id"] for a in listed] == [mine["taskId"]]


def test_bad_jsonrpc_mcp_gets_jsonrpc_codes_and_records_nothing(stack: Any, api: Api) -> None:
    tool(api, "list_pending_approvals", {})  # the agent's approvals session need not exist; nothing else is
    before = table_count(stack)
    headers = {"Authorization": f"Bearer {stack.api_key}", "Content-Type": "application/json"}
    raw = requests.post(stack.base_url + RPC, data=b"{not json", headers=headers, timeout=30)
    rpc_error(raw, 400, -32700, "body")
    rpc_error(api.req("POST", RPC, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]), 400, -32600)  # a batch
    rpc_error(api.req("POST", RPC, {"jsonrpc": "1.0", "id": 1, "method": "ping"}), 400, -32600, "jsonrpc")
    rpc_error(api.req("POST", RPC, {"jsonrpc": "2.0", "id": 1}), 400, -32600, "method")
    rpc_error(rpc(api, "tools/destroy"), 404, -32601, "method")
    rpc_error(api.req("POST", RPC, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
              400, -32602, "params._meta")
    old = {"_meta": {**META["_meta"], "io.modelcontextprotocol/protocolVersion": "2025-06-18"}}
    err = rpc_error(api.req("POST", RPC, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": old}),
                    400, -32022)
    assert err["data"]["supported"] == ["2026-07-28"]
    rpc_error(rpc(api, "tools/call", {"name": "drop_tables", "arguments": {}}), 400, -32602, "name")
    rpc_error(rpc(api, "tools/call", {"name": "request_approval", "arguments": {}}), 400, -32602,
              "arguments.question")
    rpc_error(rpc(api, "tools/call", {"name": "request_approval", "arguments": {"question": "q", "sneaky": 1}}),
              400, -32602, "arguments.sneaky")
    rpc_error(rpc(api, "tools/call", {"name": "request_approval", "arguments": {
        "question": "q", "expires_in": 0}}), 400, -32602, "arguments.expires_in")
    rpc_error(rpc(api, "tools/call", {"name": "request_approval", "arguments": {
        "question": "q", "policy": {"subjects": []}}}), 400, -32602, "arguments.policy.subjects")
    # answered_by `user` needs the client's form elicitation; a schema MCP's form cannot carry is named.
    rpc_error(rpc(api, "tools/call", {"name": "request_approval", "arguments": {
        "question": "q", "answered_by": "user"}}), 400, -32021)
    eliciting = {"_meta": {**META["_meta"], "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}
    nested = {"type": "object", "properties": {"change": {"type": "object", "properties": {}}}}
    out = api.req("POST", RPC, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        **eliciting, "name": "request_approval",
        "arguments": {"question": "q", "answered_by": "user", "response_schema": nested}}}).json()["result"]
    assert out["isError"] and out["structuredContent"]["error"]["param"] == "response_schema.properties.change.type"
    forged = rpc(api, "tools/call", {"name": "request_approval", "arguments": {"question": "q"},
                                     "requestState": "eyJ0ZW5hbnQiOiJkZXYifQ.forged"})
    rpc_error(forged, 400, -32602, "requestState")
    rpc_error(rpc(api, "tasks/get", {"taskId": "ses_x~int_y"}), 400, -32602, "taskId")
    rpc_error(rpc(api, "tasks/get", {}), 400, -32602, "taskId")
    no_tasks = {"_meta": {**META["_meta"], "io.modelcontextprotocol/clientCapabilities": {}}}
    rpc_error(api.req("POST", RPC, {"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                                    "params": {**no_tasks, "taskId": "ses_x~int_y"}}), 400, -32021)
    mismatch = api.http.post(stack.base_url + RPC, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                                         "params": META},
                             headers={"Mcp-Method": "tools/call"}, timeout=30)
    rpc_error(mismatch, 400, -32020, "Mcp-Method")
    note = api.req("POST", RPC, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    assert note.status_code == 202
    assert table_count(stack) == before
    # Without credentials the endpoint stays closed (API Gateway's authorizer).
    assert requests.post(stack.base_url + RPC, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         timeout=30).status_code == 401
