"""The A2A bridge (PROTOCOL.md §8): an agent's A2A 1.0 server, its Agent Card and its JSON-RPC
endpoint. A context is a session, a task a turn, `TASK_STATE_INPUT_REQUIRED` a turn parked on
open interrupts, and a task's push configs are deliveries of the notifier.

`models` (the JSON-RPC request and each method's params) and `translation` (requests in, tasks
out) are pure; `service` is the use cases; `routes` is the protocols function's edge. Outside the
bridge: `routes`, and the names below (what the assembly wires into the notifier)."""

from holdpoint.bridges.a2a.service import PUSH_CHANNEL, Pushes

__all__ = ["PUSH_CHANNEL", "Pushes"]
