"""`holdpoint approve|deny --all-matching` over HTTP on the local stack: the dry run lists what the
filters match and answers nothing; the bulk approve answers each matching interrupt (the worker
acts on each), bound to the action the listing showed; run again, each is already answered."""

from __future__ import annotations

import io
import json
from typing import Any

from holdpoint_sdk import cli
from holdpoint_sdk.client import Client
from tests.stack import Api, resumed_triggers


def run(stack: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), client=Client(stack.base_url, stack.api_key), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_bulk_cli_approves_all_matching_over_http(api: Api, stack: Any, worker: Any) -> None:
    sids = [api.start() for _ in range(3)]
    iids = {sid: api.wait_status(sid, "interrupted")["interrupts"][0]["interrupt_id"] for sid in sids}

    code, out, _ = run(stack, "--json", "approve", "--all-matching", "--tool", "send_email", "--dry-run")
    assert code == 0 and {i["session_id"] for i in json.loads(out)["interrupts"]} == set(sids)
    code, out, _ = run(stack, "--json", "deny", "--all-matching", "--session", sids[0], "--dry-run")
    assert code == 0 and [i["interrupt_id"] for i in json.loads(out)["interrupts"]] == [iids[sids[0]]]
    assert all(api.view(sid)["status"] == "interrupted" for sid in sids)  # a dry run answers nothing

    code, out, err = run(stack, "approve", "--all-matching", "--agent", "assistant", "--tool", "send_email",
                         "--comment", "bulk from the CLI")
    assert (code, err) == (0, ""), out
    assert all(f"{sid}  {iids[sid]}" in out for sid in sids) and out.count("approved") == 3
    for sid in sids:
        assert api.wait_status(sid, "done")["messages"][-1]["content"] == "Email sent."
        assert [t["payload"] for t in resumed_triggers(worker[1], sid)] == [{"approved": True}]

    code, out, _ = run(stack, "--json", "approve", "--all-matching", "--tool", "send_email")
    assert code == 0 and json.loads(out)["results"] == []  # none open matches any more
