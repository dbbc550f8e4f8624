"""Issue 19, class 6c: `env:` secret references are scoped to a tenant. The allow-list's entries
are `TENANT=PATTERN`, so with the local stack's `dev=HOLDPOINT_*WORKER_SECRET`, tenant `other`
cannot name the variable that holds `dev`'s worker secret and have Holdpoint sign requests that
`dev`'s worker trusts: 400 naming the field at declaration, and refused again when resolved."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws import secretrefs
from holdpoint.aws.errors import SecretRefError
from holdpoint.aws.store import Store
from tests.security.probes import refusal
from tests.stack import Api
from tests.waiting import wait_for

DEV_SECRET = "env:HOLDPOINT_E2E_WORKER_SECRET"
SCRIPTED = {"provider": "scripted", "script": [{"reply": {"content": "hi"}}]}


@pytest.mark.parametrize("allowlist", [
    "dev=HOLDPOINT_*WORKER_SECRET",
    "dev=HOLDPOINT_*WORKER_SECRET,other=OTHER_*",
    "HOLDPOINT_*WORKER_SECRET",  # no tenant: admits nothing
    "dev=HOLDPOINT_*,other=HOLDPOINT_E2E_*",  # two tenants' patterns match: the name is neither's
    "de=HOLDPOINT_*WORKER_SECRET,dev2=HOLDPOINT_*WORKER_SECRET",  # tenants whose ids look alike
])
def test_secret_scope_another_tenants_env_secret_is_refused(allowlist: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", allowlist)
    monkeypatch.setenv("HOLDPOINT_E2E_WORKER_SECRET", "dev-worker-key")
    for tenant in ("other", "dev2" if "dev2" not in allowlist else "de"):
        why = secretrefs.check(DEV_SECRET, tenant, "worker.secret")
        assert why is not None and why.startswith("worker.secret"), (tenant, why)
        with pytest.raises(SecretRefError, match="^worker.secret"):
            secretrefs.resolve(DEV_SECRET, tenant, "worker.secret")


def test_secret_scope_a_tenant_keeps_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "dev=HOLDPOINT_*WORKER_SECRET , other = OTHER_*")
    monkeypatch.setenv("HOLDPOINT_E2E_WORKER_SECRET", "dev-worker-key")
    assert secretrefs.resolve(DEV_SECRET, "dev", "worker.secret") == "dev-worker-key"
    assert secretrefs.check("env:OTHER_HOOK", "other", "notify[0].secret") is None
    assert secretrefs.check("env:OTHER_HOOK", "dev", "notify[0].secret") is not None
    assert secretrefs.check(DEV_SECRET, None, "worker.secret") is not None  # no tenant, no env secret


def test_secret_scope_declaring_another_tenants_env_secret_is_400(other_tenant: Api, stack: Any) -> None:
    url = "http://127.0.0.1:9/"
    probes = [({"llm": SCRIPTED, "worker": {"url": url, "secret": DEV_SECRET}}, "worker.secret"),
              ({"model": "m", "llm": {"provider": "openai", "base_url": url + "v1", "api_key": DEV_SECRET}},
               "llm.api_key"),
              ({"llm": SCRIPTED, "notify": [{"url": url, "secret": DEV_SECRET}]}, "notify[0].secret")]
    for body, field in probes:
        refusal(other_tenant.req("PUT", "/v1/agents/stolen", body), 400, code="validation_error", param=field)
    assert other_tenant.req("GET", "/v1/agents/stolen").status_code == 404


def test_secret_scope_a_stored_agent_naming_it_is_never_signed_for(
        other_tenant: Api, stack: Any, worker: tuple[str, list[dict[str, Any]]]) -> None:
    """An agent that got into the table for `other` naming `dev`'s secret (bypassing the API): the
    engine resolves nothing, sends nothing to the worker, and retries the decision as unavailable."""
    Store(stack.env["TABLE_NAME"]).put_agent("other", "assistant", {
        "llm": SCRIPTED, "worker": {"url": worker[0], "secret": DEV_SECRET}})
    sid = other_tenant.start("say hi")

    def retried() -> list[dict[str, Any]]:
        return [e for e in other_tenant.events(sid) if e["type"] == "decision.retry"]

    [first, *_] = wait_for(retried, "a decision.retry for the refused secret", 60)
    assert first["data"]["error"].startswith("worker.secret "), first
    assert [r for r in worker[1] if r.get("session_id") == sid] == []
