"""An identity provider's signing keys (its JWKS), fetched through the network guard and cached.

Only a declared provider's keys are fetched: the URL comes from the declaration (a Cognito pool's
JWKS, or the `jwks_uri` of the discovery document the tenant named), never from a token. A key
set is kept for an hour; a token naming a key the set lacks (the provider rotated) fetches it
again, at most once a minute, so unknown key ids cannot make the authorizer hammer the provider.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from holdpoint.core.errors import HoldpointError
from holdpoint.core.identity import ALGORITHMS, DISCOVERY_SUFFIX, IdentityProvider
from holdpoint.outbound.netguard import check_url, urlopen

KEEP_SECONDS = 3600.0
REFETCH_SECONDS = 60.0
MAX_DOCUMENT_BYTES = 65_536
TIMEOUT_SECONDS = 3.0
FIELD = "identity provider"


class KeysUnavailable(HoldpointError):
    """The provider's keys could not be had (refused URL, no answer, not a key set): no token of
    it checks out until they can."""


def cognito_keys_url(pool_id: str) -> str:
    """A user pool's JWKS: on Cognito's regional endpoint, or on the endpoint the environment
    names for cognito-idp (the local stack's moto) as the AWS SDK would."""
    region = pool_id.split("_", 1)[0]
    base = (os.environ.get("AWS_ENDPOINT_URL_COGNITO_IDP") or os.environ.get("AWS_ENDPOINT_URL")
            or f"https://cognito-idp.{region}.amazonaws.com")
    return f"{base.rstrip('/')}/{pool_id}/.well-known/jwks.json"


def fetch_json(url: str) -> Any:
    """A JSON document from a declared URL, through the guard, at most `MAX_DOCUMENT_BYTES`."""
    try:
        with urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}), FIELD,
                     TIMEOUT_SECONDS) as resp:
            raw = resp.read(MAX_DOCUMENT_BYTES + 1)
    except Exception as exc:  # refused, unreachable, an HTTP error: all the same to a token
        raise KeysUnavailable(f"{url}: {exc}") from exc
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise KeysUnavailable(f"{url}: over {MAX_DOCUMENT_BYTES} bytes")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise KeysUnavailable(f"{url}: not JSON") from exc


def keys_url(provider: IdentityProvider, fetch: Callable[[str], Any] = fetch_json) -> str:
    """Where the provider's keys are: a pool's JWKS, or the discovery document's `jwks_uri` (the
    document must name the declared issuer, as OIDC Discovery requires)."""
    if provider.kind == "cognito":
        return cognito_keys_url(provider.source)
    doc = fetch(provider.source)
    if not isinstance(doc, dict) or doc.get("issuer") != provider.issuer:
        raise KeysUnavailable(f"{provider.source}: its issuer is not {provider.issuer} "
                              f"(the URL less {DISCOVERY_SUFFIX})")
    url = doc.get("jwks_uri")
    why = check_url(url, "jwks_uri")
    if why:
        raise KeysUnavailable(why)
    return str(url)


@dataclass
class _Held:
    keys: dict[str, Any]  # kid -> PyJWK
    fetched: float


def parse_key_set(doc: Any) -> dict[str, Any]:
    """The usable keys of a JWKS by `kid`: those of an allowed algorithm's type (RSA, EC P-256)."""
    import jwt  # the authorizer's alone

    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeysUnavailable("not a JWK set")
    out: dict[str, Any] = {}
    for raw in doc["keys"][:100]:
        if not isinstance(raw, dict) or not isinstance(raw.get("kid"), str) or raw.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(raw)
        except jwt.PyJWTError:
            continue
        if key.algorithm_name in ALGORITHMS:
            out[raw["kid"]] = key
    return out


class SigningKeys:
    """The cache of each declared provider's keys, by provider (issuer, client id, source). A fetch
    that failed is not tried again for `REFETCH_SECONDS`: a provider that is slow or down costs
    the authorizer one timeout a minute, not one per token."""

    def __init__(self, fetch: Callable[[str], Any] = fetch_json, clock: Callable[[], float] = time.monotonic) -> None:
        self.fetch, self.clock = fetch, clock
        self._held: dict[IdentityProvider, _Held] = {}
        self._failed: dict[IdentityProvider, tuple[float, KeysUnavailable]] = {}
        self._lock = threading.Lock()

    def key(self, provider: IdentityProvider, kid: str) -> Any | None:
        """The provider's key `kid` (a PyJWK), or None when its key set has none of that id."""
        now = self.clock()
        with self._lock:
            held, failed = self._held.get(provider), self._failed.get(provider)
        if held is None or now - held.fetched > KEEP_SECONDS or (
                kid not in held.keys and now - held.fetched > REFETCH_SECONDS):
            if failed is not None and now - failed[0] <= REFETCH_SECONDS:
                raise failed[1]
            held = self._fetched(provider, now)
        return held.keys.get(kid)

    def _fetched(self, provider: IdentityProvider, now: float) -> _Held:
        try:
            held = _Held(parse_key_set(self.fetch(keys_url(provider, self.fetch))), now)
        except KeysUnavailable as exc:
            with self._lock:
                self._failed[provider] = (now, exc)
            raise
        with self._lock:
            self._held[provider] = held
            self._failed.pop(provider, None)
        return held
