"""`holdpoint approve|deny --all-matching` (docs/CLI.md): the inbox listing narrowed by filters,
each item bound to the action listed (its fingerprint sent as `expect_fingerprint`), answered in
bulk requests of at most `MAX_BULK`; `--dry-run` answers nothing; a refused item is reported and
makes the exit status 1. The same against the local stack is tests/e2e/test_cli_e2e.py's."""

from __future__ import annotations

import io
import json
from typing import Any

from holdpoint.services.bulk import MAX_ITEMS
from holdpoint_sdk import cli
from holdpoint_sdk.client import MAX_BULK
from tests.unit.test_cli import Canned


def listed(n: int, tool: str = "send_email", session: str | None = None) -> dict[str, Any]:
    return {"session_id": session or f"s{n}", "interrupt_id": f"i{n}", "reason": "confirm",
            "created_at": "2026-01-01T00:00:00.000Z", "action": {"tool": tool, "fingerprint": f"sha256:{n}"}}


def ok(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"results": [{"session_id": i["session_id"], "interrupt_id": i["interrupt_id"], "http_status": 200,
                         "ok": True, "noop": False} for i in items]}


def test_bulk_cli_limit_is_the_apis() -> None:
    assert MAX_BULK == MAX_ITEMS


def test_bulk_cli_approve_all_matching_binds_each_item_to_the_listed_action() -> None:
    inbox = {"interrupts": [listed(1), listed(2, tool="lookup"), listed(3)], "next_cursor": None}
    client = Canned({("GET", "/v1/interrupts"): inbox, ("POST", "/v1/interrupts/resume"): ok([listed(1), listed(3)])})
    out = io.StringIO()
    code = cli.main(["approve", "--all-matching", "--agent", "assistant", "--tool", "send_email", "--comment", "ok"],
                    client=client, stdout=out)
    assert code == 0, out.getvalue()
    (_, _, _, params), (_, _, body, _) = client.calls
    assert params["agent_id"] == "assistant" and params["approver"] == "me"
    assert body == {"items": [
        {"session_id": "s1", "interrupt_id": "i1", "payload": {"approved": True}, "comment": "ok",
         "expect_fingerprint": "sha256:1"},
        {"session_id": "s3", "interrupt_id": "i3", "payload": {"approved": True}, "comment": "ok",
         "expect_fingerprint": "sha256:3"}]}
    assert out.getvalue().count("approved") == 2


def test_bulk_cli_dry_run_lists_and_answers_nothing() -> None:
    inbox = {"interrupts": [listed(1, session="keep"), listed(2)], "next_cursor": None}
    client = Canned({("GET", "/v1/interrupts"): inbox})
    out = io.StringIO()
    assert cli.main(["--json", "deny", "--all-matching", "--session", "keep", "--dry-run"], client=client,
                    stdout=out) == 0
    assert [i["interrupt_id"] for i in json.loads(out.getvalue())["interrupts"]] == ["i1"]
    assert [c[0] for c in client.calls] == ["GET"]


def test_bulk_cli_needs_a_filter_and_takes_no_ids() -> None:
    client = Canned({})
    err = io.StringIO()
    assert cli.main(["approve", "--all-matching"], client=client, stdout=io.StringIO(), stderr=err) == 1
    assert err.getvalue().startswith("error: usage: --all-matching needs a filter")
    assert cli.main(["approve", "s1", "i1", "--all-matching", "--agent", "a"], client=client,
                    stdout=io.StringIO(), stderr=err) == 1
    assert cli.main(["approve"], client=client, stdout=io.StringIO(), stderr=err) == 1
    assert client.calls == []


def test_bulk_cli_sends_at_most_max_bulk_a_request_and_reports_each_refusal() -> None:
    many = [listed(n) for n in range(MAX_BULK + 5)]
    results = ok(many)["results"]
    results[3] = {**results[3], "http_status": 409, "error": {"code": "stale_approval", "message": "changed"}}
    answers = iter([{"results": results[:MAX_BULK]}, {"results": results[MAX_BULK:]}])

    class Paged(Canned):
        def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
            self.calls.append((method, path, body, params))
            return {"interrupts": many, "next_cursor": None} if method == "GET" else next(answers)

    client = Paged({})
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["approve", "--all-matching", "--older-than", "60"], client=client, stdout=out, stderr=err) == 1
    assert [len(c[2]["items"]) for c in client.calls if c[0] == "POST"] == [MAX_BULK, 5]
    assert "refused: stale_approval: changed" in out.getvalue()
    assert err.getvalue().startswith("error: refused: 1 of 105 interrupts were refused")
