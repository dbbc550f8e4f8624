"""Worker transports: HTTPS (HMAC-signed), Lambda ARN, in-process callable, or none.

An agent with no worker accepts the engine's own proposals, so it still runs. Every transport
re-checks its target at call time (the agent in force may come from a worker's answer, not only
from the API): URLs through `netguard`, Lambda ARNs against the deployment's allow-list, secrets
through `secretrefs`, and in-process workers only from the registry filled in code.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from holdpoint import tracing
from holdpoint.aws import clients, secretrefs
from holdpoint.aws import errors as aws_errors
from holdpoint.core import signatures, strictjson
from holdpoint.core.agent_config import AgentConfig, WorkerConfig, config_of
from holdpoint.core.errors import JsonProblem
from holdpoint.outbound import netguard, queues
from holdpoint.outbound.allowlists import allowed, here
from holdpoint.outbound.errors import AddressRefused, QueueRefused
from holdpoint.ports import WorkerDeferred, WorkerUnavailable

LAMBDA_ALLOWLIST = "WORKER_LAMBDA_ALLOWLIST"

_REGISTRY: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_LAMBDA_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:([a-z0-9-]+):([0-9]{12}):function:"
                         r"[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$")


def register(name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Make an in-process worker reachable as `{"worker": {"python": name}}`. Only code registers:
    the API refuses `worker.python`, so a tenant can never name a Python callable of its choice."""
    _REGISTRY[name] = fn


def check_lambda_arn(arn: object, field: str = "worker.lambda_arn") -> str | None:
    """Why a Lambda may not be invoked (a worker, a run's target), or None: a full function ARN of
    this deployment's account and region, matching a pattern of `WORKER_LAMBDA_ALLOWLIST` (empty
    allows none)."""
    if not isinstance(arn, str):
        return f"{field} must be a Lambda function ARN"
    match = _LAMBDA_ARN.match(arn)
    if not match:
        return f"{field} must be a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME)"
    region, account = match.group(1), match.group(2)
    if account != os.environ.get("HOLDPOINT_ACCOUNT_ID") or region != here():
        return f"{field} must be a function of this deployment's account and region"
    if not allowed(arn, LAMBDA_ALLOWLIST):
        return f"{field} is not allowed by {LAMBDA_ALLOWLIST}"
    return None


def _parse(raw: bytes) -> dict[str, Any] | None:
    """An object, or `null` (a worker echoing a `null` proposal: the engine continues on its own),
    as strict JSON: NaN, duplicate keys or lone surrogates would be stored and then served to
    clients that cannot parse them, so they make the answer unusable."""
    try:
        out = strictjson.loads(raw or b"{}")
    except JsonProblem as exc:
        raise WorkerUnavailable(f"worker answered invalid JSON: {exc}") from exc
    if out is not None and not isinstance(out, dict):
        raise WorkerUnavailable("worker answered JSON that is not an object")
    return out


def _secret(ref: str | None, tenant: str | None, field: str = "worker.secret") -> str | None:
    try:
        with clients.sdk_failures():
            return secretrefs.resolve(ref, tenant, field)
    except aws_errors.SecretRefError as exc:
        raise WorkerUnavailable(str(exc)) from exc
    except (aws_errors.Refused, aws_errors.ThrottledCall, aws_errors.UnavailableCall, aws_errors.Unreachable,
            aws_errors.SdkFailure) as exc:
        raise WorkerUnavailable(f"{field} could not be read: {exc}") from exc


def signed(secret: str | None, body: bytes) -> dict[str, str]:
    """The signature headers (or SQS message attributes) for `body`, none without a secret (§2.7)."""
    if not secret:
        return {}
    stamp = str(int(time.time()))
    return {signatures.TIMESTAMP_HEADER: stamp, signatures.SIGNATURE_HEADER: signatures.sign(secret, stamp, body)}


def traced() -> dict[str, str]:
    """W3C `traceparent` for the hop in progress: a worker's own tracing joins the session's trace."""
    parent = tracing.traceparent()
    return {"traceparent": parent} if parent else {}


def post_signed(url: str, payload: Any, secret_ref: str | None, tenant: str | None, field: str,
                timeout: float, headers: dict[str, str] | None = None, *, deferrable: bool = False) -> bytes:
    """POST `payload` as JSON, signed when `secret_ref` is set (PROTOCOL.md §2.7), through
    `netguard.urlopen` (the URL and the connected address checked), with the trace's `traceparent`;
    the answer's body. Every
    failure (refused, unreachable, non-2xx) is `WorkerUnavailable`. `field` names the declaration
    (`worker`, `notify[0]`) in errors. `deferrable`: a 202 is `WorkerDeferred` (a decision the
    worker answers later, PROTOCOL.md §2.9)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    sent = {"Content-Type": "application/json", "User-Agent": "holdpoint", **traced(), **(headers or {})}
    sent.update(signed(_secret(secret_ref, tenant, f"{field}.secret"), body))
    req = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with netguard.urlopen(req, f"{field}.url", timeout) as resp:
            if deferrable and resp.status == 202:  # taken: the answer comes through POST /v1/workers/submit
                raise WorkerDeferred(f"{field} answered 202: it answers later")
            answer: bytes = resp.read()
            return answer
    except AddressRefused as exc:
        raise WorkerUnavailable(str(exc)) from exc
    except urllib.error.HTTPError as exc:
        said = " (it refused the request's signature or credentials: is the secret the same on both sides?)" \
            if exc.code in (401, 403) else ""
        raise WorkerUnavailable(f"{field.split('[')[0]} answered HTTP {exc.code}{said}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise WorkerUnavailable(f"{field.split('[')[0]} unreachable: {exc}") from exc
    except ValueError as exc:  # http.client refuses the URL or a header (InvalidURL, UnicodeEncodeError)
        raise WorkerUnavailable(f"{field.split('[')[0]} could not be sent: {type(exc).__name__}") from exc


def call_https(config: WorkerConfig, request: dict[str, Any], tenant: str | None = None) -> dict[str, Any] | None:
    """POST the decision, signed; `netguard.urlopen` checks the URL and the connected address. A
    202 answer defers the decision (`WorkerDeferred`): the worker submits its answer later."""
    return _parse(post_signed(str(config.url), request, config.secret, tenant, "worker",
                              config.timeout_secs, deferrable=True))


def lambda_client() -> Any:
    """A worker Lambda's client: no botocore retries (holdpoint.aws.clients, POLICIES["lambda"])."""
    return clients.sdk("lambda")


def call_lambda(config: WorkerConfig, request: dict[str, Any]) -> dict[str, Any] | None:
    """Invoke the worker Lambda synchronously; a function error, a refusal, a throttle or no answer
    retries the decision (durably, core/retry.py; the worker deduplicates on the decision id)."""
    problem = check_lambda_arn(str(config.lambda_arn))
    if problem:
        raise WorkerUnavailable(problem)
    try:
        with clients.sdk_failures():
            out = lambda_client().invoke(FunctionName=config.lambda_arn, InvocationType="RequestResponse",
                                         Payload=json.dumps(request).encode())
    except aws_errors.SdkFailure as exc:
        raise WorkerUnavailable(f"worker lambda unavailable: {exc.code or exc.kind}") from exc
    if out.get("FunctionError"):
        raise WorkerUnavailable(f"worker lambda failed: {out['FunctionError']}")
    return _parse(out["Payload"].read())


def call_queue(config: WorkerConfig, request: dict[str, Any], tenant: str | None = None) -> dict[str, Any] | None:
    """Send the decision to the worker's SQS queue (a FIFO queue: one group per session, so its
    decisions stay in order; a redelivery, `attempts` higher, is a new message), signed as an HTTP
    request is when the worker has a secret. The worker answers through `POST /v1/workers/submit`,
    so the decision is deferred (§2.9): its deadline and retries are those of a 202."""
    body = json.dumps(request, separators=(",", ":")).encode()
    attributes = signed(_secret(config.secret, tenant, "worker.secret"), body)
    try:
        queues.send(str(config.queue), "worker.queue", request, group=f"{tenant}.{request.get('session_id')}",
                    dedup=f"{request.get('decision_id')}.{request.get('attempts')}", attributes=attributes)
    except QueueRefused as exc:
        raise WorkerUnavailable(str(exc)) from exc
    raise WorkerDeferred("sent to worker.queue: the worker answers later")


def call_python(config: WorkerConfig, request: dict[str, Any]) -> dict[str, Any] | None:
    """Run a worker registered in code; any other name is unavailable (nothing is ever imported)."""
    name = config.python
    fn = _REGISTRY.get(name) if name is not None else None
    if fn is None:
        raise WorkerUnavailable(f"no in-process worker is registered as {str(name)[:64]!r}")
    out = fn(request)
    if out is not None and not isinstance(out, dict):
        raise WorkerUnavailable("worker answered something that is not an object")
    try:
        copied: dict[str, Any] | None = strictjson.loads(strictjson.dumps(out))
    except ValueError as exc:  # NaN or infinity: not JSON
        raise WorkerUnavailable(f"worker answered invalid JSON: {exc}") from exc
    return copied


def decide(agent: AgentConfig | None, request: dict[str, Any], tenant: str | None = None) -> dict[str, Any] | None:
    """Ask the agent's worker; with no worker the engine's proposal is the answer. `tenant` (the
    session's) scopes the worker's secret reference."""
    config = config_of(agent).worker or WorkerConfig()
    if config.url:
        return call_https(config, request, tenant)
    if config.lambda_arn:
        return call_lambda(config, request)
    if config.queue:
        return call_queue(config, request, tenant)
    if config.python:
        return call_python(config, request)
    proposed: dict[str, Any] | None = request["proposed"]
    return proposed
