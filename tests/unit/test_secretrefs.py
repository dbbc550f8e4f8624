"""Finding 3 (platform secrets): which `env:` and `secretsmanager:` references a tenant may use,
checked by `holdpoint.secretrefs` when resolved, and by the engine and the LLM call paths."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from holdpoint import llm
from holdpoint.aws import secretrefs
from holdpoint.aws.errors import SecretRefError
from holdpoint_local.stack import SECRET_ENV_ALLOWLIST
from tests.harness import Harness

ACCOUNT, REGION = "123456789012", "us-east-1"
JWT_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:JwtSecret-AbCdEf"


@pytest.fixture(autouse=True)
def deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ACCOUNT_ID", ACCOUNT)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.delenv("HOLDPOINT_TENANT_SECRET_PREFIX", raising=False)
    monkeypatch.delenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", raising=False)
    monkeypatch.setattr(secretrefs, "_CACHE", {})


@pytest.mark.parametrize("ref", ["env:AWS_SECRET_ACCESS_KEY", "env:AWS_SESSION_TOKEN", "env:HOME",
                                 "env:JWT_SECRET_ARN", "env:HOLDPOINT_E2E_WORKER_SECRET"])
def test_platform_secrets_env_refs_refused_with_the_cloud_default_empty_allowlist(ref: str) -> None:
    why = secretrefs.check(ref, "acme", "worker.secret")
    assert why is not None and why.startswith("worker.secret"), why


@pytest.mark.parametrize("ref", ["env:AWS_SECRET_ACCESS_KEY", "env:AWS_ACCESS_KEY_ID", "env:HOME", "env:PATH",
                                 "env:JWT_SECRET_ARN", "env:TABLE_NAME"])
def test_platform_secrets_local_allowlist_never_admits_platform_variables(
        ref: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", SECRET_ENV_ALLOWLIST)
    assert secretrefs.check(ref, "acme", "llm.api_key") is not None


@pytest.mark.parametrize("name", ["HOLDPOINT_DEMO_WORKER_SECRET", "HOLDPOINT_E2E_WORKER_SECRET",
                                  "HOLDPOINT_WORKER_SECRET", "HOLDPOINT_NODE_WORKER_SECRET"])
def test_platform_secrets_local_allowlist_admits_the_demo_and_test_secrets(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", SECRET_ENV_ALLOWLIST)
    assert secretrefs.check(f"env:{name}", "dev", "worker.secret") is None  # the local stack's tenant
    assert secretrefs.check(f"env:{name}", "acme", "worker.secret") is not None  # and no other


def test_platform_secrets_aws_variables_refused_even_by_a_catch_all_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "acme=*")
    assert secretrefs.check("env:AWS_SECRET_ACCESS_KEY", "acme", "worker.secret") is not None
    assert secretrefs.check("env:MY_HOOK_SECRET", "acme", "worker.secret") is None
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", " acme=HOOK_* , acme = OTHER")
    assert secretrefs.check("env:HOOK_A", "acme", "worker.secret") is None
    assert secretrefs.check("env:OTHER", "acme", "worker.secret") is None
    assert secretrefs.check("env:hook_a", "acme", "worker.secret") is not None  # case-sensitive
    assert secretrefs.check("env:", "acme", "worker.secret") is not None


@pytest.mark.parametrize("ref", [
    f"secretsmanager:{JWT_ARN}",
    "secretsmanager:JwtSecret-AbCdEf",
    "secretsmanager:holdpoint/jwt",
    "secretsmanager:holdpoint/tenants/other/hmac",  # another tenant's
    "secretsmanager:holdpoint/tenants/acme-evil/hmac",  # a tenant whose id starts with ours
    "secretsmanager:holdpoint/tenants/acme",  # the prefix itself, no secret under it
    "secretsmanager:holdpoint/tenants/acme/",
    f"secretsmanager:arn:aws:secretsmanager:{REGION}:999999999999:secret:holdpoint/tenants/acme/hmac",
    f"secretsmanager:arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:holdpoint/tenants/acme/hmac",
    "secretsmanager:holdpoint/tenants/acme/a b",
    "secretsmanager:",
])
def test_platform_secrets_secretsmanager_refs_outside_the_tenant_prefix_are_refused(ref: str) -> None:
    why = secretrefs.check(ref, "acme", "worker.secret")
    assert why is not None and why.startswith("worker.secret"), why


@pytest.mark.parametrize("ref", [
    "secretsmanager:holdpoint/tenants/acme/hmac",
    "secretsmanager:holdpoint/tenants/acme/team/llm-key",
    f"secretsmanager:arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:holdpoint/tenants/acme/hmac-AbCdEf",
])
def test_platform_secrets_secretsmanager_refs_under_the_tenant_prefix_pass(ref: str) -> None:
    assert secretrefs.check(ref, "acme", "worker.secret") is None
    assert secretrefs.check(ref, "other", "worker.secret") is not None


def test_platform_secrets_prefix_comes_from_the_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_TENANT_SECRET_PREFIX", "prod/hp/")
    assert secretrefs.check("secretsmanager:prod/hp/acme/hmac", "acme", "worker.secret") is None
    assert secretrefs.check("secretsmanager:holdpoint/tenants/acme/hmac", "acme", "worker.secret") is not None


@pytest.mark.parametrize("tenant", [None, "", "acme/evil", "../x"])
def test_platform_secrets_no_usable_tenant_no_secretsmanager(tenant: Any) -> None:
    assert secretrefs.check("secretsmanager:holdpoint/tenants/acme/hmac", tenant, "worker.secret") is not None


@pytest.mark.parametrize("ref", ["s3cret", "sk-live-123", "ENV:HOME", 42, None])
def test_platform_secrets_literal_secrets_are_refused(ref: Any) -> None:
    why = secretrefs.check(ref, "acme", "llm.api_key")
    assert why is not None and "never the secret itself" in why


class Recorder:
    """A stand-in Secrets Manager client that records reads."""

    def __init__(self, value: str = "v") -> None:
        self.reads: list[str] = []
        self.value = value

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # noqa: N803
        self.reads.append(SecretId)
        return {"SecretString": self.value}


def test_platform_secrets_resolve_checks_before_reading_and_per_tenant_despite_the_cache(
        monkeypatch: pytest.MonkeyPatch) -> None:
    client = Recorder("hmac-key")
    monkeypatch.setattr(boto3, "client", lambda *a, **k: client)
    with pytest.raises(SecretRefError):
        secretrefs.resolve(f"secretsmanager:{JWT_ARN}", "acme", "worker.secret")
    assert client.reads == []
    ref = "secretsmanager:holdpoint/tenants/acme/hmac"
    assert secretrefs.resolve(ref, "acme", "worker.secret") == "hmac-key"
    assert secretrefs.resolve(ref, "acme", "worker.secret") == "hmac-key"
    assert client.reads == ["holdpoint/tenants/acme/hmac"]  # one read per container
    with pytest.raises(SecretRefError):  # cached, but not another tenant's to use
        secretrefs.resolve(ref, "other", "worker.secret")
    assert secretrefs.resolve(None, "acme", "worker.secret") is None


def test_platform_secrets_resolve_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", "acme=HOOK_*")
    monkeypatch.setenv("HOOK_SECRET", "abc")
    assert secretrefs.resolve("env:HOOK_SECRET", "acme", "worker.secret") == "abc"
    with pytest.raises(SecretRefError, match="not set"):
        secretrefs.resolve("env:HOOK_MISSING", "acme", "worker.secret")
    with pytest.raises(SecretRefError, match="worker.secret"):
        secretrefs.resolve("env:AWS_SECRET_ACCESS_KEY", "acme", "worker.secret")


@pytest.mark.usefixtures("aws")
@pytest.mark.parametrize("ref", ["env:AWS_SECRET_ACCESS_KEY", "env:HOME", f"secretsmanager:{JWT_ARN}"])
def test_platform_secrets_engine_never_signs_with_a_platform_secret(ref: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored agent naming a platform secret: the decision is retried as worker unavailable and
    no request is sent (the worker URL's port has no listener; no `worker unreachable` either)."""
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    monkeypatch.setenv("HOLDPOINT_SECRET_ENV_ALLOWLIST", SECRET_ENV_ALLOWLIST)
    h = Harness(agent={"worker": {"url": "http://127.0.0.1:9/", "secret": ref}})
    h.say("say hi")
    retries = h.events("decision.retry")
    assert retries and retries[0]["data"]["error"].startswith("worker.secret "), h.events()


def test_platform_secrets_llm_api_key_is_checked_when_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    agent = {"model": "m", "llm": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1",
                                   "api_key": "env:AWS_SECRET_ACCESS_KEY"}}
    with pytest.raises(llm.LlmError) as info:
        llm.complete(agent, {}, [{"role": "user", "content": "hi"}], "c1", tenant="acme")
    assert info.value.code == "config_error" and str(info.value).startswith("llm.api_key ")
