"""`GET /v1/sessions` (PROTOCOL.md §5.2, §5.3): the caller's tenant, newest first, from the `Sessions`
GSI on the session header; filters `agent_id`, `status`, `top_level`; sealed, tenant-bound
cursors; a client token sees only its own sessions; bad query parameters are 400 naming them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.aws import signing
from holdpoint.core.agent_config import AgentConfig
from holdpoint.core.inputs import start_session
from holdpoint.core.protocols.client import ClientMessageInput
from holdpoint.core.state import SessionState
from holdpoint.ports import SessionFilters
from holdpoint.services import sessions
from holdpoint.services.caller import Caller
from tests.harness import Harness
from tests.unit.test_api import assert_error, call_api, table_items

T0 = 1_800_000_000.0


@pytest.fixture
def api(aws: dict[str, str]) -> Iterator[dict[str, str]]:
    assembly.reset()
    yield aws
    assembly.reset()


def start(h: Harness, at: float, text: str = "say hi", caller: Caller | None = None) -> str:
    """A session created at `at` (its listing order), run until it rests."""
    inp = ClientMessageInput.model_validate({"type": "client.message", "agent_id": "assistant",
                                             "message": {"role": "user", "content": text}})
    out = sessions.submit(h.store, h.queue, caller or h.caller, None, inp, clock=lambda: at)
    h.session_id = out.session_id
    h.settle()
    return out.session_id


def listed(query: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    status, body = call_api("GET", "/v1/sessions", query=query, **kw)
    assert status == 200, body
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [row["session_id"] for row in body["sessions"]]


def test_listing_is_newest_first_and_pages_with_a_sealed_cursor(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    made = [start(h, T0 + i) for i in range(5)]
    first = listed({"limit": "2"})
    assert ids(first) == made[::-1][:2]
    row = first["sessions"][0]
    assert row == {"session_id": made[4], "agent_id": "assistant", "status": "done",
                   "created_at": "2027-01-15T08:00:04.000Z", "owner": "user-1", "top_level": True}
    second = listed({"limit": "2", "cursor": first["next_cursor"]})
    third = listed({"limit": "2", "cursor": second["next_cursor"]})
    assert ids(second) == made[::-1][2:4] and ids(third) == made[:1]
    assert third["next_cursor"] is None
    assert ids(listed()) == made[::-1] and listed()["next_cursor"] is None


def test_listing_status_follows_the_session_through_park_and_resume(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    sid = start(h, T0, "Email Bob")
    # The park-token step loads only the header and interrupts; its commit keeps the status.
    assert h.tokens and listed()["sessions"][0]["status"] == "interrupted"
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": False})
    assert [(r["session_id"], r["status"]) for r in listed()["sessions"]] == [(sid, "done")]


def test_filters_agent_status_and_top_level(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    done = start(h, T0, "say hi")
    parked = start(h, T0 + 1, "Email Bob")
    h.store.put_agent("dev", "helper", {"llm": {"provider": "scripted", "script": []}})
    child = SessionState.new("dev", "child-1", "helper", now=T0 + 2, identity={"id": "user-1"}, ancestry=[parked])
    start_session(child, AgentConfig())
    h.store.commit(child)
    assert ids(listed()) == ["child-1", parked, done]
    assert ids(listed({"agent_id": "helper"})) == ["child-1"]
    assert ids(listed({"status": "interrupted"})) == [parked]
    assert ids(listed({"status": "done", "agent_id": "assistant"})) == [done]
    assert ids(listed({"top_level": "true"})) == [parked, done]
    assert ids(listed({"top_level": "false"})) == ["child-1"]
    assert listed({"status": "idle", "agent_id": "assistant"})["sessions"] == []


def test_filtered_pages_stay_full_and_resume_after_the_last_row(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    made = [start(h, T0 + i, "Email Bob" if i % 2 else "say hi") for i in range(6)]
    parked = [sid for i, sid in enumerate(made) if i % 2][::-1]
    page = listed({"status": "interrupted", "limit": "2"})
    assert ids(page) == parked[:2]
    rest = listed({"status": "interrupted", "limit": "2", "cursor": page["next_cursor"]})
    assert ids(rest) == parked[2:]


def test_another_tenant_sees_none_of_them(api: dict[str, str]) -> None:
    start(Harness(tenant="dev"), T0)
    assert listed(tenant="other") == {"sessions": [], "next_cursor": None}


def test_a_cursor_is_bound_to_its_tenant_and_refused_if_altered(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    for i in range(3):
        start(h, T0 + i)
    cursor = listed({"limit": "1"})["next_cursor"]
    Harness(tenant="other")
    assert_error(*call_api("GET", "/v1/sessions", query={"cursor": cursor}, tenant="other"), 400, param="cursor")
    assert_error(*call_api("GET", "/v1/sessions", query={"cursor": cursor[:-2] + "xx"}), 400, param="cursor")
    inbox_cursor = signing.seal("inbox-cursor", {"tenant": "dev", "at": {"PK": {"S": "x"}}})
    assert_error(*call_api("GET", "/v1/sessions", query={"cursor": inbox_cursor}), 400, param="cursor")


def test_a_client_token_lists_only_its_own_sessions(api: dict[str, str]) -> None:
    h = Harness(tenant="dev")
    token = Caller("dev", "alice", "client", own_only=True)
    mine = start(h, T0, caller=token)
    start(h, T0 + 1, caller=Caller("dev", "bob", "client", own_only=True))
    start(h, T0 + 2, caller=Caller("dev", "alice", "client"))  # the API key `alice`: not the end user's
    out = sessions.listing(h.store, signing, token, 50, None, SessionFilters())
    assert ids(out) == [mine]
    bound = Caller("dev", "alice", "client", session_id="elsewhere", own_only=True)
    assert sessions.listing(h.store, signing, bound, 50, None, SessionFilters())["sessions"] == []


@pytest.mark.parametrize(("query", "param"), [
    ({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"limit": "many"}, "limit"),
    ({"status": "sleeping"}, "status"), ({"top_level": "maybe"}, "top_level"),
    ({"agent_id": "no spaces"}, "agent_id"), ({"cursor": "garbage"}, "cursor"),
])
def test_bad_query_parameters_are_400_naming_them(api: dict[str, str], query: dict[str, str], param: str) -> None:
    start(Harness(tenant="dev"), T0)
    items = table_items()
    assert_error(*call_api("GET", "/v1/sessions", query=query), 400, param=param)
    assert table_items() == items


def test_the_index_row_changes_only_when_the_status_does(api: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps the listing cheap: every commit rewrites the header, but the `Sessions` GSI keys
    never change and the projected row only with the status, so DynamoDB writes the index once
    per status change (4 times in the seed scenario), not once per commit."""
    from holdpoint.aws.ddb import commit as commit_module

    rows: list[tuple[Any, ...]] = []
    listing = commit_module.listing_attrs

    def recording(state: SessionState, status: str) -> dict[str, Any]:
        out = listing(state, status)
        rows.append(tuple(sorted((k, str(v)) for k, v in out.items())))
        return out

    monkeypatch.setattr(commit_module, "listing_attrs", recording)
    h = Harness(tenant="dev")
    start(h, T0, "Email Bob")
    h.resume(h.open_interrupt()["interrupt_id"], {"approved": True})
    changes = [row for before, row in zip([None, *rows], rows, strict=False) if row != before]
    assert len(rows) >= 10 and [dict(row)["status"] for row in changes] == [
        str({"S": s}) for s in ("running", "interrupted", "running", "done")]
    assert len({(dict(row)["GSI2PK"], dict(row)["GSI2SK"]) for row in rows}) == 1
