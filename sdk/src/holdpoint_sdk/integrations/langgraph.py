"""LangGraph (langgraph 1.2 and later): a node or tool asks a person with `approval(...)`.

`approval(tool, arguments)` calls LangGraph's own `interrupt()`, so the run returns with
`__interrupt__`; `ask(result, ...)` raises those interrupts in Holdpoint as one run, with the
thread's config in the run's state. The graph's checkpointer keeps the thread; the process may
end. When an answer comes back (each as it closes, by default: LangGraph resumes interrupts one
by one), `resume(graph, delivery)` continues the thread with `Command(resume={id: answer})`, and
`approval` returns the answer: only one whose verdict is `approved` approves. `approved(...)` is
the same pause that returns the arguments to run with (the approver's edit, if they made one) and
raises `NotApproved` otherwise; given the key set (`jwks=`), it also checks the answer's receipt.

A node re-runs from its start on resume: keep side effects after `approval` returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.types import Command, Interrupt, interrupt

from holdpoint_sdk import runs
from holdpoint_sdk.client import Client
from holdpoint_sdk.runs import Ask, NotApproved, RunAnswer, RunDelivery

__all__ = ["MARK", "NotApproved", "approval", "approved", "ask", "command", "holdpoint_id", "resume"]

MARK = "holdpoint"
"""The key of an interrupt's value that says Holdpoint asks it (other interrupts are the graph's own)."""


def approval(tool: str, arguments: Any, message: str | None = None) -> RunAnswer | None:
    """Pause the graph for a person's answer on `tool(arguments)`; on resume, the answer (None
    when the value resumed with cannot be read as one, which approves nothing)."""
    value = interrupt({MARK: {"tool": tool, "arguments": arguments, "message": message or f"Allow {tool}?"}})
    try:
        return RunAnswer.model_validate(value) if isinstance(value, Mapping) else None
    except ValueError:
        return None


def approved(tool: str, arguments: Any, message: str | None = None, *,
             jwks: Mapping[str, Any] | None = None) -> Any:
    """Pause for a person's answer on `tool(arguments)`; on resume, the arguments to run the tool
    with, or `NotApproved` (its message is what to tell the model) when the call must not run."""
    return runs.approved_arguments(approval(tool, arguments, message), tool, arguments, jwks)


def holdpoint_id(langgraph_id: str) -> str:
    return f"langgraph-{langgraph_id}"


def _asked(result: Mapping[str, Any] | Sequence[Interrupt]) -> list[Interrupt]:
    found = result.get("__interrupt__", []) if isinstance(result, Mapping) else result
    return [i for i in found if isinstance(i.value, Mapping) and MARK in i.value]


def ask(result: Mapping[str, Any] | Sequence[Interrupt], client: Client, *, config: Mapping[str, Any],
        run_id: str, agent_id: str, target: str | None, deliver: str = "each", **asked: Any) -> dict[str, Any] | None:
    """Raise the thread's pending approvals (`graph.invoke`'s result, or its `__interrupt__`) in
    Holdpoint; None when none is pending. `config` is the thread's (`{"configurable": {"thread_id"}}`),
    kept in the run's state for `resume`. A retry is a no-op."""
    pending = _asked(result)
    if not pending:
        return None
    asks = [Ask(interrupt_id=holdpoint_id(i.id), message=i.value[MARK]["message"], tool=i.value[MARK]["tool"],
                arguments=i.value[MARK]["arguments"], **asked) for i in pending]
    ids = {holdpoint_id(i.id): i.id for i in pending}
    state = {"framework": "langgraph", "config": dict(config), "interrupts": ids}
    return runs.ask(client, run_id, agent_id, asks, target=target, deliver=deliver, state=state)


def command(delivery: RunDelivery) -> Command[Any]:
    """The delivery as LangGraph's resume: each answered interrupt's id mapped to its answer."""
    ids = (delivery.state or {}).get("interrupts") or {}
    return Command(resume={ids[a.interrupt_id]: a.model_dump(mode="json")
                           for a in delivery.answers if a.interrupt_id in ids})


def resume(graph: Any, delivery: RunDelivery) -> Any:
    """Continue the thread with the answers delivered (a compiled graph with the same checkpointer)."""
    return graph.invoke(command(delivery), (delivery.state or {})["config"])
