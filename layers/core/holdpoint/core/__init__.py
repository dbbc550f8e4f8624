"""The pure core: session state, the message tree, the interrupt rules R1–R17, calls, turns,
budgets, sub-agents, proposals and the wire protocol's models.

No module here imports boto3, botocore, the network or a real clock (an import-linter contract
and ruff's banned-API rule check it): every function takes the time it needs as an argument, so
the rules are tested without AWS and replay identically.
"""
