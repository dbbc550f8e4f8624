"""Auth and isolation: API keys (hashed, revocable), client JWTs, worker signatures and URLs."""

from __future__ import annotations

import time

import boto3
import jwt
import pytest

from holdpoint.aws import secretrefs, signing
from holdpoint.aws.keys import put_api_key, revoke_api_key
from holdpoint.aws.signing import platform_secret
from holdpoint.aws.store import Store
from holdpoint.core import signatures
from holdpoint.core.credentials import hash_key
from holdpoint.core.errors import Refusal
from holdpoint.http.credentials import authenticate, caller_of, context_of
from holdpoint.outbound import netguard
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from holdpoint.services.inbox import inbox
from holdpoint.services.resume import resume
from holdpoint.services.tokens import mint_client_token
from tests.harness import Harness

pytestmark = pytest.mark.usefixtures("aws")
SECRET = "test-jwt-secret-0123456789abcdef"


@pytest.fixture
def jwt_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    arn = boto3.client("secretsmanager").create_secret(Name="holdpoint/jwt", SecretString=SECRET)["ARN"]
    monkeypatch.setenv("JWT_SECRET_ARN", arn)
    secretrefs._CACHE.clear()
    return SECRET


def test_api_keys_are_stored_hashed_and_can_be_revoked() -> None:
    store = Store()
    put_api_key("holdpoint", "hp_secret_key", "acme", "ops", "operator")
    items = boto3.client("dynamodb").scan(TableName="holdpoint")["Items"]
    assert not any("hp_secret_key" in str(item) for item in items)
    assert any(hash_key("hp_secret_key") in str(item) for item in items)
    assert authenticate("Bearer hp_secret_key", store, platform_secret) == Caller("acme", "ops", "operator")
    assert revoke_api_key("holdpoint", "hp_secret_key")
    assert authenticate("Bearer hp_secret_key", store, platform_secret) is None
    assert authenticate("Bearer nope", store, platform_secret) is None
    assert authenticate(None, store, platform_secret) is None


def test_client_jwt_checks_signature_expiry_and_audience(jwt_secret: str) -> None:
    store = Store()
    good = mint_client_token(jwt_secret, "acme", "user-1")
    caller = authenticate(f"Bearer {good}", store, platform_secret)
    assert caller is not None and caller.subject == "user-1" and caller.own_only and caller.origin == "client"
    expired = jwt.encode({"tenant": "acme", "sub": "u", "aud": "holdpoint", "exp": int(time.time()) - 5},
                         jwt_secret, algorithm="HS256")
    wrong_aud = jwt.encode({"tenant": "acme", "sub": "u", "aud": "other", "exp": int(time.time()) + 60},
                           jwt_secret, algorithm="HS256")
    forged = mint_client_token("another-secret-0123456789abcdef-x", "acme", "user-1")
    none_alg = jwt.encode({"tenant": "acme", "sub": "u", "aud": "holdpoint", "exp": int(time.time()) + 60},
                          None, algorithm="none")
    for token in (expired, wrong_aud, forged, none_alg, good[:-4] + "AAAA"):
        assert authenticate(f"Bearer {token}", store, platform_secret) is None


def test_client_token_touches_only_its_own_sessions(jwt_secret: str) -> None:
    h = Harness(tenant="acme")
    h.caller = Caller("acme", "user-1", "client", own_only=True)
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    other = Caller("acme", "user-2", "client", own_only=True)
    with pytest.raises(Refusal) as refused:
        sessions.view(h.store, other, h.session_id or "")
    assert refused.value.code == "not_found"
    with pytest.raises(Refusal) as refused_resume:
        resume(h.store, h.parking, other, h.session_id or "", iid, {"approved": True})
    assert refused_resume.value.code == "not_found"
    assert inbox(h.store, signing, other, 10, None)["interrupts"] == []
    assert [i["interrupt_id"] for i in inbox(h.store, signing, h.caller, 10, None)["interrupts"]] == [iid]
    assert h.resume(iid, {"approved": True}).noop is False


def test_worker_signature_verifies_and_fails_on_a_tampered_body() -> None:
    """The signature Holdpoint sends is the one the SDK's worker checks (core/signatures.py, both sides)."""
    from holdpoint_sdk.worker import Worker, WorkerRefused

    body = b'{"trigger":{"type":"session.start"}}'
    ts = str(int(time.time()))
    signature = signatures.sign("s3cret", ts, body)
    assert signatures.verify("s3cret", ts, body, signature, time.time())
    headers = {signatures.TIMESTAMP_HEADER: ts, signatures.SIGNATURE_HEADER: signature}
    worker = Worker(lambda request: None, "s3cret")
    with pytest.raises(WorkerRefused) as refused:
        worker.request(body, headers)
    assert refused.value.status == 400  # signed right, then refused for its shape: not a whole request
    tampered = body.replace(b"start", b"stop!")
    assert not signatures.verify("s3cret", ts, tampered, signature, time.time())
    with pytest.raises(WorkerRefused) as unsigned:
        worker.request(tampered, headers)
    assert unsigned.value.status == 401
    old = str(int(time.time()) - 3600)
    assert not signatures.verify("s3cret", old, body, signatures.sign("s3cret", old, body), time.time())


@pytest.mark.parametrize("url", ["https://169.254.169.254/latest/meta-data", "http://169.254.169.254/",
                                 "https://[fe80::1]/", "ftp://example.com/", "https:///nohost"])
def test_worker_urls_to_link_local_or_metadata_addresses_are_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOLDPOINT_ALLOW_HTTP_WORKERS", "1")
    assert netguard.check_url(url, "worker.url") is not None
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS")
    assert netguard.check_url(url, "worker.url") is not None


def test_cloud_mode_refuses_plain_http_and_private_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOLDPOINT_ALLOW_HTTP_WORKERS", raising=False)
    assert netguard.check_url("http://example.com/", "worker.url") == "worker.url must be https"
    assert netguard.check_url("https://127.0.0.1/", "worker.url") is not None
    assert netguard.check_url("https://10.0.0.5/", "worker.url") is not None


def test_client_token_metadata_reaches_the_session_identity(jwt_secret: str) -> None:
    token = mint_client_token(jwt_secret, "acme", "alice", metadata={"plan": "pro", "team": "ops"})
    caller = authenticate(f"Bearer {token}", Store(), platform_secret)
    assert caller is not None
    assert caller_of(context_of(caller)) == caller  # through the authorizer's flat context
    assert caller.identity() == {"id": "alice", "metadata": {"plan": "pro", "team": "ops", "origin": "client"}}
