"""AWS's refusals under load, injected: a fault injector for the local stack and the tests.

It hooks botocore's `before-send` event, which fires once per HTTP attempt, after the request is
signed and before it goes out; a handler that returns a response there stands in for AWS's. So an
injected fault is seen by botocore's retry handler exactly as AWS's own would be: a throttle or a
5xx is retried under the client's retry configuration (holdpoint/aws/clients.py), and only a
burst longer than its attempts reaches Holdpoint's code. No handler or adapter is edited.

The answer is AWS's wire shape for the service's protocol (JSON: `__type`, `message`, the HTTP
status), so botocore raises a real `ClientError` with the right `Error.Code`, status and modeled
fields (a `TransactionCanceledException` carries its `CancellationReasons`, one per item).

Faults are chosen by service (boto3's name), operation, the Lambda function making the call (its
logical id, from the local runtime's `LocalFunction.invoke` on the calling thread's stack), and by count
(`first` N matching attempts, `every` Nth) or `probability` (a seeded RNG). Calls made outside a
handler (the test's own clients, the pollers standing in for event source mappings) are neither
faulted nor recorded unless `anywhere=True`. `stop()` ends every fault; `sites` is every
(function, service, operation) seen, for a discovery pass.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from .emulators.runtime import LocalFunction


@dataclass(frozen=True)
class Refusal:
    """One of AWS's refusals: its code, HTTP status and message."""

    code: str
    status: int
    message: str


REFUSALS: dict[str, Refusal] = {r.code: r for r in (
    Refusal("ThrottlingException", 400, "Rate exceeded"),
    Refusal("InternalServerError", 500, "Internal server error"),
    Refusal("ServiceUnavailable", 503, "Service unavailable"),
    Refusal("ProvisionedThroughputExceededException", 400, "The level of configured provisioned throughput "
            "for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."),
    Refusal("RequestLimitExceeded", 400, "Throughput exceeds the current throughput limit for your account."),
    Refusal("TransactionConflict", 400, "Transaction cancelled, please refer cancellation reasons for specific "
            "reasons"),
    Refusal("ExecutionLimitExceeded", 400, "The maximum number of running executions has been reached."),
    Refusal("TaskTimedOut", 400, "Task Timed Out"),
    Refusal("InvalidToken", 400, "Invalid Token"),
    Refusal("TooManyRequestsException", 429, "Too many requests have been made to the operation."),
    Refusal("MessageRejected", 400, "The message can't be sent."),
)}
"""By code. `TransactionConflict` is a cancellation reason: it answers `TransactionCanceledException`.
`MessageRejected` is SES refusing the message itself (never load): injected by name only."""

COMMON = ("ThrottlingException", "InternalServerError", "ServiceUnavailable")
"""What every service Holdpoint calls may answer under load."""
ONLY = {"dynamodb": ("ProvisionedThroughputExceededException", "RequestLimitExceeded"),
        ("dynamodb", "TransactWriteItems"): ("TransactionConflict",),
        ("stepfunctions", "StartExecution"): ("ExecutionLimitExceeded",),
        ("stepfunctions", "SendTaskSuccess"): ("TaskTimedOut", "InvalidToken"),
        ("sesv2", "SendEmail"): ("TooManyRequestsException",)}
"""The refusals only some services or operations give."""

_INVOKE = LocalFunction.invoke.__code__
_SERVICE = {"sfn": "stepfunctions", "secrets-manager": "secretsmanager", "eventbridge": "events"}
"""botocore's event names (hyphenized service ids) to boto3's service names."""
_PREFIX = {"dynamodb": "com.amazonaws.dynamodb.v20120810", "sqs": "com.amazonaws.sqs",
           "stepfunctions": "com.amazonaws.states", "secretsmanager": "com.amazonaws.secretsmanager",
           "events": "com.amazonaws.eventbridge"}


def refusals_for(service: str, operation: str) -> tuple[str, ...]:
    """The codes AWS answers this call with under load."""
    return COMMON + ONLY.get(service, ()) + ONLY.get((service, operation), ())


@dataclass
class Rule:
    """Which calls fail and how; `first`, `every` and `probability` count matching attempts."""

    service: str
    operation: str | None
    code: str
    function: str | None = None
    first: int = 0
    every: int = 0
    probability: float = 0.0
    seen: int = 0
    fired: int = 0

    def matches(self, function: str | None, service: str, operation: str) -> bool:
        return (self.service == service and self.operation in (None, operation)
                and self.function in (None, function))

    def fires(self, rng: random.Random) -> bool:
        self.seen += 1
        if self.first:
            hit = self.seen <= self.first
        elif self.every:
            hit = self.seen % self.every == 0
        else:
            hit = rng.random() < self.probability
        self.fired += hit
        return hit


class _Body:
    """The raw stream botocore reads a response body from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data

    def read(self, *_: Any) -> bytes:
        data, self.data = self.data, b""
        return data


def answer(service: str, code: str, request: Any) -> AWSResponse:
    """AWS's JSON-protocol answer refusing `request` with `code`."""
    refusal = REFUSALS[code]
    body: dict[str, Any] = {"__type": f"{_PREFIX.get(service, service)}#{code}", "message": refusal.message}
    if code == "TransactionConflict":
        items = json.loads(request.body or b"{}").get("TransactItems") or [{}]
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
        reasons += [{"Code": "None"}] * (len(items) - 1)
        body = {"__type": f"{_PREFIX['dynamodb']}#TransactionCanceledException",
                "Message": f"{refusal.message} [{', '.join(r['Code'] for r in reasons)}]",
                "CancellationReasons": reasons}
    data = json.dumps(body).encode()
    headers = {"x-amzn-RequestId": str(uuid.uuid4()), "Content-Type": "application/x-amz-json-1.0",
               "Content-Length": str(len(data))}
    return AWSResponse(request.url, refusal.status, headers, _Body(data))


def calling_function() -> str | None:
    """The logical id of the local Lambda function being invoked on this thread: the nearest
    `LocalFunction.invoke` frame on the stack (the handler itself may be defined in the layer)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _INVOKE:
            return str(frame.f_locals["self"].name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


class Faults:
    """The injector: install it on the session the clients are built from, then add rules."""

    def __init__(self, seed: int = 0, *, anywhere: bool = False) -> None:
        self.rng = random.Random(seed)
        self.anywhere = anywhere
        self.rules: list[Rule] = []
        self.sites: Counter[tuple[str | None, str, str]] = Counter()
        self.injected: Counter[tuple[str | None, str, str, str]] = Counter()
        self._lock = threading.Lock()
        self._emitters: list[Any] = []

    def install(self, session: Any = None) -> Faults:
        """Hook the session's clients built from now on (boto3's default session by default)."""
        session = session or boto3.DEFAULT_SESSION or boto3.setup_default_session() or boto3.DEFAULT_SESSION
        return self.attach(session)

    def attach(self, target: Any) -> Faults:
        """Hook one client (`client.meta.events`) or one boto3/botocore session."""
        events = target.meta.events if hasattr(target, "meta") else target.events
        events.register_first("before-send", self._before_send, unique_id=f"holdpoint-faults-{id(self)}")
        self._emitters.append(events)
        return self

    def uninstall(self) -> None:
        for events in self._emitters:
            events.unregister("before-send", unique_id=f"holdpoint-faults-{id(self)}")
        self._emitters.clear()

    def inject(self, service: str, operation: str | None, code: str, **how: Any) -> Rule:
        """Fail matching calls with AWS's `code`: `first=N`, `every=N` or `probability=p`
        (and `function=` a logical id)."""
        if code not in REFUSALS:
            raise ValueError(f"unknown refusal {code}; one of {sorted(REFUSALS)}")
        rule = Rule(service, operation, code, **how)
        with self._lock:
            self.rules.append(rule)
        return rule

    def stop(self) -> None:
        """No more faults (the rules are dropped; calls are still recorded)."""
        with self._lock:
            self.rules.clear()

    def _before_send(self, request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
        parts = event_name.split(".")
        if len(parts) < 3:
            return None
        service, operation = _SERVICE.get(parts[1], parts[1]), parts[2]
        function = calling_function()
        if function is None and not self.anywhere:
            return None
        with self._lock:
            self.sites[(function, service, operation)] += 1
            for rule in self.rules:
                if rule.matches(function, service, operation) and rule.fires(self.rng):
                    self.injected[(function, service, operation, rule.code)] += 1
                    return answer(service, rule.code, request)
        return None
