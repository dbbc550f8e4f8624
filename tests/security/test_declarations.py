"""A hostile tenant declaring agents over HTTP on the local stack: every probe of the three findings
(code execution, internal addresses, platform secrets) gets 400 naming the field, and nothing is
recorded. Then an agent stored behind the API's back, naming a Python callable, runs nothing."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from holdpoint.aws.store import Store
from tests.stack import SCRIPT, Api
from tests.unit.test_netguard import METADATA_FORMS
from tests.waiting import wait_for

SCRIPTED = {"provider": "scripted", "script": SCRIPT}
TOOLS = [{"name": "send_email", "input": {"type": "object", "required": ["to"]}}]


def refusals(api: Api, probes: list[tuple[dict[str, Any], str]]) -> list[str]:
    """PUT each probe as agent `x`; what went wrong (not 400, wrong param, or recorded)."""
    wrong = []
    for body, param in probes:
        resp = api.req("PUT", "/v1/agents/x", body)
        is_json = resp.headers.get("Content-Type", "").startswith("application/json")
        error = (resp.json().get("error") or {}) if is_json else {}
        if resp.status_code != 400 or error.get("param") != param:
            wrong.append(f"{body}: {resp.status_code} {resp.text[:200]}")
        recorded = api.req("GET", "/v1/agents/x")
        if recorded.status_code != 404:
            wrong.append(f"{body}: recorded ({recorded.status_code} {recorded.text[:200]})")
    return wrong


def test_code_execution_worker_python_is_refused_at_declaration(api: Api) -> None:
    probes = [({"llm": SCRIPTED, "worker": {"python": name}}, "worker.python")
              for name in ("json:dumps", "os:system", "builtins:print", "assistant")]
    assert refusals(api, probes) == []


def test_code_execution_lambda_of_another_account_region_or_off_the_allowlist_is_refused(api: Api, stack: Any) -> None:
    account = stack.env["HOLDPOINT_ACCOUNT_ID"]
    arns = ["arn:aws:lambda:us-east-1:999999999999:function:their-worker",
            f"arn:aws:lambda:eu-west-1:{account}:function:w",
            f"arn:aws:lambda:us-east-1:{account}:function:holdpoint-EngineFunction",  # allow-list is empty
            "their-worker"]
    assert refusals(api, [({"worker": {"lambda_arn": arn}}, "worker.lambda_arn") for arn in arns]) == []


@pytest.mark.parametrize("field", ["worker.url", "llm.base_url"])
def test_internal_addresses_metadata_and_mapped_forms_are_refused_at_declaration(api: Api, field: str) -> None:
    def body(url: str) -> dict[str, Any]:
        if field == "worker.url":
            return {"llm": SCRIPTED, "worker": {"url": url}}
        return {"model": "m", "llm": {"provider": "openai", "base_url": url}}

    urls = [f"{scheme}://{host}/latest/meta-data" for host in METADATA_FORMS for scheme in ("http", "https")]
    urls += ["file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "ftp://example.com/",
             "http://user:pass@127.0.0.1:9/", "http://127.0.0.1:9@169.254.169.254/", "http://0.0.0.0:9/",
             "http://[::]:9/", "http://224.0.0.1/", "http://255.255.255.255/"]
    assert refusals(api, [(body(url), field) for url in urls]) == []


def test_internal_addresses_llm_base_url_file_and_metadata(api: Api) -> None:
    probes = [({"model": "m", "llm": {"provider": "openai", "base_url": url}}, "llm.base_url")
              for url in ("file:///etc/passwd", "http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/v1")]
    assert refusals(api, probes) == []


def test_platform_secrets_are_refused_at_declaration(api: Api, stack: Any) -> None:
    refs = [f"secretsmanager:{stack.env['JWT_SECRET_ARN']}", "env:AWS_SECRET_ACCESS_KEY", "env:HOME",
            "env:AWS_SESSION_TOKEN", "secretsmanager:holdpoint/tenants/other/hmac", "plain-text-secret"]
    worker = {"url": "http://127.0.0.1:9/"}
    probes = [({"llm": SCRIPTED, "worker": {**worker, "secret": ref}}, "worker.secret") for ref in refs]
    probes += [({"model": "m", "llm": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": ref}},
                "llm.api_key") for ref in refs]
    assert refusals(api, probes) == []


def test_platform_secrets_the_tenants_own_references_are_accepted(api: Api, stack: Any) -> None:
    own = f"secretsmanager:holdpoint/tenants/{stack.tenant}/worker-hmac"
    for secret in (own, "env:HOLDPOINT_E2E_WORKER_SECRET"):
        resp = api.req("PUT", "/v1/agents/y", {"llm": SCRIPTED, "worker": {"url": "http://127.0.0.1:9/",
                                                                            "secret": secret}})
        assert resp.status_code == 200, resp.text


def test_code_execution_stored_python_worker_runs_nothing(api: Api, stack: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that got into the table naming `builtins:print` (bypassing the API): the engine, which
    runs in this process on the local stack, never calls it; the decision retries as unavailable."""
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(builtins, "print", lambda *args, **kwargs: calls.append(args))
    Store(stack.env["TABLE_NAME"]).put_agent(stack.tenant, "x", {"llm": SCRIPTED, "tools": TOOLS,
                                                                 "worker": {"python": "builtins:print"}})
    sid = api.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "x",
                                           "message": {"role": "user", "content": "say hi"}})["session_id"]
    retries = wait_for(lambda: [e for e in api.events(sid) if e["type"] in ("decision.retry", "decision.failed")],
                       "the decision to retry or fail")
    assert "no in-process worker is registered" in str(retries[0]["data"]), retries
    assert calls == []
