"""Request limits shared by the API and resume handlers, checked before anything parses a body."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from holdpoint.core.errors import JsonProblem, Refusal
from holdpoint.core.strictjson import loads

MAX_BODY_BYTES = 1_048_576
MAX_JSON_DEPTH = 64  # deeper than any protocol shape needs; Python's parser overflows near 10,000
MAX_PAYLOAD_BYTES = 131_072  # interrupt and resume payloads, as stored on the interrupt item

# Strings (possessive, so linear; an unterminated one runs to the end) or a bracket.
_TOKENS = re.compile(rb'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]')


def json_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest; brackets inside strings do not count."""
    depth = deepest = 0
    for match in _TOKENS.finditer(raw):
        char = match.group()
        if char in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif char in (b"]", b"}"):
            depth -= 1
    return deepest


def body_bytes(event: dict[str, Any]) -> bytes:
    """The body as sent, decoded from base64 when API Gateway encoded it, measured in bytes,
    and refused when too large (413) or too deeply nested (400)."""
    body = event.get("body") or ""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)
    if event.get("isBase64Encoded") and raw:
        if len(raw) > MAX_BODY_BYTES * 4 // 3 + 4:
            raise Refusal("payload_too_large", f"body is over {MAX_BODY_BYTES} bytes (the limit of one request); "
                          "send less, or large content by reference")
        try:
            raw = base64.b64decode(raw, validate=True)
            raw.decode("utf-8")
        except (binascii.Error, ValueError):
            raise Refusal("validation_error", "body is not valid base64-encoded UTF-8", "body") from None
    if len(raw) > MAX_BODY_BYTES:
        raise Refusal("payload_too_large", f"body is over {MAX_BODY_BYTES} bytes (the limit of one request); "
                      "send less, or large content by reference")
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise Refusal("validation_error", f"body is nested deeper than {MAX_JSON_DEPTH} levels", "body")
    return raw


def strict_body(raw: bytes) -> Any:
    """The body parsed as strict JSON (holdpoint.strictjson); a refusal names where the problem is."""
    try:
        return loads(raw)
    except JsonProblem as exc:
        if not exc.param:
            raise Refusal("validation_error", "body is not valid JSON", "body") from None
        raise Refusal("validation_error", exc.message, exc.param[:100]) from None


def object_body(event: dict[str, Any]) -> dict[str, Any]:
    """A body that must be a JSON object (an empty one included: `{}`, never nothing)."""
    raw = body_bytes(event)
    if not raw.strip():
        raise Refusal("validation_error", "a JSON object body is required", "body")
    body = strict_body(raw)
    if not isinstance(body, dict):
        raise Refusal("validation_error", "body must be a JSON object", "body")
    return body
