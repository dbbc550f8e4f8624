"""The OpenAI Agents SDK (openai-agents 0.24 and later): a `needs_approval` tool waits for a person.

A run that stops for approvals has `result.interruptions`; `ask(result, ...)` raises them in
Holdpoint as one run and gives Holdpoint the run's `RunState` to hold, so neither the caller's
storage nor anyone with access to it can alter what will be resumed (the state is handed back
only to the agent's declared target). `resume(agent, delivery)` rebuilds the state on the same
agent, approves each call whose answer approves (with the approver's edited arguments written into
the held state, so the call runs with them and the model sees what ran) and rejects every other
with the person's answer as the rejection message, and runs it on. Given the key set (`jwks=`,
`Client.jwks()`), a call whose answer's receipt does not verify for it is rejected too. Holdpoint
delivers each state once per answer batch, and `holdpoint_sdk.runs.Deliveries` drops a repeated
delivery: resuming one snapshot twice would run its tools twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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


async def resume(agent: Agent[Any], delivery: RunDelivery, *, jwks: Mapping[str, Any] | None = None) -> RunResult:
    """Continue the run Holdpoint held with the people's answers: an approval approves its call,
    with the arguments approved; anything else rejects it (an interruption with no answer, or
    with `jwks` a receipt that does not verify, is rejected too: fails closed)."""
    held = delivery.state or {}
    state: RunState[Any] = await RunState.from_json(agent, held["run_state"])
    by_call = {held["interrupts"].get(a.interrupt_id): a for a in delivery.answers}
    approved: set[str] = set()
    refused: dict[str, str] = {}
    edited: dict[str, Any] = {}
    for item in state.get_interruptions():
        call, answer = str(item.call_id), by_call.get(item.call_id)
        try:
            arguments = runs.approved_arguments(answer, str(item.name), item.arguments, jwks)
        except runs.NotApproved as no:
            refused[call] = str(no)
            continue
        approved.add(call)
        if answer is not None and answer.edit is not None:
            edited[call] = arguments
    if edited:
        state = await RunState.from_json(agent, _with_arguments(held["run_state"], edited))
    for item in state.get_interruptions():
        if str(item.call_id) in approved:
            state.approve(item)
        else:
            state.reject(item, rejection_message=refused.get(str(item.call_id), runs.refusal(None)))
    return await Runner.run(agent, state)


def _with_arguments(held: Any, edited: Mapping[str, Any]) -> Any:
    """The held state with each edited call's arguments replaced wherever the state records the
    call (the model's output, the items, the step it stopped at), and the SDK's fingerprint of the
    call as the model proposed it dropped, so the edited call is recorded anew when approved."""
    if isinstance(held, list):
        return [_with_arguments(v, edited) for v in held]
    if not isinstance(held, dict):
        return held
    out = {k: _with_arguments(v, edited) for k, v in held.items()}
    if out.get("type") == "function_call" and out.get("call_id") in edited:
        out["arguments"] = json.dumps(edited[out["call_id"]])
    if isinstance(out.get("tool_invocations"), dict):
        out["tool_invocations"] = {k: v for k, v in out["tool_invocations"].items() if k not in edited}
    return out
