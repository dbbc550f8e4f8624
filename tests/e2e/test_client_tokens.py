"""`POST /v1/client-tokens` over HTTP: a backend's machine or operator key mints a short-lived
token for an end user; the token reaches only that user's sessions (and only the bound one)."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.keys import put_api_key
from tests.security.probes import refusal, table_count
from tests.stack import Api


@pytest.fixture
def backend(stack: Any) -> Api:
    put_api_key(stack.env["TABLE_NAME"], "hp_backend_machine_key", stack.tenant, "backend", "machine")
    return Api(stack.base_url, "hp_backend_machine_key")


def mint(backend: Api, body: dict[str, Any]) -> Any:
    return backend.req("POST", "/v1/client-tokens", body)


def test_a_machine_key_mints_tokens_that_reach_only_their_users_sessions(api: Api, stack: Any,
                                                                         backend: Api) -> None:
    out = mint(backend, {"identity": {"id": "alice", "metadata": {"plan": "pro"}}, "ttl_seconds": 600})
    assert out.status_code == 200, out.text
    assert set(out.json()) == {"token", "expires_at"} and out.json()["expires_at"].endswith("Z")
    alice = Api(stack.base_url, out.json()["token"])
    sid = alice.start("say hi")
    assert alice.wait_status(sid, "done")["session_id"] == sid
    bob = Api(stack.base_url, mint(backend, {"identity": {"id": "bob"}}).json()["token"])
    refusal(bob.req("GET", f"/v1/sessions/{sid}"), 404)
    bound = mint(backend, {"identity": {"id": "alice"}, "session_id": sid}).json()["token"]
    assert Api(stack.base_url, bound).ok("GET", f"/v1/sessions/{sid}")["session_id"] == sid


def test_only_machine_and_operator_keys_mint_and_bad_input_names_the_field(api: Api, stack: Any,
                                                                          backend: Api) -> None:
    before = table_count(stack)
    refusal(api.req("POST", "/v1/client-tokens", {"identity": {"id": "x"}}), 403, code="forbidden")  # a client key
    token = mint(backend, {"identity": {"id": "alice"}}).json()["token"]
    refusal(Api(stack.base_url, token).req("POST", "/v1/client-tokens", {"identity": {"id": "alice"}}), 403,
            code="forbidden")
    refusal(mint(backend, {"identity": {"id": "alice"}, "ttl_seconds": 10}), 400, param="ttl_seconds")
    refusal(mint(backend, {"identity": {"id": "alice"}, "ttl_seconds": 10**6}), 400, param="ttl_seconds")
    refusal(mint(backend, {"identity": {}}), 400, param="identity.id")
    refusal(mint(backend, {"identity": {"id": "a", "metadata": {f"k{i}": "v" for i in range(17)}}}), 400,
            param="identity.metadata")
    refusal(mint(backend, {"identity": {"id": "a"}, "session_id": "ses_nobody"}), 404, param="session_id")
    assert table_count(stack) == before
