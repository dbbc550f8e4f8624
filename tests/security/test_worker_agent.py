"""A worker replacing the config in force (`agent` in its answer) is held to what a tenant may
declare: the config is checked on arrival as `PUT /v1/agents` checks a declaration, and it may not
set `worker.python` (an in-process callable only code registers, which the API refuses from
tenants), whether it answers in its response body or through `POST /v1/workers/submit`. The
refused answer names the field and puts nothing in force; the callable it named never runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holdpoint import assembly
from holdpoint.aws.store import Store
from holdpoint.outbound import workers
from tests.security.test_declarations import SCRIPTED, TOOLS
from tests.stack import Api
from tests.unit.test_worker_submit import deferred_session, submit
from tests.waiting import wait_for


def swapping(agent: dict[str, Any]) -> Any:
    """A worker that answers `session.start` putting `agent`'s fields into the config in force."""

    def decide(req: dict[str, Any]) -> dict[str, Any]:
        proposed: dict[str, Any] = req["proposed"] or {}
        if req["trigger"]["type"] == "session.start":
            return {**proposed, "agent": {**(proposed.get("agent") or {}), **agent}}
        return proposed

    return decide


@pytest.fixture
def ran() -> Iterator[list[dict[str, Any]]]:
    """The requests the callable a worker tries to put in force (`worker.python: "hp-sec-evil"`) got."""
    calls: list[dict[str, Any]] = []
    workers.register("hp-sec-evil", lambda req: calls.append(req) or None)  # type: ignore[func-returns-value]
    yield calls


def test_code_execution_a_worker_answer_may_not_set_worker_python(api: Api, stack: Any,
                                                                   ran: list[dict[str, Any]]) -> None:
    """Over HTTP on the local stack (its engine runs in this process, so a registered callable is
    reachable): the answer fails its decision naming `agent.worker.python`, and the config in force
    stays the declared one."""
    workers.register("hp-sec-swap", swapping({"worker": {"python": "hp-sec-evil"}}))
    Store(stack.env["TABLE_NAME"]).put_agent(stack.tenant, "swap", {"llm": SCRIPTED, "tools": TOOLS,
                                                                    "worker": {"python": "hp-sec-swap"}})
    sid = api.ok("POST", "/v1/sessions", {"type": "client.message", "agent_id": "swap",
                                           "message": {"role": "user", "content": "say hi"}})["session_id"]
    [failed] = wait_for(lambda: [e for e in api.events(sid) if e["type"] == "decision.failed"],
                        "the worker's answer to fail its decision")
    assert failed["data"]["error"]["param"] == "agent.worker.python", failed
    assert api.view(sid)["agent"]["worker"] == {"python": "hp-sec-swap"}
    assert ran == []


@pytest.mark.parametrize(("agent", "param"), [
    ({"worker": {"python": "hp-sec-evil"}}, "agent.worker.python"),
    ({"tools": [{"name": "no spaces allowed"}]}, "agent.tools[0].name"),
    ({"worker": {"timeout_secs": 10_000}}, "agent.worker.timeout_secs"),
    ({"approval": {"quorum": 0}}, "agent.approval.quorum"),
    ("not an object", "agent"),
])
def test_code_execution_a_submitted_answer_may_not_set_what_a_tenant_may_not_declare(
        aws: dict[str, str], ran: list[dict[str, Any]], agent: Any, param: str) -> None:
    """`POST /v1/workers/submit`: 400 naming the field; the decision stays pending, nothing recorded."""
    assembly.reset()
    try:
        h, _, did = deferred_session()
        before = h.state()
        status, body = submit(h, did, {"agent": agent})
        assert status == 400 and body["error"]["param"] == param, body
        after = h.state()
        assert after.header.version == before.header.version and after.decisions[did].status == "pending"
        assert after.header.agent_item == before.header.agent_item
        assert ran == []
    finally:
        assembly.reset()
