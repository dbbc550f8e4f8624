"""The protocol bridges, a folder each: how agents elsewhere reach Holdpoint over their own
protocols (`a2a`, `mcp`, `agui`) and how Holdpoint answers runs it does not execute (`runs`).

A bridge holds the whole of its protocol, one module a level and layered as the package is: its
wire models and its translation (pure, over the core), its use cases (over the services and the
ports), and its routes (an HTTP edge). The core, the ports and the generic services import no
bridge, no bridge imports another, and outside a bridge only its package's own names (its
`__init__`) and its `routes` are imported (docs/ARCHITECTURE.md, "What the tools enforce")."""
