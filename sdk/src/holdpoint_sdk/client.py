"""A small client of the Holdpoint HTTP API, usable on its own (standard library only).

Every failure is a `HoldpointError` carrying the API's error `code`, message and `param`, so a
caller (the `holdpoint` command among them) can say in one line what went wrong.
"""

from __future__ import annotations

import difflib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from typing import Any

URL_ENV = "HOLDPOINT_URL"
KEY_ENV = "HOLDPOINT_API_KEY"
MAX_BODY_BYTES = 1_048_576
"""The largest request body the API takes (PROTOCOL.md §5.4; a test keeps it the API's own)."""
APPROVE: dict[str, Any] = {"approved": True}
DENY: dict[str, Any] = {"approved": False}
"""What `approve` and `deny` send when no payload is given: the shape the seed worker reads."""
MAX_BULK = 100
"""The most items one bulk answer carries (the API refuses more, naming `items`)."""

Json = dict[str, Any]


class HoldpointError(Exception):
    """An answer other than 2xx (or no answer): the API's error code, its message and the field."""

    def __init__(self, code: str, message: str, status: int | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.param = code, message, status, param

    def line(self) -> str:
        """The error as one line: `code: message (param)`."""
        where = f" ({self.param})" if self.param else ""
        return f"{self.code}: {self.message}{where}"


def _compact(params: dict[str, Any]) -> dict[str, str]:
    """Query parameters without the unset ones; `True` is sent as `1`."""
    return {k: ("1" if v is True else str(v)) for k, v in params.items() if v is not None and v is not False}


class Client:
    """One tenant's view of a Holdpoint deployment, authenticated by an API key or a client token."""

    def __init__(self, url: str, api_key: str, timeout: float = 30.0) -> None:
        if not url:
            raise HoldpointError("config", f"no API URL: set {URL_ENV}")
        if not api_key:
            raise HoldpointError("config", f"no credentials: set {KEY_ENV}")
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Client:
        env = os.environ if environ is None else environ
        return cls(env.get(URL_ENV, ""), env.get(KEY_ENV, ""))

    # -- transport --------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Json:
        """One call; a non-2xx answer raises `HoldpointError` with the API's `error.code`."""
        query = urllib.parse.urlencode(_compact(params or {}))
        target = self.url + path + (f"?{query}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        if data is not None and len(data) > MAX_BODY_BYTES:  # the API answers 413; a gateway may cut the upload
            raise HoldpointError("payload_too_large", f"the request body is {len(data):,} bytes; the API takes at "
                                 f"most {MAX_BODY_BYTES:,} (send smaller payloads)", 413, "body")
        req = urllib.request.Request(target, data=data, method=method, headers={
            "Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the configured API
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, method, path) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise HoldpointError("unreachable", f"cannot reach {self.url}: {reason}") from None
        out = json.loads(raw) if raw else {}
        return out if isinstance(out, dict) else {"value": out}

    # -- the inbox ----------------------------------------------------------------------------
    def inbox(self, limit: int = 50, cursor: str | None = None, **filters: Any) -> Json:
        """One page of open interrupts, newest first. `filters` (agent_id, reason, older_than,
        expiring_within, approver...) are passed through for the server to apply."""
        return self.request("GET", "/v1/interrupts", params={"status": "open", "limit": limit,
                                                             "cursor": cursor, **filters})

    def open_interrupts(self, **filters: Any) -> Iterator[Json]:
        """Every open interrupt, following the inbox's cursor."""
        cursor: str | None = None
        while True:
            page = self.inbox(limit=100, cursor=cursor, **filters)
            yield from page.get("interrupts", [])
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def interrupt(self, interrupt_id: str) -> Json:
        """An open interrupt by id, from the inbox (with its `session_id`)."""
        for item in self.open_interrupts():
            if item.get("interrupt_id") == interrupt_id:
                return item
        raise HoldpointError("not_found", f"no open interrupt {interrupt_id}", 404, "interrupt_id")

    # -- sessions -----------------------------------------------------------------------------
    def sessions(self, **params: Any) -> Json:
        return self.request("GET", "/v1/sessions", params=params)

    def session(self, session_id: str) -> Json:
        return self.request("GET", f"/v1/sessions/{_seg(session_id)}")

    def wait_for(self, session_id: str, statuses: Sequence[str], timeout: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> Json:
        """The session view once its status is one of `statuses` (the API's `?until=` long-poll,
        asked again until `timeout`); `timed_out` with the status it has otherwise."""
        deadline = clock() + timeout
        while True:
            left = max(0, min(25, int(deadline - clock())))
            view = self.request("GET", f"/v1/sessions/{_seg(session_id)}",
                                params={"until": ",".join(statuses), "wait": left})
            if view.get("status") in statuses:
                return view
            if clock() >= deadline:
                raise HoldpointError("timed_out", f"session {session_id} is {view.get('status')}, not "
                                     f"{' or '.join(statuses)}, after {timeout:.0f} s")

    def events(self, session_id: str, after_seq: int = 0, limit: int = 100, wait: int | None = None) -> Json:
        """A page of the session's event log after `after_seq` (`wait` long-polls where served)."""
        return self.request("GET", f"/v1/sessions/{_seg(session_id)}/events",
                            params={"after_seq": after_seq, "limit": limit, "wait": wait})

    def trace(self, session_id: str, hours: int = 24) -> Json:
        """The session's traces of the last `hours` hours: each turn's hops with their times."""
        return self.request("GET", f"/v1/sessions/{_seg(session_id)}/trace", params={"hours": hours})

    def tail(self, session_id: str, after_seq: int = 0, follow: bool = True, poll: float = 1.0,
             sleep: Callable[[float], None] = time.sleep) -> Iterator[Json]:
        """The session's events in order; with `follow`, keeps polling for new ones."""
        while True:
            page = self.events(session_id, after_seq, limit=500)
            events = page.get("events", [])
            yield from events
            after_seq = int(page.get("next_after_seq", after_seq))
            if page.get("has_more"):
                continue
            if not follow:
                return
            if not events:
                sleep(poll)

    # -- answers ------------------------------------------------------------------------------
    def resume(self, session_id: str, interrupt_id: str, payload: Any = None, comment: str | None = None,
               expect_fingerprint: str | None = None, arguments: Json | None = None) -> Json:
        """Resume once; a repeat answers `noop: true` with who cleared it (A4). An id the session
        never had is a no-op on the API too (`known: false`), which this raises as
        `unknown_interrupt`, so a typo'd id is never taken for an answer. `arguments` edit the
        action as this approves it (A3, where the policy allows `edit`)."""
        body: Json = {"payload": payload}
        if comment is not None:
            body["comment"] = comment
        if expect_fingerprint is not None:
            body["expect_fingerprint"] = expect_fingerprint
        if arguments is not None:
            body["arguments"] = arguments
        out = self.request("POST", f"/v1/sessions/{_seg(session_id)}/interrupts/{_seg(interrupt_id)}/resume", body)
        if out.get("known") is False:
            raise HoldpointError("unknown_interrupt", f"session {session_id} has no interrupt {interrupt_id}; "
                                 "see its open ones with `holdpoint inbox` or GET /v1/sessions/{session_id}",
                                 status=200, param="interrupt_id")
        return out

    def approve(self, session_id: str, interrupt_id: str, payload: Any = None, comment: str | None = None,
                expect_fingerprint: str | None = None, arguments: Json | None = None) -> Json:
        return self.resume(session_id, interrupt_id, APPROVE if payload is None else payload, comment,
                           expect_fingerprint, arguments)

    def deny(self, session_id: str, interrupt_id: str, payload: Any = None, comment: str | None = None,
             expect_fingerprint: str | None = None) -> Json:
        return self.resume(session_id, interrupt_id, DENY if payload is None else payload, comment,
                           expect_fingerprint)


    def resume_many(self, items: Sequence[Json]) -> Json:
        """Answer several interrupts in one request (`POST /v1/interrupts/resume`, at most
        `MAX_BULK` items): each item `{session_id, interrupt_id, payload?, expect_fingerprint?,
        comment?}` is a resume of its own, and `results` holds each one's outcome or refusal
        (with its `status`) in the order sent; one refused item changes nothing for the others."""
        return self.request("POST", "/v1/interrupts/resume", {"items": list(items)})

    def submit(self, session_id: str, decision_id: str, answer: Json) -> Json:
        """A worker's later answer to a decision it took (`POST /v1/workers/submit`, a machine key)."""
        return self.request("POST", "/v1/workers/submit", {**answer, "session_id": session_id,
                                                           "decision_id": decision_id})

    # -- external runs (PROTOCOL.md §10) -------------------------------------------------------------
    def raise_run(self, run_id: str, body: Json) -> Json:
        """Raise a run's interrupts (`POST /v1/runs/{run_id}/interrupts`); a retried call raises
        nothing twice. `holdpoint_sdk.runs.ask` builds and checks the body with the server's model."""
        return self.request("POST", f"/v1/runs/{_seg(run_id)}/interrupts", body)

    def run(self, run_id: str) -> Json:
        """The caller's own run: each interrupt, open or with its answer and verdict."""
        return self.request("GET", f"/v1/runs/{_seg(run_id)}")

    def jwks(self) -> Json:
        """The deployment's receipt keys (`GET /.well-known/jwks.json`): fetch once, keep, and
        hand to `holdpoint_sdk.receipts.verify_receipt` or an integration's `jwks=`."""
        return self.request("GET", "/.well-known/jwks.json")

    def declare_agent(self, agent_id: str, config: Json) -> Json:
        """Declare or replace an agent (`PUT /v1/agents/{agent_id}`)."""
        return self.request("PUT", f"/v1/agents/{_seg(agent_id)}", config)


def _seg(value: str) -> str:
    return urllib.parse.quote(value, safe="")


ROUTES = (
    "/v1/agents/{agent_id}", "/v1/client-tokens", "/v1/identity-provider", "/v1/interrupts", "/v1/interrupts/resume",
    "/v1/links/{token}",
    "/v1/openapi.json",
    "/v1/sessions", "/v1/sessions/{session_id}", "/v1/sessions/{session_id}/calls/settle",
    "/v1/sessions/{session_id}/events", "/v1/sessions/{session_id}/events/stream", "/v1/sessions/{session_id}/trace",
    "/v1/sessions/{session_id}/inputs", "/v1/sessions/{session_id}/interrupts",
    "/v1/sessions/{session_id}/interrupts/{interrupt_id}/resume", "/v1/workers/submit",
    "/v1/runs/{run_id}/interrupts", "/v1/runs/{run_id}",
    "/v1/channels/ag-ui/agents/{agent_id}/run", "/v1/channels/ag-ui/agents/{agent_id}/connect",
    "/v1/channels/slack/interactions", "/a2a/{tenant}/{agent_id}", "/mcp/{agent_id}", "/inbox", "/favicon.ico",
    "/.well-known/jwks.json")
"""The API's route templates (template.yaml's; a test keeps the two the same): where a path with
no route is near one, API Gateway's bare 404 becomes the routes to try."""
GATEWAY = {
    401: "no credentials reached the API: send the key as `Authorization: Bearer <key>` "
         f"(the CLI reads {KEY_ENV})",
    403: "the API's authorizer refused these credentials: a key that is wrong, revoked or another "
         "deployment's, or a client token that expired; check the key",
    413: "the body is over API Gateway's 10 MiB (Holdpoint takes at most 1 MiB): send less",
}
"""API Gateway answers these by itself with a bare `{"message"}` it will not let anyone change:
what each means and what to do next."""


def _near(path: str) -> str:
    """The route templates closest to `path`: each template with the path's own segments in its
    placeholders, compared with the path as text (so a typo'd word is near, an id is not)."""
    asked = path.split("?")[0].rstrip("/")
    parts = asked.split("/")

    def score(route: str) -> float:
        filled = [parts[i] if seg.startswith("{") and i < len(parts) else seg for i, seg in enumerate(route.split("/"))]
        return difflib.SequenceMatcher(None, asked, "/".join(filled)).ratio()

    best = max(ROUTES, key=score)
    return f"; did you mean {best}?" if score(best) >= 0.8 else "; see GET /v1/openapi.json for the routes"


def _http_error(exc: urllib.error.HTTPError, method: str = "", path: str = "") -> HoldpointError:
    """The API's `{"error": {code, message, param}}`, or API Gateway's `{"message"}`, turned into
    the next step (`GATEWAY`, or the routes near a path with none)."""
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        return HoldpointError(str(err.get("code", "error")), str(err.get("message", "")), exc.code,
                              err.get("param"))
    message = body.get("message") if isinstance(body, dict) else None
    if exc.code == 404 and message == "Not Found":
        return HoldpointError("no_route", f"no route for {method} {path}{_near(path)}", 404)
    if exc.code in GATEWAY:
        return HoldpointError(f"http_{exc.code}", f"{message or exc.reason}: {GATEWAY[exc.code]}", exc.code)
    return HoldpointError(f"http_{exc.code}", str(message or exc.reason), exc.code)
