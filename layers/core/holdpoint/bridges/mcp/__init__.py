"""The MCP bridge (PROTOCOL.md §9): approvals as MCP tools, for an agent that is not on the
Holdpoint engine, over MCP 2026-07-28's stateless Streamable HTTP with the tasks extension. Each
caller has one approvals session per agent, and every approval is an interrupt raised in it.

`models` (the JSON-RPC request and the tools' arguments) and `translation` (approvals in, tool
results, tasks and elicitations out) are pure; `service` is the tools; `routes` is the protocols
function's edge, and the one module imported outside the bridge."""
