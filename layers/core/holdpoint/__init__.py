"""Holdpoint's engine, in layers (the folders are the architecture; docs/ARCHITECTURE.md draws it).

- `core`: the rules of sessions, trees, interrupts, calls and turns, and the wire protocol. Pure:
  no AWS, no network, no clock of its own (time comes in as an argument).
- `ports`: the interfaces the services need from the outside world (storage, queue, parking,
  timers, workers, LLMs, keys), as `typing.Protocol`s.
- `services`: the use cases (submit an input, read a view, resume, settle, run a step), written
  against the ports.
- `aws`: the AWS adapters behind the ports (DynamoDB, SQS, Step Functions, Secrets Manager).
- `outbound`: calls to endpoints tenants declare (workers), behind the network guard.
- `llm`: the LLM providers.
- `http`: the one HTTP edge the Lambda handlers share (caller, limits, errors to status codes).

Nothing is imported here, so a handler loads only the modules it uses.
"""
