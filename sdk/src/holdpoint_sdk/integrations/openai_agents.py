"""The OpenAI Agents SDK (openai-agents 0.24 and later): a `needs_approval` tool waits for a person.

A run that stops for approvals has `result.interruptions`; `ask(result, ...)` raises them in
Holdpoint as one run and gives Holdpoint the run's `RunState` to hold, so neither the caller's
storage nor anyone with access to it can alter what will be resumed (the state is handed back
only to the agent's declared target). `resume(agent, delivery)` rebuilds the state on the same
agent, approves each call whose answer approves and rejects every other with the person's answer
as the rejection message, and runs it on. Holdpoint delivers each state once per answer batch, and
`holdpoint_sdk.runs.Deliveries` drops a repeated delivery: resuming one snapshot twice would run
its tools twice.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agents import Agent, Runner, RunResult, RunState

from holdpoint_sdk import runs
from holdpoint_sdk.client import Client
from holdpoint_sdk.runs import Ask, RunDelivery


def holdpoint_id(call_id: str) -> str:
    """A Holdpoint interrupt id for a tool call id (whatever the model made of it)."""
    return "openai-" + hashlib.sha256(call_id.encode()).hexdigest()[:40]


def ask(result: RunResult, client: Client, *, run_id: str, agent_id: str, target: str | None,
        **asked: Any) -> dict[str, Any] | None:
    """Raise the run's pending approvals in Holdpoint with its state (None when it asked for
    none). `asked` sets each approval's `expires_in`, `on_expiry`, `approval` or `reason`."""
    pending = list(result.interruptions)
    if not pending:
        return None
    asks = [Ask(interrupt_id=holdpoint_id(str(item.call_id)), message=f"Allow {item.name}?", tool=str(item.name),
                arguments=item.arguments, **asked) for item in pending]
    state = {"framework": "openai_agents", "run_state": result.to_state().to_json(),
             "interrupts": {holdpoint_id(str(item.call_id)): item.call_id for item in pending}}
    return runs.ask(client, run_id, agent_id, asks, target=target, deliver="all", state=state)


async def resume(agent: Agent[Any], delivery: RunDelivery) -> RunResult:
    """Continue the run Holdpoint held with the people's answers: an approval approves its call,
    anything else rejects it (an interruption with no answer is rejected too: fails closed)."""
    held = delivery.state or {}
    state: RunState[Any] = await RunState.from_json(agent, held["run_state"])
    by_call = {held["interrupts"].get(a.interrupt_id): a for a in delivery.answers}
    for item in state.get_interruptions():
        answer = by_call.get(item.call_id)
        if answer is not None and answer.approved:
            state.approve(item)
        else:
            state.reject(item, rejection_message=runs.refusal(answer))
    return await Runner.run(agent, state)
