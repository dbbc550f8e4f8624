"""What Holdpoint delivers to an external run's target when its approvals close (PROTOCOL.md §10):
the runs bridge builds it with these models, and the SDK reads it with the same ones (which is why
they are the core's: the SDK ships `holdpoint.core`). Open models: a receiver built today keeps
reading a delivery that grows a field."""

# No `from __future__ import annotations` (see protocols/client.py).
from typing import Any, Literal

from holdpoint.core.edits import arguments_to_run
from holdpoint.core.protocols import Open

Verdict = Literal["approved", "denied", "cancelled", "answered"]


class RunAnswer(Open):
    """One closed interrupt, as `interrupt.resumed` tells a worker of it (PROTOCOL.md §2.3.1)."""

    interrupt_id: str
    reason: str
    action: dict[str, Any] | None = None
    payload: Any = None
    verdict: Verdict
    responder: dict[str, Any] | None = None
    channel: str | None = None
    expired: bool = False
    approvals: list[dict[str, Any]] = []
    receipt: str | None = None  # the signed approval receipt (PROTOCOL.md, "Approval receipts")
    edit: dict[str, Any] | None = None  # A3: the approver's edit, as `interrupt.resumed` carries it

    @property
    def approved(self) -> bool:
        """Only an explicit approval approves; what cannot be read as one does not (fails closed)."""
        return self.verdict == "approved"

    def arguments_for(self, asked: Any) -> Any:
        """The arguments to run the approved action with: the approver's edit, else those asked."""
        return arguments_to_run(self.edit, asked)


class RunDelivery(Open):
    """One delivery: the run's answers (one, or its whole batch) and the state it left with Holdpoint."""

    delivery_id: str
    type: Literal["run.answers"]
    tenant: str
    agent_id: str
    run_id: str
    session_id: str
    answers: list[RunAnswer]
    state: Any = None

    def answer(self, interrupt_id: str) -> RunAnswer | None:
        return next((a for a in self.answers if a.interrupt_id == interrupt_id), None)
