"""Check an approval receipt offline before running the action it approves (PROTOCOL.md, "Approval receipts").

`verify_receipt(receipt, action, jwks)` refuses (`ReceiptRefused`) unless the receipt is an
ES256 JWS that a key of `jwks` (the deployment's `GET /.well-known/jwks.json`, fetched once and
kept) signed, its verdict is the one required (`approved` unless told), and its action is the one
about to run: the same tool, and a digest of the same arguments. The signature is checked with the
`cryptography` package (the SDK's `receipts` extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from holdpoint.core import receipts
from holdpoint.core.jsontypes import JsonObject, JsonValue

__all__ = ["ReceiptRefused", "verify_receipt"]


class ReceiptRefused(ValueError):
    """The receipt does not prove that this action was approved: the reason says why."""


def verify_receipt(receipt: str, action: Mapping[str, Any] | None, jwks: Mapping[str, Any] | Sequence[Any], *,
                   verdict: str | None = "approved") -> JsonObject:
    """The receipt's claims once every check passed; `ReceiptRefused` otherwise.

    `action` is what is about to run: `{"tool": NAME, "arguments": ARGS}` (ARGS a JSON value, or
    the JSON text a tool call carries), or None for the answer to a plain question (a receipt that
    names an action is then refused). `verdict=None` accepts any verdict (an audit's check)."""
    try:
        parsed = receipts.parse(receipt)
    except receipts.ReceiptError as problem:
        raise ReceiptRefused(str(problem)) from None
    _check_signature(parsed, _key(parsed.header.get("kid"), jwks))
    claims = parsed.claims
    if verdict is not None and claims.get("verdict") != verdict:
        raise ReceiptRefused(f"the receipt's verdict is {claims.get('verdict')!r}, not {verdict!r}")
    _check_action(claims.get("action"), action)
    return claims


def _key(kid: JsonValue, jwks: Mapping[str, Any] | Sequence[Any]) -> Mapping[str, Any]:
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else jwks
    for key in keys if isinstance(keys, Sequence) and not isinstance(keys, str) else ():
        if isinstance(key, Mapping) and key.get("kid") == kid:
            if key.get("kty") != "EC" or key.get("crv") != "P-256":
                raise ReceiptRefused(f"key {kid!r} is not an EC P-256 key")
            return key
    raise ReceiptRefused(f"no key {kid!r} in the key set: not signed by this deployment")


def _check_signature(parsed: receipts.Parsed, key: Mapping[str, Any]) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    try:
        x, y = (int.from_bytes(receipts.b64url_decode(key.get(c)), "big") for c in ("x", "y"))  # type: ignore[arg-type]
        public = ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
    except (receipts.ReceiptError, ValueError):
        raise ReceiptRefused("the key set's key is not a P-256 public key") from None
    half = receipts.COORDINATE
    r, s = int.from_bytes(parsed.signature[:half], "big"), int.from_bytes(parsed.signature[half:], "big")
    try:
        public.verify(encode_dss_signature(r, s), parsed.signing_input, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise ReceiptRefused("the signature does not match: altered, or signed by another key") from None


def _check_action(named: JsonValue, action: Mapping[str, Any] | None) -> None:
    if action is None:
        if named is not None:
            raise ReceiptRefused("the receipt approves an action, and none was given to check it against")
        return
    if not isinstance(named, dict):
        raise ReceiptRefused("the receipt approves no action (it answers a question)")
    if named.get("tool") != action.get("tool"):
        raise ReceiptRefused(f"the receipt approves tool {named.get('tool')!r}, not {action.get('tool')!r}")
    if named.get("arguments_sha256") != receipts.arguments_digest(action.get("arguments")):
        raise ReceiptRefused("the receipt approves other arguments than the ones about to run")
    fingerprint = action.get("fingerprint")
    if fingerprint is not None and named.get("fingerprint") != fingerprint:
        raise ReceiptRefused("the receipt approves another action (its fingerprint differs)")
