"""The `holdpoint` command without a server: its declaration, tables and colour, JSON output and
one-line errors (a client whose transport answers as the API would)."""

from __future__ import annotations

import importlib
import io
import json
import tomllib
from typing import Any

import pytest

from holdpoint_sdk import cli
from holdpoint_sdk.client import Client, HoldpointError
from tests.conftest import ROOT

ITEM = {"session_id": "sess-1", "interrupt_id": "int-1", "reason": "confirm", "created_at": "2026-01-01T00:00:00Z",
        "payload": {"message": "Send\nthe email?", "metadata": {"options": [{"label": "Yes", "value": "yes"}]}}}


class Canned(Client):
    """The client with its transport replaced: records each request, answers from `answers`."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        super().__init__("http://holdpoint.invalid", "hp_key")
        self.answers, self.calls = answers, []  # type: ignore[var-annotated]

    def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        self.calls.append((method, path, body, params))
        answer = self.answers[(method, path)]
        if isinstance(answer, HoldpointError):
            raise answer
        return answer


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_cli_is_declared_as_the_sdks_holdpoint_console_command() -> None:
    scripts = tomllib.loads((ROOT / "sdk" / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["holdpoint"].partition(":")
    assert getattr(importlib.import_module(module), name) is cli.main


def test_cli_inbox_is_a_table_with_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    client = Canned({("GET", "/v1/interrupts"): {"interrupts": [ITEM], "next_cursor": None}})
    plain = io.StringIO()
    assert cli.main(["inbox", "--agent", "a1", "--expiring-within", "60"], client=client, stdout=plain) == 0
    header, row = plain.getvalue().splitlines()
    assert header.split() == ["SESSION", "INTERRUPT", "REASON", "CREATED", "MESSAGE"]
    assert row.split() == ["sess-1", "int-1", "confirm", "2026-01-01T00:00:00Z", "Send", "the", "email?"]
    assert "\x1b[" not in plain.getvalue()
    # The filters go to the server as query parameters (unset ones are left out).
    assert client.calls[0][3] == {"status": "open", "limit": 100, "cursor": None, "agent_id": "a1",
                                  "reason": None, "older_than": None, "expiring_within": 60, "approver": None}
    tty = Tty()
    assert cli.main(["inbox"], client=client, stdout=tty) == 0
    assert "\x1b[1mSESSION" in tty.getvalue() and "\x1b[36mint-1\x1b[0m" in tty.getvalue()


def test_cli_no_color_turns_colour_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    client = Canned({("GET", "/v1/interrupts"): {"interrupts": [ITEM], "next_cursor": None}})
    tty = Tty()
    assert cli.main(["inbox"], client=client, stdout=tty) == 0
    assert "\x1b[" not in tty.getvalue() and "int-1" in tty.getvalue()


def test_cli_json_is_plain_json() -> None:
    client = Canned({("GET", "/v1/interrupts"): {"interrupts": [ITEM], "next_cursor": None}})
    out = io.StringIO()
    assert cli.main(["--json", "show", "int-1"], client=client, stdout=out) == 0
    assert json.loads(out.getvalue()) == ITEM


def test_cli_resume_sends_payload_and_comment() -> None:
    path = "/v1/sessions/sess-1/interrupts/int-1/resume"
    client = Canned({("POST", path): {"ok": True, "interrupt_id": "int-1", "noop": False}})
    out = io.StringIO()
    assert cli.main(["resume", "sess-1", "int-1", "--payload", '{"choice": "b"}', "--comment", "fine"],
                    client=client, stdout=out) == 0
    assert client.calls[-1][2] == {"payload": {"choice": "b"}, "comment": "fine"}
    assert cli.main(["deny", "sess-1", "int-1"], client=client, stdout=out) == 0
    assert client.calls[-1][2] == {"payload": {"approved": False}}
    assert out.getvalue().splitlines() == ["resumed int-1 in sess-1", "denied int-1 in sess-1"]


def test_cli_error_is_one_line_with_the_api_code_and_field() -> None:
    path = "/v1/sessions/sess-1/interrupts/int-1/resume"
    refused = HoldpointError("invalid_resume", "'yes' is not of type 'boolean'", 400, "payload.approved")
    client = Canned({("POST", path): refused})
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["approve", "sess-1", "int-1", "--payload", '{"approved": "yes"}'], client=client,
                    stdout=out, stderr=err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == "error: invalid_resume: 'yes' is not of type 'boolean' (payload.approved)\n"
    assert cli.main(["resume", "sess-1", "int-1"], client=client, stdout=out, stderr=err) == 1
    assert err.getvalue().splitlines()[-1] == "error: usage: resume needs --payload JSON (payload)"


def test_cli_tail_follows_until_there_is_nothing_more() -> None:
    pages = [{"events": [{"seq": 1, "type": "session.created", "at": "t1", "data": {"agent_id": "a"}}],
              "next_after_seq": 1, "has_more": False}, {"events": [], "next_after_seq": 1, "has_more": False}]
    client = Canned({})
    client.events = lambda session_id, after_seq=0, limit=100, wait=None: pages.pop(0)  # type: ignore[method-assign]
    events = list(client.tail("sess-1", follow=False))
    assert [e["type"] for e in events] == ["session.created"]
    slept: list[float] = []

    def stop(seconds: float) -> None:
        slept.append(seconds)
        raise KeyboardInterrupt

    pages[:] = [{"events": [], "next_after_seq": 0, "has_more": False}]
    with pytest.raises(KeyboardInterrupt):
        list(client.tail("sess-1", follow=True, poll=0.5, sleep=stop))
    assert slept == [0.5]


def test_cli_an_unknown_interrupt_is_reported_and_exits_non_zero() -> None:
    """Issue 32: the API keeps a resume of an id the session never had a no-op (A4) but says
    `known: false`; the client raises it and the CLI says so and exits 1, never "answered"."""
    path = "/v1/sessions/sess-1/interrupts/null/resume"
    client = Canned({("POST", path): {"ok": True, "interrupt_id": "null", "noop": True, "known": False}})
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["approve", "sess-1", "null"], client=client, stdout=out, stderr=err) == 1
    assert out.getvalue() == "" and err.getvalue().startswith("error: unknown_interrupt: session sess-1 has no")


def test_client_turns_api_gateways_own_answers_into_next_steps() -> None:
    """Issue 32: where API Gateway answers by itself (its body cannot be changed), the client
    says what it means: a refused key, missing credentials, a path with no route (and the route
    it is near), a body over its limit."""
    import urllib.error
    from email.message import Message

    from holdpoint_sdk.client import _http_error

    def gateway(status: int, message: str) -> urllib.error.HTTPError:
        body = io.BytesIO(json.dumps({"message": message}).encode())
        return urllib.error.HTTPError("http://x", status, message, Message(), body)

    assert "Authorization: Bearer <key>" in _http_error(gateway(401, "Unauthorized")).message
    assert "check the key" in _http_error(gateway(403, "Forbidden")).message
    typo = _http_error(gateway(404, "Not Found"), "GET", "/v1/sessions/ses_1/interupts")
    assert typo.code == "no_route" and "did you mean /v1/sessions/{session_id}/interrupts?" in typo.message
    assert "openapi.json" in _http_error(gateway(404, "Not Found"), "GET", "/v2/nothing").message
    assert "10 MiB" in _http_error(gateway(413, "Request Entity Too Large")).message


def test_client_routes_are_the_templates() -> None:
    """`client.ROUTES` (what a typo is compared with) lists the template's API routes."""
    import re
    from pathlib import Path

    from holdpoint_sdk.client import ROUTES

    paths = set(re.findall(r"^\s+Path: (/\S*)$", (Path(__file__).parents[2] / "template.yaml").read_text(), re.M))
    served = {p for p in paths if not p.startswith("/inbox/") and p not in ("/", "/a2a/{tenant}/{agent_id}/"
                                                                                ".well-known/agent-card.json")}
    assert set(ROUTES) == served


def test_cli_wait_asks_until_the_status_and_reports_the_interrupts() -> None:
    """Issue 32: `holdpoint wait SESSION` waits for a park with the API's `?until=` long-poll."""
    path = "/v1/sessions/sess-1"
    view = {"status": "interrupted", "interrupts": [{"interrupt_id": "int-1", "reason": "confirm",
                                                      "payload": {"message": "Send the email?"}}]}
    client = Canned({("GET", path): view})
    out = io.StringIO()
    assert cli.main(["wait", "sess-1"], client=client, stdout=out) == 0
    assert client.calls[-1][3]["until"] == "interrupted"
    assert out.getvalue().splitlines() == ["sess-1 is interrupted", "  int-1  confirm  Send the email?"]
    client = Canned({("GET", path): {"status": "running"}})
    err = io.StringIO()
    assert cli.main(["wait", "sess-1", "--until", "done", "--timeout", "0"], client=client, stdout=out,
                    stderr=err) == 1
    assert err.getvalue().startswith("error: timed_out: session sess-1 is running, not done")
