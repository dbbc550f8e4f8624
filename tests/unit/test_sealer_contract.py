"""The `ports.Sealer` contract (docs/SECURITY.md: cursors and links are sealed), held by the
deployment's sealer (aws/signing.py, its secret in Secrets Manager on moto) and its in-memory twin
(memory/sealer.py, a secret of its own): a sealed payload comes back exactly, under its purpose
only and only with the secret that sealed it; a token altered, cut short, over-long or not
base64url at all opens to None, never to an error."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest

from holdpoint.core.sealing import MAX_TOKEN_CHARS, b64, unb64
from holdpoint_local.memory.sealer import MemorySealer
from tests.twins import side

ALPHABET = string.ascii_letters + string.digits + "-_"
PAYLOAD = {"t": "t1", "at": {"k": 1, "list": [1, "two", None, True, 0.25, -(10**30)], "empty": {}},
           "text": "h\u00e9llo \u2713 \U0001f600", "none": None, "no": False}


def _in_memory() -> tuple[Any, str]:
    memory = MemorySealer()
    return memory, memory.secret


def _the_deployments() -> tuple[Any, str]:
    from holdpoint.aws import secretrefs, signing

    secretrefs._CACHE.clear()  # this test's secret, not an earlier moto's
    secret = signing.platform_secret()
    assert secret
    return signing, secret


@pytest.fixture(params=["memory", "secretsmanager"])
def sides(request: pytest.FixtureRequest) -> tuple[Any, str]:
    """A sealer of one kind and the secret it seals with."""
    return side(request, _in_memory, _the_deployments)


@pytest.fixture
def sealer(sides: tuple[Any, str]) -> Any:
    return sides[0]


def test_sealed_a_payload_comes_back_exactly_under_its_purpose(sealer: Any) -> None:
    token = sealer.seal("inbox-cursor", PAYLOAD)
    assert sealer.unseal("inbox-cursor", token) == PAYLOAD
    assert json.dumps(sealer.unseal("inbox-cursor", token)) == json.dumps(PAYLOAD)  # key order too
    assert sealer.unseal("inbox-cursor", sealer.seal("inbox-cursor", {})) == {}


def test_sealed_a_token_opens_under_no_other_purpose(sealer: Any) -> None:
    token = sealer.seal("inbox-cursor", PAYLOAD)
    for other in ("link", "inbox-cursor ", "Inbox-cursor", ""):
        assert sealer.unseal(other, token) is None


def test_sealed_a_token_opens_only_with_the_secret_that_sealed_it(sides: tuple[Any, str]) -> None:
    """The twin's format is the deployment's: given the same secret, each opens the other's tokens."""
    sealer, secret = sides
    token = sealer.seal("link", PAYLOAD)
    assert MemorySealer(secret).unseal("link", token) == PAYLOAD
    assert sealer.unseal("link", MemorySealer(secret).seal("link", PAYLOAD)) == PAYLOAD
    assert MemorySealer(secret + "x").unseal("link", token) is None
    assert sealer.unseal("link", MemorySealer().seal("link", PAYLOAD)) is None


def test_sealed_an_altered_token_opens_to_none(sealer: Any) -> None:
    token = sealer.seal("inbox-cursor", PAYLOAD)
    body, mac = token.split(".")
    other_body = b64(json.dumps({**PAYLOAD, "t": "t2"}, separators=(",", ":")).encode())
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    for forged in (f"{other_body}.{mac}", f"{body}x.{mac}", f"{body}.{flipped}", f"{body[1:]}.{mac}"):
        assert sealer.unseal("inbox-cursor", forged) is None
    for last in ALPHABET.replace(mac[-1], ""):  # the MAC's last character carries two spare bits
        assert sealer.unseal("inbox-cursor", f"{body}.{mac[:-1]}{last}") is None


def test_sealed_a_truncated_token_opens_to_none(sealer: Any) -> None:
    token = sealer.seal("inbox-cursor", PAYLOAD)
    body, mac = token.split(".")
    for cut in (token[:-1], f"{body}.", body, f".{mac}", token[: len(token) // 2], "", "."):
        assert sealer.unseal("inbox-cursor", cut) is None


def test_sealed_an_over_long_token_opens_to_none_even_when_sealed(sealer: Any) -> None:
    long = sealer.seal("inbox-cursor", {"pad": "x" * MAX_TOKEN_CHARS})
    assert len(long) > MAX_TOKEN_CHARS and sealer.unseal("inbox-cursor", long) is None
    fits = sealer.seal("inbox-cursor", {"pad": "x" * (MAX_TOKEN_CHARS // 2)})
    assert sealer.unseal("inbox-cursor", fits) == {"pad": "x" * (MAX_TOKEN_CHARS // 2)}
    assert sealer.unseal("inbox-cursor", "x" * 5000) is None
    assert sealer.unseal("inbox-cursor", f"{'x' * MAX_TOKEN_CHARS}.{'y' * 43}") is None


def test_sealed_a_token_that_is_not_base64url_opens_to_none(sealer: Any) -> None:
    token = sealer.seal("inbox-cursor", PAYLOAD)
    body, mac = token.split(".")
    assert unb64(body)  # the real one decodes
    for junk in (f"{body}.{mac[:-2]}!!", f"{body}.{mac}=", f"{body}.{mac}!", f"{body}.={mac}", f"!{body[1:]}.{mac}",
                 f"{body}.\u00e9{mac[1:]}", f"{body}.\ud800{mac[1:]}", "\u00e9\u00e9.\u00e9\u00e9", "a.b",
                 f"{body}.{mac}.{mac}", "...", f"{b64(b'[1, 2]')}.{mac}", f"{b64(bytes([0xff, 0xfe]))}.{mac}"):
        assert sealer.unseal("inbox-cursor", junk) is None
