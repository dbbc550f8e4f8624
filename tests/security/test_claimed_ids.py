"""Issue 29: ids a caller can claim before their owner, a requester approving itself, policies
frozen at the first request, and principals that share one name. Each attack that got through is
replayed here over HTTP on the local stack (MCP, AG-UI, A2A, `Idempotency-Key`, one-click links)
and must now be refused, recording nothing; the class hunt's attacks follow."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from holdpoint.aws.keys import put_api_key
from holdpoint.bridges.mcp import service as mcp_service
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.claims import RESERVED, reuse_refusal
from holdpoint.core.errors import Refusal
from holdpoint.core.inputs import start_session
from holdpoint.core.state import Header, SessionState, derive
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.streams import holder
from holdpoint_local.memory.store import MemoryStore
from tests.e2e.test_notify_e2e import Receiver
from tests.security.probes import client_token_api, refusal, table_count
from tests.security.test_mcp import rpc, settled, tool
from tests.stack import Api, declare_agent
from tests.waiting import wait_for

RUN = "/v1/channels/ag-ui/agents/assistant/run"


def pre_create(api: Api, thread_id: str) -> requests.Response:
    """An AG-UI run that would create the session `thread_id` names (the id the caller chooses)."""
    return api.req("POST", RUN, {"threadId": thread_id, "runId": "r-squat",
                                 "messages": [{"id": "u-squat", "role": "user", "content": "hi"}]})


def test_ids_a_user_cannot_pre_create_a_keys_mcp_approvals_session(stack: Any, api: Api) -> None:
    """Attack 1a/1b: eve creates, as an AG-UI thread, the approvals session Holdpoint derives for
    an API key (client-origin or operator), to answer or read its approvals. The id has the shape
    of Holdpoint's own ids, which a caller may not choose: 400 naming `threadId`, nothing recorded."""
    eve = client_token_api(stack, "eve")
    put_api_key(stack.env["TABLE_NAME"], "hp_claims_client_key", stack.tenant, "svc", "client")
    client_key = Api(stack.base_url, "hp_claims_client_key")
    for target in (Caller(stack.tenant, "svc", "client"), Caller(stack.tenant, stack.subject, stack.origin)):
        derived = mcp_service.session_id_of(target, "assistant")
        before = table_count(stack)
        refusal(pre_create(eve, derived), 400, code="validation_error", param="threadId")
        assert table_count(stack) == before
    task = tool(client_key, "request_approval", {"question": "Rotate the key?"})
    settled(client_key, task["taskId"])
    sid = task["taskId"].split("~")[0]
    refusal(eve.req("GET", f"/v1/sessions/{sid}"), 404)
    refusal(eve.resume(sid, task["taskId"].split("~")[1], {"approved": True}), 404)
    assert rpc(client_key, "tasks/get", {"taskId": task["taskId"]}).json()["result"]["status"] == "working"
    mine = tool(api, "list_pending_approvals", {})["structuredContent"]["approvals"]
    assert all(a["id"].split("~")[0] == mcp_service.session_id_of(
        Caller(stack.tenant, stack.subject, stack.origin), "assistant") for a in mine)


def test_ids_a_user_cannot_deny_another_users_mcp_approvals(stack: Any, api: Api) -> None:
    """Attack 1c: eve pre-creates bob's derived approvals session so his `request_approval`
    answers not_found forever. Refused; bob's request works."""
    eve, bob = client_token_api(stack, "eve"), client_token_api(stack, "bob")
    derived = mcp_service.session_id_of(Caller(stack.tenant, "bob", "client", own_only=True), "assistant")
    refusal(pre_create(eve, derived), 400, param="threadId")
    task = tool(bob, "request_approval", {"question": "Refund order 9?"})
    assert task["resultType"] == "task" and task["taskId"].startswith(derived)


def test_ids_a_user_cannot_pre_create_another_users_idempotent_session(stack: Any, api: Api) -> None:
    """Attack 1d: eve creates the session bob's guessable `Idempotency-Key` derives, so his
    `POST /v1/sessions` answers 202 naming her session and drops his message. Refused; his
    request makes his own session with his message."""
    eve, bob = client_token_api(stack, "eve"), client_token_api(stack, "bob")
    derived = derive("ses", stack.tenant, "user:bob", "order-42")
    refusal(pre_create(eve, derived), 400, param="threadId")
    body = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": "say hi"}}
    resp = requests.post(f"{stack.base_url}/v1/sessions", json=body, timeout=30,
                         headers={**dict(bob.http.headers), "Idempotency-Key": "order-42"})
    assert resp.status_code == 202 and resp.json()["session_id"] == derived
    view = bob.wait_status(derived, "done")
    assert [m["content"] for m in view["messages"] if m["role"] == "user"] == ["say hi"]
    refusal(eve.req("GET", f"/v1/sessions/{derived}"), 404)


def test_ids_an_idempotency_key_resent_with_another_body_is_409_and_records_nothing(stack: Any, api: Api) -> None:
    """Item 5: the same key with a different body is the caller's mistake, not a retry: 409
    naming `Idempotency-Key` (as Stripe's API), nothing recorded; the same body is still a retry."""
    def post(content: str, path: str = "/v1/sessions") -> requests.Response:
        body = {"type": "client.message", "agent_id": "assistant", "message": {"role": "user", "content": content}}
        return requests.post(f"{stack.base_url}{path}", json=body, timeout=30,
                             headers={**dict(api.http.headers), "Idempotency-Key": "k-body"})

    first = post("say hi")
    assert first.status_code == 202
    sid = first.json()["session_id"]
    api.wait_status(sid, "done")
    before = table_count(stack)
    refusal(post("say something else"), 409, code="conflict", param="Idempotency-Key")
    assert table_count(stack) == before
    again = post("say hi")
    assert again.status_code == 202 and again.json() == first.json()
    inputs = f"/v1/sessions/{sid}/inputs"
    assert post("say hi", inputs).status_code == 202
    api.wait_status(sid, "done")
    before = table_count(stack)
    refusal(post("say bye", inputs), 409, code="conflict", param="Idempotency-Key")
    assert table_count(stack) == before


def test_ids_an_mcp_requester_cannot_approve_its_own_request(stack: Any, api: Api,
                                                             worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Attack 2: with `{groups:[board], forbid_requester:true}`, `bot` (in board) requested approval
    and then approved it itself: approvals sessions have no turns, so no requester was recorded.
    The requester is now always the raising principal."""
    declare_agent(api, worker[0], approval={"groups": ["board"], "forbid_requester": True})
    put_api_key(stack.env["TABLE_NAME"], "hp_claims_bot", stack.tenant, "bot", "operator", groups=["board"])
    put_api_key(stack.env["TABLE_NAME"], "hp_claims_ann", stack.tenant, "ann", "operator", groups=["board"])
    bot, ann = Api(stack.base_url, "hp_claims_bot"), Api(stack.base_url, "hp_claims_ann")
    task = tool(bot, "request_approval", {"question": "Wire 10k?"})
    settled(bot, task["taskId"])
    sid, iid = task["taskId"].split("~")
    assert api.view(sid)["interrupts"][0]["requester"] == "key:bot"
    before = table_count(stack)
    own = tool(bot, "answer_approval", {"id": task["taskId"], "payload": {"approved": True}})
    assert own["isError"] and own["structuredContent"]["error"]["code"] == "not_an_approver", own
    assert table_count(stack) == before
    assert not tool(ann, "answer_approval", {"id": task["taskId"], "payload": {"approved": True}})["isError"]
    assert iid


def test_ids_a_redeclared_agents_policy_applies_to_the_next_mcp_raise(stack: Any, api: Api,
                                                                      worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Attack 3: the approvals session froze the agent's config at the caller's first request, so
    a policy declared later never applied to that caller and it approved itself. Each raise now
    takes the agent as declared at that moment (its policy and its notify)."""
    first = tool(api, "request_approval", {"question": "First?"})
    settled(api, first["taskId"])
    declare_agent(api, worker[0], approval={"subjects": ["ops"]})
    second = tool(api, "request_approval", {"question": "Second?"})
    sid = second["taskId"].split("~")[0]
    [policy] = [i["policy"] for i in api.view(sid)["interrupts"] if i["payload"]["message"] == "Second?"]
    assert policy == {"subjects": ["ops"]}
    own = tool(api, "answer_approval", {"id": second["taskId"], "payload": {"approved": True}})
    assert own["isError"] and own["structuredContent"]["error"]["code"] == "not_an_approver", own


def test_ids_a_link_minted_for_an_end_user_acts_as_that_end_user(stack: Any, api: Api,
                                                                 worker: tuple[str, list[dict[str, Any]]]) -> None:
    """Attack 4a: a link minted for ann's own session resumed as the key-namespace `ann`, so the
    policy's bare `ann` (the operator key) admitted it. A link now acts as exactly the principal
    it was minted for: the end user `ann`, refused like her own resume."""
    receiver = Receiver(os.environ["HOLDPOINT_E2E_WORKER_SECRET"])
    try:
        entry = {"url": receiver.url, "secret": "env:HOLDPOINT_E2E_WORKER_SECRET", "events": ["interrupt.raised"]}
        declare_agent(api, worker[0], approval={"subjects": ["ann"]}, notify=[entry])
        ann = client_token_api(stack, "ann")
        sid = ann.start()
        iid = ann.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"]
        refusal(ann.resume(sid, iid, {"approved": True}), 403, code="not_an_approver")
        [hook] = wait_for(lambda: receiver.of("interrupt.raised") or None, "the raised webhook", 60)
        link = hook["body"]["links"]["approve"]
        before = table_count(stack)
        resp = requests.post(link, data={"confirm": "approve"}, headers={"Accept": "application/json"}, timeout=30)
        refusal(resp, 403, code="not_an_approver")
        assert table_count(stack) == before and ann.view(sid)["status"] == "interrupted"
    finally:
        receiver.server.shutdown()


def test_ids_one_principal_one_count_for_waits_and_connections() -> None:
    """Attack 4b: long-poll waits and WebSocket connections were counted per `origin:subject`, so
    an end user named `svcw` used up the key `svcw`'s slots. They count per principal now."""
    user, key = Caller("dev", "svcw", "client", own_only=True), Caller("dev", "svcw", "client")
    assert holder(user) == "user:svcw" and holder(key) == "key:svcw"
    assert holder(Caller("dev", "svcw", "client", own_only=True, session_id="s1")) == holder(user)


def test_ids_an_a2a_card_ignores_the_host_and_proto_a_caller_sends(stack: Any, api: Api) -> None:
    """Item 6: an agent card names where the API is from configuration, never from `Host` or
    `X-Forwarded-Proto` (a public card could otherwise send its readers to another host)."""
    declare_agent(api, "http://127.0.0.1:9/", a2a={"public": True})
    url = f"{stack.base_url}/a2a/{stack.tenant}/assistant/.well-known/agent-card.json"
    plain = requests.get(url, timeout=30).json()
    forged = requests.get(url, headers={"Host": "evil.example", "X-Forwarded-Proto": "gopher"}, timeout=30)
    assert forged.status_code == 200 and json.dumps(forged.json()) == json.dumps(plain)
    assert "evil.example" not in forged.text and "gopher" not in forged.text


def test_ids_class_hunt_caller_chosen_turn_and_interrupt_ids_never_take_derived_shapes(stack: Any, api: Api) -> None:
    """Item 7: where else a caller-chosen name meets a derived one. A `turn_id` (or AG-UI `runId`,
    A2A `messageId`) shaped like Holdpoint's derived turn ids would take another principal's keyed
    input first (his resend then finds her turn); an `interrupt_id` shaped like an API raise's
    derived one would swallow it (R1: an open id is a no-op). Both are refused naming the field."""
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    victim_turn = derive("turn", stack.tenant, "key:ops", sid, "k-1")
    assert RESERVED.fullmatch(victim_turn)
    before = table_count(stack)
    body = {"type": "client.message", "turn_id": victim_turn, "message": {"role": "user", "content": "x"}}
    refusal(api.req("POST", f"/v1/sessions/{sid}/inputs", body), 400, param="turn_id")
    run = {"threadId": sid, "runId": victim_turn, "messages": [{"id": "m-hunt", "role": "user", "content": "x"}]}
    refusal(api.req("POST", RUN, run), 400, param="runId")
    raised = {"reason": "hold", "interrupt_id": derive("int", stack.tenant, sid, "api:req-1")}
    refusal(api.req("POST", f"/v1/sessions/{sid}/interrupts", raised), 400, param="interrupt_id")
    assert table_count(stack) == before


def test_ids_the_reuse_rule_checks_owner_agent_kind_and_parent() -> None:
    """The one rule (`core.claims.reuse_refusal`) every reusing path asks."""
    header = Header(tenant="t", session_id="s", agent_id="a", identity={"id": "ann"}, end_user="ann")
    assert reuse_refusal(header, agent_id="a", kind="conversation", principal="user:ann") is None
    assert reuse_refusal(header, agent_id="a", kind="conversation", principal="key:ann")
    assert reuse_refusal(header, agent_id="b", kind="conversation")
    assert reuse_refusal(header, agent_id="a", kind="approvals")
    assert reuse_refusal(header, agent_id="a", kind="conversation", parent={"session_id": "p", "call_id": "c"})


def test_ids_an_a2a_card_with_no_public_url_names_api_gateways_domain(monkeypatch: Any) -> None:
    """With `PublicApiUrl` empty (a deploy without a custom domain), the card names the domain
    API Gateway received the request on (`requestContext.domainName`), still never a header."""
    from holdpoint.bridges.a2a.routes import PUBLIC_URL_ENV, base_url

    monkeypatch.setenv(PUBLIC_URL_ENV, "")
    event = {"headers": {"host": "evil.example", "x-forwarded-proto": "http"},
             "requestContext": {"domainName": "abc123.execute-api.us-east-1.amazonaws.com"}}
    assert base_url(event) == "https://abc123.execute-api.us-east-1.amazonaws.com"
    monkeypatch.setenv(PUBLIC_URL_ENV, "https://agents.example.com/")
    assert base_url(event) == "https://agents.example.com"


NAMES = st.sampled_from(["ann", "bob"])
KINDS = st.sampled_from(["conversation", "approvals"])


@settings(max_examples=200, deadline=None)
@given(owner=NAMES, owner_is_user=st.booleans(), agent=st.sampled_from(["a", "b"]), kind=KINDS,
       caller=NAMES, caller_is_user=st.booleans(), want_agent=st.sampled_from(["a", "b"]), want_kind=KINDS,
       chosen=st.booleans())
def test_ids_claim_reuses_only_the_callers_own_session_of_that_agent_and_kind(
        owner: str, owner_is_user: bool, agent: str, kind: str, caller: str, caller_is_user: bool,
        want_agent: str, want_kind: str, chosen: bool) -> None:
    """`sessions.claim`, the one function every create-or-reuse path calls (MCP approvals,
    `Idempotency-Key`, AG-UI threads, A2A contexts): it hands back an existing session only when
    the caller may reach it, it runs the agent and kind asked for, and, for a derived id, it is
    the caller's own principal's; a new id of Holdpoint's shape is never the caller's to choose."""
    store = MemoryStore()
    sid = derive("ses", "t", owner)
    state = SessionState.new("t", sid, agent, now=0.0, identity={"id": owner},
                             end_user=owner if owner_is_user else None, kind=kind)  # type: ignore[arg-type]
    start_session(state, AgentConfig())
    store.commit(state)
    who = Caller("t", caller, "operator", own_only=caller_is_user)
    reach = not caller_is_user or (owner_is_user and owner == caller)
    mine = (caller_is_user, caller) == (owner_is_user, owner)
    expected = reach and agent == want_agent and kind == want_kind and (chosen or mine)
    try:
        found = sessions.claim(store, who, sid, agent_id=want_agent, kind=want_kind,  # type: ignore[arg-type]
                               chosen=chosen)
    except Refusal as exc:
        assert not expected and exc.code in ("not_found", "conflict")
        assert exc.code == "not_found" or (reach and not chosen)  # never says another's exists
    else:
        assert expected and found is not None and found.header.session_id == sid
    with pytest.raises(Refusal) as err:
        sessions.claim(store, who, derive("ses", "t", "new", owner), agent_id="a", kind="conversation", chosen=True)
    assert err.value.code == "validation_error"
    assert sessions.claim(store, who, derive("ses", "t", "new", owner), agent_id="a", kind="conversation",
                          chosen=False) is None
