"""Signed approval receipts: a decided interrupt as a compact JWS (ES256) a worker can check offline.

Everything here is pure: the claims come from a closed interrupt, the time and the signature are
arguments (the signer is a port: KMS in AWS), and the parsing the SDK's `verify_receipt` builds
on checks the shape only (the signature is the verifier's, with the public key of the `kid`).

A receipt proves that this deployment's signing key signed these claims: that the interrupt was
decided with this verdict by these answers under the policy whose digest it names, for the
action whose tool and argument digest it names. It proves nothing about what runs after it
(docs/SECURITY.md, "Approval receipts").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from holdpoint.core.approvals import outcome
from holdpoint.core.bound_action import BoundAction, canonical
from holdpoint.core.errors import HoldpointError
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.state import Interrupt

ALG = "ES256"
TYP = "holdpoint-receipt+jws"
ISSUER = "holdpoint"
COORDINATE = 32
"""A P-256 coordinate and each half of an ES256 signature (r, s) are 32 bytes."""
MAX_RECEIPT = 64_000
"""A receipt longer than this is refused before it is decoded (a quorum's answers are few)."""
_P256_SPKI_PREFIX = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200")
"""The DER SubjectPublicKeyInfo of an uncompressed P-256 key (what KMS GetPublicKey returns) before
its point 04||x||y."""

Sign = Callable[[bytes], bytes]
"""Signs the JWS signing input: the raw ES256 signature r||s (64 bytes)."""


class ReceiptError(HoldpointError, ValueError):
    """A receipt that is not a well-formed Holdpoint receipt, or a key that is not a P-256 key."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    if not isinstance(text, str) or not text.isascii() or "=" in text:
        raise ReceiptError("not base64url")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ReceiptError("not base64url") from None


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def arguments_text(arguments: JsonValue) -> str:
    """The arguments as a bound action keeps them: a JSON value's canonical text; a string is the
    arguments' JSON text (as a tool call carries them), canonical when it parses, else as sent."""
    if isinstance(arguments, str):
        try:
            return canonical(json.loads(arguments))
        except ValueError:
            return arguments
    return canonical(arguments)


def arguments_digest(arguments: JsonValue) -> str:
    """SHA-256 hex of `arguments_text`: the receipt's `action.arguments_sha256`."""
    return sha256_hex(arguments_text(arguments))


def action_claim(action: BoundAction | None) -> JsonObject | None:
    if action is None:
        return None
    return {"tool": action.tool, "fingerprint": action.fingerprint, "agent_version": action.agent_version,
            "arguments_sha256": sha256_hex(action.arguments)}


def claims(interrupt: Interrupt, tenant: str, session_id: str, issued_at: int) -> JsonObject:
    """The claims of a closed interrupt's receipt (PROTOCOL.md, "Approval receipts")."""
    decided = outcome(interrupt)
    return {
        "iss": ISSUER, "iat": issued_at, "tenant": tenant, "session": session_id,
        "interrupt": interrupt.interrupt_id, "action": action_claim(interrupt.action),
        "verdict": decided.verdict, "expired": decided.expired,
        "approvals": [{"subject": a.subject, "origin": a.origin, "status": a.status, "at": a.at}
                      for a in decided.approvals],
        "policy_sha256": sha256_hex(canonical(interrupt.policy.to_item())) if interrupt.policy is not None else None,
    }


def encode(body: Mapping[str, JsonValue], kid: str, sign: Sign) -> str:
    """The compact JWS of `body` under `kid`, signed by `sign` (raw r||s)."""
    header = {"alg": ALG, "typ": TYP, "kid": kid}
    signing_input = b64url(canonical(header).encode()) + "." + b64url(canonical(dict(body)).encode())
    signature = sign(signing_input.encode("ascii"))
    if len(signature) != 2 * COORDINATE:
        raise ReceiptError("an ES256 signature is 64 bytes (r||s)")
    return signing_input + "." + b64url(signature)


@dataclass(frozen=True)
class Parsed:
    """A receipt taken apart, not yet verified: the header, the claims, what was signed, the signature."""

    header: JsonObject
    claims: JsonObject
    signing_input: bytes
    signature: bytes


def parse(receipt: object) -> Parsed:
    """A receipt's parts; `ReceiptError` for anything that is not an ES256 Holdpoint receipt (an
    `alg` other than ES256, `none` included, is refused here, before any key is looked at)."""
    if not isinstance(receipt, str) or len(receipt) > MAX_RECEIPT:
        raise ReceiptError("a receipt is a compact JWS string")
    parts = receipt.split(".")
    if len(parts) != 3:
        raise ReceiptError("a receipt is a compact JWS: three parts")
    header, body = (_object(b64url_decode(p)) for p in parts[:2])
    if header.get("alg") != ALG:
        raise ReceiptError(f"a receipt is signed with {ALG}, not {header.get('alg')!r}")
    if header.get("typ") != TYP or not isinstance(header.get("kid"), str) or set(header) - {"alg", "typ", "kid"}:
        raise ReceiptError("not a Holdpoint receipt's header")
    if body.get("iss") != ISSUER:
        raise ReceiptError("not a Holdpoint receipt")
    signature = b64url_decode(parts[2])
    if len(signature) != 2 * COORDINATE:
        raise ReceiptError("an ES256 signature is 64 bytes (r||s)")
    return Parsed(header, body, (parts[0] + "." + parts[1]).encode("ascii"), signature)


def _object(data: bytes) -> JsonObject:
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        raise ReceiptError("a receipt's header and claims are JSON objects") from None
    if not isinstance(value, dict):
        raise ReceiptError("a receipt's header and claims are JSON objects")
    return value


def der_to_raw(der: bytes) -> bytes:
    """An ECDSA signature as KMS `Sign` returns it (DER SEQUENCE of INTEGER r, s) as JWS's r||s."""
    r, rest = _der_integer(_der_sequence(der))
    s, tail = _der_integer(rest)
    if tail:
        raise ReceiptError("trailing bytes after an ECDSA signature")
    return r.to_bytes(COORDINATE, "big") + s.to_bytes(COORDINATE, "big")


def _der_sequence(der: bytes) -> bytes:
    if len(der) < 2 or der[0] != 0x30:
        raise ReceiptError("an ECDSA signature is a DER SEQUENCE")
    length, start = der[1], 2
    if length == 0x81:
        length, start = der[2] if len(der) > 2 else -1, 3
    if length != len(der) - start:
        raise ReceiptError("a DER SEQUENCE's length is wrong")
    return der[start:]


def _der_integer(der: bytes) -> tuple[int, bytes]:
    if len(der) < 2 or der[0] != 0x02 or der[1] > COORDINATE + 1 or len(der) < 2 + der[1]:
        raise ReceiptError("an ECDSA signature holds two DER INTEGERs")
    value = int.from_bytes(der[2:2 + der[1]], "big")
    if value >= 1 << (8 * COORDINATE):
        raise ReceiptError("an ES256 signature's integer is at most 32 bytes")
    return value, der[2 + der[1]:]


def jwk(kid: str, spki_der: bytes) -> JsonObject:
    """The public JWK of a P-256 key from its DER SubjectPublicKeyInfo (KMS GetPublicKey's)."""
    if len(spki_der) != len(_P256_SPKI_PREFIX) + 1 + 2 * COORDINATE or not spki_der.startswith(_P256_SPKI_PREFIX) \
            or spki_der[len(_P256_SPKI_PREFIX)] != 0x04:
        raise ReceiptError("not an uncompressed P-256 public key")
    point = spki_der[len(_P256_SPKI_PREFIX) + 1:]
    return {"kty": "EC", "crv": "P-256", "alg": ALG, "use": "sig", "kid": kid,
            "x": b64url(point[:COORDINATE]), "y": b64url(point[COORDINATE:])}
