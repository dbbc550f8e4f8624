"""Holdpoint's Python SDK (sdk/README.md).

- `client`: the HTTP API's client (the standard library only), and `cli` the `holdpoint` command;
- `runs`: approvals for a run Holdpoint does not execute: raise them, read the answers delivered;
- `worker`: a worker's side of the decision protocol, served as a Lambda, an ASGI app or an SQS consumer;
- `integrations`: Strands Agents, LangGraph, the OpenAI Agents SDK, Step Functions and Lambda
  durable functions, each an optional extra.

Nothing is imported here, so the command loads only the client.
"""
