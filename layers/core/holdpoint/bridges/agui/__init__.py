"""The AG-UI bridge (PROTOCOL.md §7): an AG-UI client runs an agent on a thread (a session), a
run is a turn, an AG-UI interrupt a Holdpoint interrupt, answered with `resume[]`; and the
WebSocket's `format: "ag-ui"` (the same mapping, frame by frame).

`models` (`RunAgentInput`), `translation` (messages in, AG-UI events out) and `live` (the
WebSocket's `ag-ui` frames) are pure; `service` is the run and the connect; `routes` is the API
function's edge. Outside the bridge: `routes`, and `live_frames` (what the assembly gives
services.live as the `ag-ui` format)."""

from holdpoint.bridges.agui.live import live_frames

__all__ = ["live_frames"]
