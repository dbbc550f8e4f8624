"""Protocols Lambda: agents elsewhere over A2A and MCP (JSON-RPC 2.0): an agent's card, its tasks, approvals."""

from holdpoint.coldstart import loading

with loading():  # the handler's modules load without collector pauses (holdpoint/coldstart.py)
    from holdpoint.http.protocols_api import build, handler

    app = build()
    handler = handler(app)
