"""Worker transports: HTTPS (HMAC-signed), Lambda ARN, in-process callable, or none.

An agent with no worker accepts the engine's own proposals, so it still runs.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import ipaddress
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import ClientError

from holdpoint.ports import WorkerUnavailable

SIGNATURE_HEADER = "X-Holdpoint-Signature"
TIMESTAMP_HEADER = "X-Holdpoint-Timestamp"

_REGISTRY: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_SECRETS: dict[str, str] = {}


def register(name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Make an in-process worker reachable as `{"worker": {"python": name}}` (tests, local)."""
    _REGISTRY[name] = fn


def sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, max_skew: float = 300.0) -> bool:
    """What a worker does with our headers: constant-time compare, bounded clock skew."""
    try:
        if abs(time.time() - float(timestamp)) > max_skew:
            return False
    except ValueError:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def resolve_secret(ref: str | None) -> str | None:
    """Secrets come from the environment (`env:NAME`) or Secrets Manager (`secretsmanager:ARN`)."""
    if not ref:
        return None
    if ref.startswith("env:"):
        value = os.environ.get(ref[4:])
    elif ref.startswith("secretsmanager:"):
        if ref not in _SECRETS:  # one Secrets Manager read per container
            arn = ref[len("secretsmanager:"):]
            _SECRETS[ref] = boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
        value = _SECRETS[ref]
    else:
        raise WorkerUnavailable("worker.secret must be `env:NAME` or `secretsmanager:ARN`")
    if value is None:
        raise WorkerUnavailable(f"worker secret {ref} is not set")
    return value


def check_url(url: str) -> str | None:
    """Why a worker URL is refused, or None. https only in the cloud; never link-local/metadata."""
    parsed = urllib.parse.urlparse(url)
    local_ok = os.environ.get("HOLDPOINT_ALLOW_HTTP_WORKERS") == "1"
    if parsed.scheme != "https" and not (local_ok and parsed.scheme == "http"):
        return "worker.url must be https"
    host = parsed.hostname
    if not host:
        return "worker.url has no host"
    try:
        infos = socket.getaddrinfo(host, parsed.port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return None if not local_ok else "worker.url host does not resolve"
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if ip.is_link_local or str(ip) in ("169.254.169.254", "fd00:ec2::254"):
            return "worker.url points at a link-local or metadata address"
        if not local_ok and (ip.is_loopback or ip.is_private or ip.is_reserved or ip.is_multicast):
            return "worker.url points at a private address"
    return None


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        out = json.loads(raw or b"{}")
    except ValueError as exc:
        raise WorkerUnavailable(f"worker answered invalid JSON: {exc}") from exc
    if not isinstance(out, dict):
        raise WorkerUnavailable("worker answered JSON that is not an object")
    return out


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would send the signed decision to a URL `check_url` never saw: refuse it."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def call_https(config: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    url = config["url"]
    problem = check_url(url)
    if problem:
        raise WorkerUnavailable(problem)
    body = json.dumps(request, separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "holdpoint"}
    secret = resolve_secret(config.get("secret"))
    if secret:
        ts = str(int(time.time()))
        headers[TIMESTAMP_HEADER] = ts
        headers[SIGNATURE_HEADER] = sign(secret, ts, body)
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(req, timeout=float(config.get("timeout_secs") or 30)) as resp:
            return _parse(resp.read())
    except urllib.error.HTTPError as exc:
        raise WorkerUnavailable(f"worker answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise WorkerUnavailable(f"worker unreachable: {exc}") from exc


def lambda_client() -> Any:
    return boto3.client("lambda")


def call_lambda(config: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """Invoke the worker Lambda synchronously; a function error or throttle retries the decision."""
    try:
        out = lambda_client().invoke(FunctionName=config["lambda_arn"], InvocationType="RequestResponse",
                                     Payload=json.dumps(request).encode())
    except ClientError as exc:
        raise WorkerUnavailable(f"worker lambda unavailable: {exc.response['Error']['Code']}") from exc
    if out.get("FunctionError"):
        raise WorkerUnavailable(f"worker lambda failed: {out['FunctionError']}")
    return _parse(out["Payload"].read())


def call_python(config: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    name = config["python"]
    fn = _REGISTRY.get(name)
    if fn is None:
        module, _, attr = name.partition(":")
        fn = getattr(importlib.import_module(module), attr)
    out = fn(request)
    if not isinstance(out, dict):
        raise WorkerUnavailable("worker answered something that is not an object")
    return json.loads(json.dumps(out))


def decide(agent: dict[str, Any] | None, request: dict[str, Any], tenant: str = "") -> dict[str, Any]:
    """Ask the agent's worker; with no worker the engine's proposal is the answer."""
    config = (agent or {}).get("worker") or {}
    if config.get("url"):
        return call_https(config, request)
    if config.get("lambda_arn"):
        return call_lambda(config, request)
    if config.get("python"):
        return call_python(config, request)
    return request["proposed"]
