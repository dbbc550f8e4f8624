"""The runs bridge (PROTOCOL.md §10): approvals for a run Holdpoint does not execute (an agent
framework's, a Step Functions task token, a Lambda durable function's callback), raised in a
session of the run's own and answered everywhere; when they close, the answers are delivered to a
target the agent declares, through the notifier's delivery path.

`translation` (a run's interrupts in, its deliveries out) is pure; its wire models are the core's
(`core/protocols/runs.py`: the SDK reads deliveries with them, and the SDK ships `holdpoint.core`);
`service` is the raise, the view and the deliveries a closing event starts; `channels` the
adapters that deliver to each kind of target; `routes` the API function's edge. Outside the
bridge: `routes`, and the names below (what the assembly wires into the notifier)."""

from holdpoint.bridges.runs.channels import channels as delivery_channels
from holdpoint.bridges.runs.service import RunDeliveries, chained

__all__ = ["RunDeliveries", "chained", "delivery_channels"]
