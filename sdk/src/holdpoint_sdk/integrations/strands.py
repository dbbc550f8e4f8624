"""Strands Agents (strands-agents 1.60 and later): a guarded tool's call waits for a person.

`HoldpointApprovals(["send_email"])` is a hook provider: before a guarded tool runs, it raises
Strands' own interrupt, so the run ends with `stop_reason == "interrupt"`. `ask(result, ...)`
raises those interrupts in Holdpoint as one run, with what resuming needs in the run's state. The
agent's session manager keeps the run; the process may end. When the answers come back (a
delivery, `holdpoint_sdk.runs`), `resume(agent, delivery)` continues the agent rebuilt with the same
session manager, agent id, tools and hook: an approved call runs with the approved arguments (the
approver's edit, if they made one), any other is cancelled with the person's answer as the tool's
error, which the model reads. Given the deployment's key set (`jwks=`, `Client.jwks()`), the hook
also refuses a call whose answer's receipt does not verify for that tool and those arguments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from strands import Agent
from strands.agent import AgentResult
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.types.interrupt import InterruptResponse, InterruptResponseContent

from holdpoint_sdk import runs
from holdpoint_sdk.client import Client
from holdpoint_sdk.runs import Ask, RunAnswer, RunDelivery

INTERRUPT = "holdpoint-approval"
"""The name of the interrupt the hook raises (Strands keeps one per name and tool call)."""


class HoldpointApprovals(HookProvider):
    """Interrupts the run before each call of a guarded tool, and on resume lets it run only if
    the person approved, with the arguments they approved."""

    def __init__(self, tools: Iterable[str], *, jwks: Mapping[str, Any] | None = None) -> None:
        self.tools, self.jwks = frozenset(tools), jwks

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self._before_tool)

    def _before_tool(self, event: BeforeToolCallEvent) -> None:
        use = event.tool_use
        if use["name"] not in self.tools:
            return
        answer = event.interrupt(INTERRUPT, reason={"tool": use["name"], "input": use["input"]})
        checked = RunAnswer.model_validate(answer) if isinstance(answer, Mapping) else None
        try:
            use["input"] = runs.approved_arguments(checked, use["name"], use["input"], self.jwks)
        except runs.NotApproved as refused:
            event.cancel_tool = str(refused)


def holdpoint_id(strands_id: str) -> str:
    """A Holdpoint interrupt id for a Strands one (which may be longer than an id may be)."""
    return "strands-" + hashlib.sha256(strands_id.encode()).hexdigest()[:40]


def ask(result: AgentResult, client: Client, *, run_id: str, agent_id: str, target: str | None,
        session: Mapping[str, Any] | None = None, **asked: Any) -> dict[str, Any] | None:
    """Raise the run's pending approvals in Holdpoint (None when it asked for none). `session`
    is kept in the run's state for the resuming side (say, the session manager's id); `asked`
    sets each approval's `expires_in`, `on_expiry`, `approval` or `reason`. A retry is a no-op."""
    pending = [i for i in result.interrupts or [] if i.name == INTERRUPT]
    if result.stop_reason != "interrupt" or not pending:
        return None
    asks = [Ask(interrupt_id=holdpoint_id(i.id), message=f"Allow {i.reason['tool']}?", tool=i.reason["tool"],
                arguments=i.reason["input"], **asked) for i in pending]
    state = {"framework": "strands", "session": dict(session or {}),
             "interrupts": {holdpoint_id(i.id): i.id for i in pending}}
    return runs.ask(client, run_id, agent_id, asks, target=target, deliver="all", state=state)


def responses(delivery: RunDelivery) -> list[InterruptResponseContent]:
    """The delivery as Strands' resume input: one `interruptResponse` per answer of this run."""
    ids = (delivery.state or {}).get("interrupts") or {}
    return [InterruptResponseContent(interruptResponse=InterruptResponse(
        interruptId=ids[a.interrupt_id], response=a.model_dump(mode="json"))) for a in delivery.answers
        if a.interrupt_id in ids]


def resume(agent: Agent, delivery: RunDelivery) -> AgentResult:
    """Continue the interrupted run with the people's answers."""
    return agent(responses(delivery))
