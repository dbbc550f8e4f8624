"""The AWS call sites the chaos suite reaches, and what a refusal at each does once its client's
retries give up: docs/OPERATIONS.md's table ("Failures AWS returns") is printed from this and the
sites a run of the suite records (`HOLDPOINT_CHAOS_SITES=sites.jsonl`, then
`.venv/bin/python -m tests.chaos.sites sites.jsonl`). The suite fails on a site it reaches that
has no line here, so the table cannot fall behind the code."""

from __future__ import annotations

import json
import sys
from collections import defaultdict

Site = tuple[str, str, str]

RETRIED_RECORD = "the record fails and SQS hands it back; the step is recomputed from the table"
STREAM = "the stream batch is retried (bisected, 5 retries, then NotifyDLQ's on-failure record)"
RESUBSCRIBE = ("`subscribe`: an error frame `throttled`/`unavailable` with `retry_after`, and the client "
               "subscribes again from its last seq")
GAP = ("the client sees the gap at its next event (or gets no `subscribed` frame) and subscribes again from its "
       "last seq; its keep-alive fills a gap at the log's end")

REFUSED: dict[Site, str] = {
    ("AuthorizerFunction", "dynamodb", "GetItem"): "503 with `Retry-After` (the API key, or the "
    "identity provider an issuer names)",
    ("AuthorizerFunction", "secretsmanager", "GetSecretValue"): "503 with `Retry-After` (the JWT key)",
    ("ApiFunction", "dynamodb", "GetItem"): "503 with `Retry-After`; nothing written",
    ("ApiFunction", "dynamodb", "BatchGetItem"): "503 with `Retry-After`; nothing written",
    ("ApiFunction", "dynamodb", "Query"): "503 with `Retry-After`; nothing written",
    ("ApiFunction", "dynamodb", "PutItem"): "503 with `Retry-After`; a conditional or whole-item write (an "
    "agent's declaration), so the resend writes it once",
    ("ApiFunction", "dynamodb", "UpdateItem"): "503 with `Retry-After`; every write is conditional, so the "
    "resend writes once",
    ("ApiFunction", "dynamodb", "DeleteItem"): "503 with `Retry-After` (a stream wait's lease, which expires "
    "by itself)",
    ("ApiFunction", "dynamodb", "TransactWriteItems"): "503 with `Retry-After`, nothing written; a "
    "`TransactionConflict` is retried by the commit loop, never a 409",
    ("ApiFunction", "sqs", "SendMessage"): "the kick after the commit is set as a one-time timer instead "
    "(202; the engine runs the input a second later)",
    ("ApiFunction", "scheduler", "CreateSchedule"): "(the kick's timer, after the queue refused the kick) 503 "
    "with `Retry-After` for a recorded input; the resend with the same `Idempotency-Key` or `turn_id` finds "
    "it and kicks again",
    ("ResumeFunction", "dynamodb", "GetItem"): "503 with `Retry-After`; nothing written",
    ("ResumeFunction", "dynamodb", "Query"): "503 with `Retry-After`; nothing written",
    ("ResumeFunction", "dynamodb", "BatchGetItem"): "503 with `Retry-After`; nothing written",
    ("ResumeFunction", "dynamodb", "UpdateItem"): "503 with `Retry-After`; the resend finds the interrupt as "
    "the first left it",
    ("ResumeFunction", "sqs", "SendMessage"): "503 after the resolve; the resend releases again (A4: `noop`, "
    "the wake sent again)",
    ("ResumeFunction", "stepfunctions", "SendTaskSuccess"): "503 after the wake; `InvalidToken`/`TaskTimedOut` "
    "is taken as done, and the execution's timeout sends a wake the engine finds applied",
    ("EngineFunction", "dynamodb", "Query"): RETRIED_RECORD,
    ("EngineFunction", "dynamodb", "GetItem"): RETRIED_RECORD,
    ("EngineFunction", "dynamodb", "BatchGetItem"): RETRIED_RECORD + " (a session read that missed the cache)",
    ("EngineFunction", "dynamodb", "UpdateItem"): RETRIED_RECORD + " (the park record's writes are conditional: "
    "the execution, a refusal, the task token each once, so a redelivered park message writes it once)",
    ("EngineFunction", "dynamodb", "PutItem"): RETRIED_RECORD,
    ("EngineFunction", "dynamodb", "DeleteItem"): RETRIED_RECORD + " (the park record of an interrupt that is "
    "gone, deleted on its token's condition)",
    ("EngineFunction", "dynamodb", "TransactWriteItems"): RETRIED_RECORD,
    ("EngineFunction", "sqs", "SendMessage"): RETRIED_RECORD + " (a kick or wake, deduplicated)",
    ("EngineFunction", "stepfunctions", "StartExecution"): RETRIED_RECORD + "; the named execution starts "
    "once. `ExecutionLimitExceeded`: a `ParkRetry` timer instead (\"Parking past the ceiling\")",
    ("EngineFunction", "stepfunctions", "SendTaskSuccess"): RETRIED_RECORD + " (a token that arrived after "
    "the resume)",
    ("EngineFunction", "scheduler", "CreateSchedule"): RETRIED_RECORD + "; the named schedule is created once",
    ("EngineFunction", "kms", "Sign"): RETRIED_RECORD + " (the wake, whose receipt is signed again); a refusal "
    "of the key itself (disabled, not granted) wakes the branch without a receipt (`receipts_unsigned`)",
    ("NotifierFunction", "dynamodb", "Query"): STREAM,
    ("NotifierFunction", "dynamodb", "GetItem"): STREAM + " (a delivery's record read again)",
    ("NotifierFunction", "dynamodb", "PutItem"): STREAM + "; the delivery's claim is conditional",
    ("NotifierFunction", "dynamodb", "UpdateItem"): "recording a failed attempt: its retry's timer is set "
    "anyway (the attempt begins from the record still `sending`); recording a delivery: " + STREAM
    + ", which starts nothing again",
    ("NotifierFunction", "events", "PutEvents"): STREAM,
    ("NotifierFunction", "scheduler", "CreateSchedule"): "a failed attempt's retry timer: " + STREAM
    + " (or the `notify` message comes back), and the redelivery sets the timer",
    ("NotifierFunction", "secretsmanager", "GetSecretValue"): STREAM + " (the links' signing key, read before "
    "anything is claimed)",
    ("NotifierFunction", "sesv2", "SendEmail"): "an email entry's attempt fails and is retried on a durable "
    "timer (the record `retrying`; the engine sends it then); `MessageRejected` is no load and dead-letters it",
    ("EngineFunction", "sesv2", "SendEmail"): "a retried email attempt fails and is retried on the next timer, "
    "then dead-lettered after the entry's last attempt",
    ("LiveFunction", "dynamodb", "PutItem"): "`$connect`: the handshake is refused with 503 (the caller's slot is "
    "given back when AWS lets it) and the client connects again; " + RESUBSCRIBE,
    ("LiveFunction", "dynamodb", "GetItem"): RESUBSCRIBE + " (the API key's check, the connection's item)",
    ("LiveFunction", "dynamodb", "Query"): "`$connect`: the handshake is refused with 503 (the caller's count); "
    + RESUBSCRIBE + " (a session's followers, its catch-up page)",
    ("LiveFunction", "dynamodb", "UpdateItem"): RESUBSCRIBE + "; following a session again sets the same item",
    ("LiveFunction", "dynamodb", "DeleteItem"): "`$disconnect`: the connection's items are left to their `ttl` "
    "(they stop counting then)",
    ("LiveFunction", "apigatewaymanagementapi", "PostToConnection"): "the frame is lost to that connection: " + GAP,
    ("EngineFunction", "apigatewaymanagementapi", "PostToConnection"): "a commit's events are lost to one "
    "follower: " + GAP,
    ("ApiFunction", "apigatewaymanagementapi", "PostToConnection"): "a commit's events are lost to one "
    "follower: " + GAP,
}


def table(rows: list[dict[str, object]]) -> str:
    """The Markdown table of the sites in `rows` (one per recorded site and scenario)."""
    scenarios: dict[Site, set[str]] = defaultdict(set)
    for row in rows:
        scenarios[(str(row["function"]), str(row["service"]), str(row["operation"]))].add(str(row["scenario"]))
    order = ["AuthorizerFunction", "ApiFunction", "ResumeFunction", "EngineFunction", "NotifierFunction",
             "LiveFunction"]
    lines = ["| function | call | scenarios | refused: what happens |", "| --- | --- | --- | --- |"]
    for site in sorted(scenarios, key=lambda s: (order.index(s[0]) if s[0] in order else 99, s[1], s[2])):
        function, service, operation = site
        lines.append(f"| {function.removesuffix('Function')} | {service} `{operation}` | "
                     f"{', '.join(sorted(scenarios[site]))} | {REFUSED.get(site, '(not described)')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as recorded:
        print(table([json.loads(line) for line in recorded if line.strip()]))
