"""Fixes 29-30 to moto 5.2.5's Lambda.

Fix 29: the durable execution callbacks. moto has no durable functions,
so `SendDurableExecutionCallbackSuccess`, `...Failure` and `...Heartbeat` fell through to a 404 with
no error type. They are now routed as Lambda routes them (`POST /2025-12-01/durable-execution-
callbacks/{CallbackId}/succeed|fail|heartbeat`), authorised as their IAM actions, and answered by
the durable execution emulator that runs the executions: AWS's own
(`aws-durable-execution-sdk-python-testing`, its web server), whose URL is set with
`POST /moto-api/config {"lambda": {"durable_execution_endpoint": URL}}` (server.set_durable_endpoint).
Its errors come back as Lambda's, their type in `x-amzn-ErrorType`. With no emulator set, no
callback exists: `ResourceNotFoundException`.

Fix 30: an `Invoke` runs the function where the local stack runs Lambda functions. moto runs a
function in a container of its own images, which only a registry has, so an invoke of a customer's
function (a worker Lambda, a run's `lambda` target) could not run here. With
`POST /moto-api/config {"lambda": {"invoke_endpoint": URL}}` (server.set_invoke_endpoint) moto hands
the invoke, its invocation type included, to that Lambda Invoke API: SAM CLI's `sam local
start-lambda`, running the function's `sam build` artifact in its Lambda container; an `Event`
invoke is answered 202 and run after, as Lambda's asynchronous invoke is. Unset, moto invokes as
it did."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

ENDPOINT_KEY = "durable_execution_endpoint"
INVOKE_KEY = "invoke_endpoint"
PATH = (r"{0}/(?P<api_version>[^/]+)/durable-execution-callbacks/(?P<callback_id>[^/]+)"
        r"/(?P<outcome>succeed|fail|heartbeat)$")
TIMEOUT_SECS = 30.0


def _endpoint(key: str = ENDPOINT_KEY) -> str | None:
    from moto.core.config import default_user_config

    found = (default_user_config.get("lambda") or {}).get(key)
    return str(found) if found else None


def _error(status: int, kind: str, message: str) -> tuple[str, dict[str, Any]]:
    return json.dumps({"Type": kind, "Message": message}), {"status": status, "x-amzn-ErrorType": kind,
                                                           "Content-Type": "application/json"}


def _forwarded(path: str, body: bytes, content_type: str) -> tuple[str, dict[str, Any]]:
    """The emulator's answer to the same request; an error's type named as Lambda names it."""
    endpoint = _endpoint()
    if endpoint is None:
        return _error(404, "ResourceNotFoundException", "no durable execution has this callback "
                      "(no durable execution emulator is set for this moto server)")
    request = urllib.request.Request(f"{endpoint.rstrip('/')}{path}", data=body, method="POST",
                                     headers={"Content-Type": content_type or "application/octet-stream"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECS) as answer:  # noqa: S310 - a local URL
            return answer.read().decode(), {"status": answer.status, "Content-Type": "application/json"}
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        try:
            found = json.loads(text)
        except ValueError:
            found = {}
        kind = str(found.get("Type") or ("ResourceNotFoundException" if exc.code == 404 else "ServiceException"))
        return _error(exc.code, kind, str(found.get("Message") or found.get("message") or text)[:1024])


def _handler(self: Any) -> tuple[str, dict[str, Any]]:
    body = self.body if isinstance(self.body, bytes) else str(self.body or "").encode()
    return _forwarded(self.path.split("?")[0], body, self.headers.get("Content-Type", ""))


def _invoked(endpoint: str, function: str, body: bytes, headers: Any) -> tuple[int, dict[str, str], bytes]:
    """The Lambda endpoint's answer to the same invoke, by the function's name."""
    name = function.split(":function:", 1)[-1].split(":", 1)[0]  # an ARN's name, its qualifier dropped
    passed = {k: v for k in ("X-Amz-Invocation-Type", "X-Amz-Log-Type", "X-Amz-Client-Context")
              if (v := headers.get(k))}
    request = urllib.request.Request(f"{endpoint.rstrip('/')}/2015-03-31/functions/{name}/invocations", data=body,
                                     method="POST", headers={"Content-Type": "application/json", **passed})
    try:
        with urllib.request.urlopen(request, timeout=900) as answer:  # noqa: S310 - a local URL
            out = {k: v for k, v in answer.headers.items() if k.lower().startswith("x-amz")}
            return answer.status, {**out, "status": str(answer.status)}, answer.read()
    except urllib.error.HTTPError as exc:
        found = exc.read()
        return exc.code, {"status": str(exc.code), "x-amzn-ErrorType": exc.headers.get("x-amzn-ErrorType", "")}, found


def _invoke_where_functions_run() -> None:
    from urllib.parse import unquote

    from moto.awslambda.responses import LambdaResponse

    original = LambdaResponse.invoke

    def invoke(self: Any) -> Any:
        endpoint = _endpoint(INVOKE_KEY)
        if endpoint is None:
            return original(self)
        body = self.body if isinstance(self.body, bytes) else str(self.body or "{}").encode()
        return _invoked(endpoint, unquote(self.path.rsplit("/", 2)[-2]), body, self.headers)

    LambdaResponse.invoke = invoke  # type: ignore[method-assign]


def apply() -> None:
    """Install fixes 29-30 (`holdpoint_local.moto.apply` calls this once, before the server routes)."""
    from moto.awslambda import urls
    from moto.awslambda.responses import LambdaResponse

    _invoke_where_functions_run()

    urls.url_paths[PATH] = LambdaResponse.dispatch
    for outcome in ("success", "failure", "heartbeat"):
        setattr(LambdaResponse, f"send_durable_execution_callback_{outcome}", _handler)
