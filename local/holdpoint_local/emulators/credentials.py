"""Each function calls "AWS" with its own execution role, in one process.

On Lambda each function's SDK signs with its role's temporary credentials. Here every handler
shares the process's boto3 default session (and the container-wide clients `assembly` builds on
it), so the session's credentials are a `FunctionCredentials`: botocore asks it for frozen
credentials on every request it signs, and it answers with those of the function this thread is
running (`acting_as`, set by the runtime around each invocation and by each event source mapping
around its polling, which on AWS also uses the function's role), obtained by `sts:AssumeRole` of
the role the transform generated, as the Lambda service identity (moto/iam.py), and renewed before
they expire. Outside any function the thread is the operator (the `FAKE_ENV` keys). Inside a
function nothing falls back to the operator: a failed AssumeRole raises.

`CallLog` records (function, IAM service, operation, error code) of every call the default session
makes (the IAM tests read the denials), and the IAM actions each function's calls needed (the
least-privilege report, `holdpoint_local.least_privilege`, reads them from the `HOLDPOINT_IAM_CALL_LOG` file).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import boto3
from botocore.credentials import Credentials, ReadOnlyCredentials

from .. import FAKE_ENV, REGION
from ..moto.iam import LAMBDA_SERVICE_KEY, LAMBDA_SERVICE_SECRET

RENEW_BEFORE_SECONDS = 300
SESSION_SECONDS = 3600
CALL_LOG_ENV = "HOLDPOINT_IAM_CALL_LOG"
"""A file the calls are appended to as JSON lines (the pytest plugin sets it for the least-privilege report)."""

_THREAD = threading.local()
OPERATOR = ReadOnlyCredentials(FAKE_ENV["AWS_ACCESS_KEY_ID"], FAKE_ENV["AWS_SECRET_ACCESS_KEY"],
                               FAKE_ENV["AWS_SESSION_TOKEN"])


@dataclass(frozen=True)
class Acting:
    function: str
    role_arn: str


def current() -> Acting | None:
    """The function this thread is running, if any."""
    acting: Acting | None = getattr(_THREAD, "acting", None)
    return acting


@contextlib.contextmanager
def acting_as(function: str, role_arn: str) -> Iterator[None]:
    """Calls made on this thread inside the block sign with `role_arn`'s credentials."""
    saved = current()
    _THREAD.acting = Acting(function, role_arn)
    try:
        yield
    finally:
        _THREAD.acting = saved


class RoleSessions:
    """Temporary credentials per role, assumed as the Lambda service and renewed before expiry."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[ReadOnlyCredentials, float]] = {}
        self._sts = boto3.Session().client(
            "sts", endpoint_url=endpoint, region_name=REGION,
            aws_access_key_id=LAMBDA_SERVICE_KEY, aws_secret_access_key=LAMBDA_SERVICE_SECRET)

    def get(self, role_arn: str) -> ReadOnlyCredentials:
        with self._lock:
            cached = self._cache.get(role_arn)
            if cached is not None and cached[1] - time.time() > RENEW_BEFORE_SECONDS:
                return cached[0]
            out = self._sts.assume_role(RoleArn=role_arn, RoleSessionName=role_arn.rsplit("/", 1)[-1][:64],
                                        DurationSeconds=SESSION_SECONDS)["Credentials"]
            creds = ReadOnlyCredentials(out["AccessKeyId"], out["SecretAccessKey"], out["SessionToken"])
            expiry = out["Expiration"].replace(tzinfo=out["Expiration"].tzinfo or UTC).timestamp()
            self._cache[role_arn] = (creds, expiry)
            return creds


class FunctionCredentials(Credentials):  # type: ignore[misc]
    """The default session's credentials: the running function's role, else the operator."""

    def __init__(self, sessions: RoleSessions) -> None:
        self.sessions = sessions
        self.method = "holdpoint-local-function-role"

    def get_frozen_credentials(self) -> ReadOnlyCredentials:
        acting = current()
        return OPERATOR if acting is None else self.sessions.get(acting.role_arn)

    @property
    def access_key(self) -> str:
        return str(self.get_frozen_credentials().access_key)

    @property
    def secret_key(self) -> str:
        return str(self.get_frozen_credentials().secret_key)

    @property
    def token(self) -> str | None:
        token: str | None = self.get_frozen_credentials().token
        return token


_ITEM_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                 "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
_SQS_BATCH = {"DeleteMessageBatch": "DeleteMessage", "SendMessageBatch": "SendMessage",
              "ChangeMessageVisibilityBatch": "ChangeMessageVisibility"}

_BEDROCK = {"Converse": "InvokeModel", "ConverseStream": "InvokeModelWithResponseStream"}


def iam_actions(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    """The IAM actions AWS checks for one call (a transaction as its items' actions, an SQS batch
    as its single action; moto/iam.py checks the same)."""
    if service == "dynamodb" and operation in ("TransactWriteItems", "TransactGetItems"):
        kinds = {kind for entry in params.get("TransactItems") or [] for kind in entry}
        return sorted(f"dynamodb:{_ITEM_ACTIONS[k]}" for k in kinds if k in _ITEM_ACTIONS)
    if service == "sqs":
        operation = _SQS_BATCH.get(operation, operation)
    if service == "bedrock":
        operation = _BEDROCK.get(operation, operation)
    if service == "execute-api":  # PostToConnection, GetConnection, DeleteConnection
        return ["execute-api:ManageConnections"]
    return [f"{service}:{operation}"]


DENIED = {"execute-api": ("ForbiddenException",)}
"""The error code of an IAM refusal where it is not AccessDenied (the management API, wsgateway.py)."""


class CallLog:
    """Every call of the default session: (function or "", IAM service prefix, operation, error code or "")."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter[tuple[str, str, str, str]] = Counter()
        self.actions: dict[str, set[str]] = {}

    def parameters(self, model: Any = None, params: Any = None, context: Any = None, **_: Any) -> None:
        """Work out a call's IAM actions from its API parameters (before they are serialised)."""
        if model is not None and isinstance(context, dict) and current() is not None:
            context["holdpoint_actions"] = iam_actions(model.service_model.signing_name, model.name, params or {})

    def before(self, request_signer: Any = None, context: Any = None, **_: Any) -> None:
        """Keep the actions only of a call signed with the function's role (logged once it succeeds)."""
        if isinstance(context, dict) and not isinstance(getattr(request_signer, "_credentials", None),
                                                        FunctionCredentials):
            context.pop("holdpoint_actions", None)  # a client with its own keys (the operator's, pollers.py)

    def _log_actions(self, function: str, actions: list[str]) -> None:
        with self._lock:
            known = self.actions.setdefault(function, set())
            new = [a for a in actions if a not in known]
            known.update(new)
            path = os.environ.get(CALL_LOG_ENV)
            if path and new:
                with open(path, "a", encoding="utf-8") as out:
                    out.writelines(json.dumps({"function": function, "action": a}) + "\n" for a in new)

    def record(self, model: Any = None, parsed: Any = None, http_response: Any = None, context: Any = None,
               **_: Any) -> None:
        if model is None:
            return
        acting = current()
        error = (parsed or {}).get("Error", {}).get("Code", "") if isinstance(parsed, dict) else ""
        if getattr(http_response, "status_code", 0) == 403 and b"<Code>AccessDenied</Code>" in (
                getattr(http_response, "content", b"") or b""):
            error = "AccessDenied"  # moto answers IAM's XML error in every protocol (local/README.md)
        key = (acting.function if acting else "", model.service_model.signing_name, model.name, str(error))
        with self._lock:
            self.calls[key] += 1
        actions = (context or {}).get("holdpoint_actions") if isinstance(context, dict) else None
        if acting is not None and actions and getattr(http_response, "status_code", 500) < 300:
            self._log_actions(acting.function, actions)

    def denied(self, function: str | None = None) -> list[tuple[str, str, str]]:
        """The (function, service, operation) calls that IAM refused."""
        with self._lock:
            keys = list(self.calls)
        return [k[:3] for k in keys if k[3] in DENIED.get(k[1], ("AccessDenied", "AccessDeniedException"))
                and (function is None or k[0] == function)]


class PerFunctionCache(dict[Any, Any]):
    """A process-wide cache of values read from AWS, kept per function: on Lambda each function's
    containers have their own, so a function never uses a secret only another function's role
    could read (holdpoint.aws.secretrefs caches secrets once per container)."""

    @staticmethod
    def _key(key: Any) -> tuple[str, Any]:
        acting = current()
        return (acting.function if acting else "", key)

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key))

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self._key(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(self._key(key), value)

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(self._key(key), default)

    def pop(self, key: Any, *default: Any) -> Any:
        return super().pop(self._key(key), *default)


CALLS = CallLog()
_INSTALLED: dict[str, RoleSessions] = {}


def install(endpoint: str) -> None:
    """Make the process's default boto3 session sign with the running function's role."""
    sessions = _INSTALLED.get(endpoint) or RoleSessions(endpoint)
    _INSTALLED[endpoint] = sessions
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    core = boto3.DEFAULT_SESSION._session
    core._credentials = FunctionCredentials(sessions)  # noqa: SLF001 - botocore reads it on every client
    from holdpoint.aws import secretrefs

    if not isinstance(secretrefs._CACHE, PerFunctionCache):
        secretrefs._CACHE = PerFunctionCache()  # noqa: SLF001
    if not getattr(core, "__holdpoint_calls__", False):
        core.register("before-parameter-build", CALLS.parameters)
        core.register("before-call", CALLS.before)
        core.register("after-call", CALLS.record)
        core.__holdpoint_calls__ = True
