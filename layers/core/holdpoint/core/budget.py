"""Cost budgets: crossing one raises a global system interrupt (R4); only a raised budget goes on."""

from __future__ import annotations

from typing import Any

from holdpoint.core import interrupts as rules
from holdpoint.core.state import SessionState

REASON = "budget_exceeded"


def limit(state: SessionState) -> float | None:
    if state.header.budget is not None:
        return state.header.budget
    configured = state.header.config().budget
    return configured.max_cost if configured is not None else None


def spent(state: SessionState) -> float:
    return float(state.header.usage.get("cost", 0.0))


def exceeded(state: SessionState) -> bool:
    cap = limit(state)
    return cap is not None and spent(state) >= cap


def check(state: SessionState, raised_by: str) -> None:
    """After recording a cost: at or over the budget, pause every branch until an operator resumes."""
    if not exceeded(state):
        return
    if any(i.reason == REASON and i.origin == "system" for i in state.open_interrupts()):
        return
    rules.raise_interrupt(state, interrupt_id=None, reason=REASON, payload={"spent": spent(state),
                                                                            "budget": limit(state)},
                          origin="system", anchor=None, expires_in=None, call_id=None,
                          turn_id=state.header.active_turn, raised_by=raised_by)


def apply_resume(state: SessionState, payload: Any) -> None:
    """An answer `{"budget": N}` (or `{"max_cost": N}`) raises the session's budget."""
    if not isinstance(payload, dict):
        return
    for key in ("budget", "max_cost"):
        value = payload.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            state.header.budget = float(value)
            state.emit("budget.raised", budget=float(value), spent=spent(state))
            return


def token_cost(prompt_tokens: float, completion_tokens: float, price_in: float, price_out: float) -> float:
    """What a call cost at the llm block's prices per 1,000 input and output tokens."""
    return round((prompt_tokens * price_in + completion_tokens * price_out) / 1000, 10)
