"""Provider failures as `LlmError`: `retryable` for throttling, 5xx, timeouts and connection
failures (worth another attempt), final for what the provider refused (validation, auth, unknown
model). The engine's LLM retry policy acts on `retryable`; no SDK retries underneath."""

from __future__ import annotations

import json
import urllib.error

from holdpoint.aws.errors import SdkFailure
from holdpoint.ports import LlmError

# Converse error codes worth another attempt; everything else (ValidationException,
# AccessDeniedException, ResourceNotFoundException, ModelErrorException, ...) is final.
_BEDROCK_RETRYABLE = {
    "ThrottlingException": "throttled",
    "TooManyRequestsException": "throttled",
    "ServiceQuotaExceededException": "throttled",
    "ServiceUnavailableException": "provider_unavailable",
    "InternalServerException": "provider_unavailable",
    "ModelNotReadyException": "provider_unavailable",
    "ModelTimeoutException": "timeout",
    "ModelStreamErrorException": "provider_unavailable",
}


def _by_status(message: str, status: int) -> LlmError:
    """An HTTP status the provider answered, by what it means for another attempt."""
    if status == 429:
        return LlmError(message, "throttled", retryable=True)
    if status >= 500 or status == 408:
        return LlmError(message, "provider_unavailable", retryable=True)
    if status in (401, 403):
        return LlmError(message, "auth_error")
    if status == 404:
        return LlmError(message, "model_not_found")
    return LlmError(message, "invalid_request")


def from_bedrock(exc: SdkFailure) -> LlmError:
    """A failed `bedrock-runtime` call (`clients.sdk_failures`)."""
    if exc.kind == "answered":
        code = exc.code[:1].upper() + exc.code[1:]  # ConverseStream names its in-stream errors camelCase
        message = f"bedrock {code}: {exc.message}"
        if code in _BEDROCK_RETRYABLE:
            return LlmError(message, _BEDROCK_RETRYABLE[code], retryable=True)
        if exc.status == 429 or exc.status >= 500:
            return _by_status(message, exc.status)
        if code == "AccessDeniedException":
            return LlmError(message, "auth_error")
        if code == "ResourceNotFoundException":
            return LlmError(message, "model_not_found")
        # Converse's own timeout is ModelTimeoutException (above); a bare 408 is a refused request.
        return _by_status(message, 0 if exc.status == 408 else exc.status)
    if exc.kind == "timeout":
        return LlmError(f"bedrock timed out: {exc}", "timeout", retryable=True)
    if exc.kind == "no_credentials":
        return LlmError(f"bedrock: {exc}", "auth_error")
    if exc.kind == "unreachable":
        return LlmError(f"bedrock unreachable: {exc}", "provider_unavailable", retryable=True)
    return LlmError(f"bedrock: {exc}", "provider_error")


def from_http(exc: urllib.error.HTTPError) -> LlmError:
    """An HTTP error status from a chat-completions endpoint, with the reason its body gives."""
    try:
        detail = json.loads(exc.read() or b"{}")
        err = detail.get("error") if isinstance(detail, dict) else None
        why = err.get("message") if isinstance(err, dict) else (err if isinstance(err, str) else None)
    except (ValueError, OSError):
        why = None
    return _by_status(f"llm endpoint answered HTTP {exc.code}" + (f": {why}" if why else ""), exc.code)


def from_network(exc: OSError) -> LlmError:
    """The endpoint could not be reached or did not answer in time: worth another attempt."""
    reason = getattr(exc, "reason", exc)
    code = "timeout" if isinstance(reason, TimeoutError) or "timed out" in str(reason) else "provider_unavailable"
    return LlmError(f"llm endpoint unreachable: {reason}", code, retryable=True)
