"""Fix 36 to moto 5.2.5's Cognito: the hosted UI's OAuth 2.0 authorization code flow with PKCE.

moto serves a user pool's JWKS and discovery document, but not its hosted UI, so a page could not
sign a person in as it does on AWS (`/oauth2/authorize`, then `/oauth2/token`): both were a 500. On
AWS they live on the pool's domain (`https://{domain}.auth.{region}.amazoncognito.com`); here the
pool's domain is the moto endpoint followed by the pool id, `{moto}/{pool}`:

- `GET {moto}/{pool}/oauth2/authorize?response_type=code&client_id&redirect_uri&state&
  code_challenge&code_challenge_method=S256`: a sign-in form (username, password). Only the code
  flow with an S256 challenge is taken, and `redirect_uri` must be one of the app client's
  `CallbackURLs`, as Cognito requires; anything else is a 400 page, never a redirect.
- `POST` of that form: the user signs in with the pool's own `USER_PASSWORD_AUTH` (a wrong password
  shows the form again), and the browser is sent to `redirect_uri?code=...&state=...`.
- `POST {moto}/{pool}/oauth2/token` (form: `grant_type=authorization_code`, `code`, `client_id`,
  `redirect_uri`, `code_verifier`): the pool's ID, access and refresh tokens for a code issued to
  that client and redirect URI whose challenge is the verifier's S256, once; a code lives 5
  minutes. Otherwise 400 `{"error": "invalid_grant"}`. It answers any origin (CORS), as Cognito's
  token endpoint does, since the page that asks is on another origin.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

CODE_SECONDS = 300
AUTHORIZE = r"{0}/(?P<user_pool_id>[^/]+)/oauth2/authorize$"
TOKEN = r"{0}/(?P<user_pool_id>[^/]+)/oauth2/token$"

_codes: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()

Answer = tuple[int, dict[str, str], str]


def _backend(pool_id: str) -> Any:
    from moto.cognitoidp.models import cognitoidp_backends
    from moto.core.models import DEFAULT_ACCOUNT_ID

    return cognitoidp_backends[DEFAULT_ACCOUNT_ID][pool_id.rsplit("_", 1)[0]]


def _params(request: Any, full_url: str) -> dict[str, str]:
    """The query's parameters, and a form body's on a POST."""
    params = dict(parse_qsl(urlsplit(full_url).query))
    body = request.get_data() if hasattr(request, "get_data") else (request.body or b"")
    params.update(parse_qsl(body.decode() if isinstance(body, bytes) else str(body)))
    return params


def _page(status: int, text: str) -> Answer:
    return status, {"Content-Type": "text/html; charset=utf-8"}, text


def _form(params: dict[str, str], error: str = "") -> Answer:
    hidden = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                     for k, v in params.items() if k not in ("username", "password"))
    said = f'<p id="error">{html.escape(error)}</p>' if error else ""
    return _page(200, f"""<!doctype html><html><head><title>Sign in</title></head><body>
<form method="post">{hidden}{said}
<label>Username <input id="username" name="username" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password" autocomplete="current-password"></label>
<button id="sign-in" type="submit">Sign in</button></form></body></html>""")


def _request_problem(pool_id: str, params: dict[str, str]) -> str | None:
    """Why an authorization request is refused (Cognito's checks), or None."""
    pool = _backend(pool_id).user_pools.get(pool_id)
    client = pool.clients.get(params.get("client_id", "")) if pool else None
    if client is None:
        return "unknown user pool or client_id"
    if params.get("response_type") != "code":
        return "response_type must be code"
    if params.get("code_challenge_method") != "S256" or not params.get("code_challenge"):
        return "code_challenge with code_challenge_method S256 is required"
    if params.get("redirect_uri") not in client.extended_config.get("CallbackURLs", []):
        return "redirect_uri is not one of the app client's CallbackURLs"
    return None


def authorize(request: Any, full_url: str, headers: Any) -> Answer:
    pool_id = urlsplit(full_url).path.strip("/").split("/")[0]
    params = _params(request, full_url)
    why = _request_problem(pool_id, params)
    if why:
        return _page(400, f"<p id='error'>{html.escape(why)}</p>")
    if request.method != "POST":
        return _form(params)
    try:
        out = _backend(pool_id).initiate_auth(params["client_id"], "USER_PASSWORD_AUTH",
                                              {"USERNAME": params.get("username", ""),
                                               "PASSWORD": params.get("password", "")})
        tokens = out["AuthenticationResult"]
    except Exception:  # noqa: BLE001 (moto's refusals: unknown user, wrong password, a challenge)
        return _form(params, "Incorrect username or password.")
    code = secrets.token_urlsafe(24)
    with _lock:
        _codes[code] = {"client_id": params["client_id"], "redirect_uri": params["redirect_uri"],
                        "challenge": params["code_challenge"], "tokens": tokens,
                        "until": time.monotonic() + CODE_SECONDS}
    back = {"code": code, **({"state": params["state"]} if "state" in params else {})}
    joint = "&" if "?" in params["redirect_uri"] else "?"
    return 302, {"Location": f"{params['redirect_uri']}{joint}{urlencode(back)}"}, ""


def token(request: Any, full_url: str, headers: Any) -> Answer:
    cors = {"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"}
    if request.method == "OPTIONS":
        return 204, {**cors, "Access-Control-Allow-Methods": "POST",
                     "Access-Control-Allow-Headers": "Content-Type"}, ""
    params = _params(request, full_url)
    with _lock:
        grant = _codes.pop(params.get("code", ""), None)
    verifier = params.get("code_verifier", "")
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    if (params.get("grant_type") != "authorization_code" or grant is None or grant["until"] < time.monotonic()
            or grant["client_id"] != params.get("client_id") or grant["redirect_uri"] != params.get("redirect_uri")
            or not secrets.compare_digest(grant["challenge"], challenge)):
        return 400, cors, json.dumps({"error": "invalid_grant"})
    tokens = grant["tokens"]
    return 200, cors, json.dumps({"id_token": tokens["IdToken"], "access_token": tokens["AccessToken"],
                                  "refresh_token": tokens.get("RefreshToken", ""),
                                  "expires_in": tokens.get("ExpiresIn", 3600), "token_type": "Bearer"})


def _route_unsigned_oauth_paths() -> None:
    """moto's server finds the service of an unsigned request by its path for the JWKS and the
    discovery document only; the hosted UI's paths go to cognito-idp the same way."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    original = DomainDispatcherApplication.get_service_from_unsigned_path

    def by_path(path_info: str) -> tuple[str | None, str | None]:
        if path_info.rstrip("/").endswith(("/oauth2/authorize", "/oauth2/token")):
            pool_id = path_info.strip("/").split("/")[0]
            if "_" in pool_id:
                return "cognito-idp", pool_id.rsplit("_", 1)[0]
        return original(path_info)

    DomainDispatcherApplication.get_service_from_unsigned_path = staticmethod(by_path)  # type: ignore[method-assign]


def apply() -> None:
    """Install fix 36 (`holdpoint_local.moto.apply` calls this once, before the server routes)."""
    from moto.cognitoidp import urls

    _route_unsigned_oauth_paths()
    urls.url_paths[AUTHORIZE] = authorize
    urls.url_paths[TOKEN] = token
