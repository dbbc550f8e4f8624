"""Approvals for a run Holdpoint does not execute (PROTOCOL.md §10).

A run asks (`ask`): each approval is parked in Holdpoint and answered on any channel, and the
run's process may end. When they close, Holdpoint delivers the answers to a target the agent
declares; this module reads a delivery wherever it arrives (a signed POST, an SQS message, a
Lambda event), checks it, and hands each delivery id to its handler once (`Deliveries`).

The bodies are the server's own models (`holdpoint.core.protocols`), so what the SDK sends is
checked as the server checks it, before it leaves.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from holdpoint.core import signatures
from holdpoint.core.protocols.client import RunInterruptsBody
from holdpoint.core.protocols.runs import RunAnswer, RunDelivery
from holdpoint_sdk.client import Client
from holdpoint_sdk.receipts import ReceiptRefused, verify_receipt

__all__ = ["Ask", "Deliveries", "DeliveryRefused", "FileSeen", "MemorySeen", "NotApproved", "RunAnswer", "RunDelivery",
           "approved_arguments", "ask"]
MAX_DELIVERY_BYTES = 4 * 1_048_576
"""A delivery holds at most 20 answers and a 128 KiB state; anything far larger is not one."""


@dataclass(frozen=True)
class Ask:
    """One approval a run asks for: the question a person reads and, for an approval of an
    action, the tool and arguments it approves (fingerprinted by Holdpoint, A3)."""

    interrupt_id: str
    message: str
    tool: str | None = None
    arguments: Any = None
    reason: str = "approval"
    details: Mapping[str, Any] = field(default_factory=dict)
    expires_in: int | None = None
    on_expiry: str | None = None
    approval: Mapping[str, Any] | None = None
    response_schema: Mapping[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"interrupt_id": self.interrupt_id, "reason": self.reason,
                               "payload": {"message": self.message, **self.details}}
        if self.tool is not None:
            out["action"] = {"tool": self.tool, "arguments": self.arguments}
        optional = {"expires_in": self.expires_in, "on_expiry": self.on_expiry, "approval": self.approval,
                    "response_schema": self.response_schema}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


def ask(client: Client, run_id: str, agent_id: str, asks: Sequence[Ask], *, target: str | None = None,
        deliver: str | None = None, state: Any = None, callback: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Raise the run's approvals; a retry raises nothing twice. `target` names one of the agent's
    `run_targets` (None: the run reads its answers with `Client.run`), `state` is handed back with
    the answers, `callback` is the wait a `step_functions` or `durable_function` target completes."""
    body = RunInterruptsBody.model_validate({
        "agent_id": agent_id, "target": target, "deliver": deliver, "state": state,
        "callback": dict(callback) if callback else None, "interrupts": [a.wire() for a in asks]})
    return client.raise_run(run_id, body.model_dump(mode="json", exclude_none=True, by_alias=True))


def refusal(answer: RunAnswer | None) -> str:
    """What a refused call tells the model: who answered, how, and what they said; or, for an
    answer that cannot be read as one, that it was not approved (fails closed)."""
    if answer is None:
        return "not approved: no answer Holdpoint gave could be read as an approval"
    who = (answer.responder or {}).get("subject")
    how = "expired" if answer.expired else f"{answer.verdict}{f' by {who}' if who else ''}"
    said = next((a["comment"] for a in reversed(answer.approvals) if a.get("comment")), None)
    if said is None and isinstance(answer.payload, dict) and isinstance(answer.payload.get("comment"), str):
        said = answer.payload["comment"]
    return f"not approved: {how}" + (f" ({said})" if said else "")


class NotApproved(Exception):  # noqa: N818 - what an integration catches: the call must not run
    """The call must not run: its answer does not approve it, or (with a key set) its receipt does
    not prove that this exact call was approved. The message is what the model is told."""


def approved_arguments(answer: RunAnswer | None, tool: str, proposed: Any,
                       jwks: Mapping[str, Any] | None = None) -> Any:
    """The arguments an approved call runs with: the approver's edit if they made one, else the
    ones `proposed`. Every integration asks this before it lets a call run, so one rule decides.
    With `jwks` (the deployment's key set, `Client.jwks()`), the answer's receipt must verify for
    `tool` and exactly those arguments: a missing, altered or borrowed receipt refuses the call."""
    if answer is None or not answer.approved:
        raise NotApproved(refusal(answer))
    arguments = answer.arguments_for(proposed)
    if jwks is None:
        return arguments
    if not answer.receipt:
        raise NotApproved("not approved: the answer carries no receipt to prove it")
    try:
        verify_receipt(answer.receipt, {"tool": tool, "arguments": arguments}, jwks)
    except ReceiptRefused as problem:
        raise NotApproved(f"not approved: the receipt does not prove this call ({problem})") from None
    return arguments


class DeliveryRefused(ValueError):
    """Not a delivery from Holdpoint: a bad signature, a stale timestamp, or a body of another shape."""


def delivery(body: bytes | str | Mapping[str, Any]) -> RunDelivery:
    """A delivery's body, read with the server's model."""
    try:
        data = json.loads(body) if isinstance(body, bytes | str) else dict(body)
        return RunDelivery.model_validate(data)
    except (ValueError, ValidationError) as exc:
        raise DeliveryRefused(f"not a run delivery: {str(exc)[:300]}") from None


def verified(body: bytes, headers: Mapping[str, str], secret: str, now: float | None = None) -> RunDelivery:
    """A `url` target's POST: its signature checked (PROTOCOL.md §2.7), then its body read."""
    lower = {k.lower(): v for k, v in headers.items()}
    stamp = lower.get(signatures.TIMESTAMP_HEADER.lower(), "")
    signature = lower.get(signatures.SIGNATURE_HEADER.lower(), "")
    if not signatures.verify(secret, stamp, body, signature, time.time() if now is None else now):
        raise DeliveryRefused("the delivery's signature does not verify (is the secret the same on both sides?)")
    return delivery(body)


def from_sqs_event(event: Mapping[str, Any]) -> list[RunDelivery]:
    """The deliveries of an SQS-triggered Lambda's event (a `queue` target's messages)."""
    return [delivery(record["body"]) for record in event.get("Records", [])]


class Seen(Protocol):
    """Where a receiver records the delivery ids it took, so a repeat is handed to no one."""

    def claim(self, delivery_id: str) -> bool: ...

    def release(self, delivery_id: str) -> None: ...


class MemorySeen:
    """One process's record (a single long-running receiver)."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def claim(self, delivery_id: str) -> bool:
        with self._lock:
            if delivery_id in self._ids:
                return False
            self._ids.add(delivery_id)
            return True

    def release(self, delivery_id: str) -> None:
        with self._lock:
            self._ids.discard(delivery_id)


class FileSeen:
    """A record every process on this machine shares: one file per id, created exclusively, so two
    receivers handed the same delivery at once cannot both take it."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, delivery_id: str) -> Path:
        if not delivery_id.replace("_", "").isalnum():
            raise DeliveryRefused(f"delivery_id {delivery_id[:80]!r} is not one Holdpoint makes")
        return self.directory / delivery_id

    def claim(self, delivery_id: str) -> bool:
        try:
            os.close(os.open(self._path(delivery_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        return True

    def release(self, delivery_id: str) -> None:
        self._path(delivery_id).unlink(missing_ok=True)


Handler = Callable[[RunDelivery], None]


class Deliveries:
    """Hands each delivery to `handle` once: a repeat (Holdpoint delivers at least once) is
    dropped; a handler that fails releases the id, so the retry Holdpoint makes is taken again."""

    def __init__(self, handle: Handler, seen: Seen | None = None) -> None:
        self.handle, self.seen = handle, seen or MemorySeen()

    def take(self, one: RunDelivery) -> bool:
        """True when this call handled it, False for a repeat."""
        if not self.seen.claim(one.delivery_id):
            return False
        try:
            self.handle(one)
        except BaseException:
            self.seen.release(one.delivery_id)
            raise
        return True

    def take_all(self, many: Iterable[RunDelivery]) -> int:
        return sum(1 for one in many if self.take(one))

    def sqs_handler(self) -> Callable[[Mapping[str, Any], Any], dict[str, Any]]:
        """A Lambda handler for a `queue` target's SQS trigger; a failed record is reported back
        (`ReportBatchItemFailures`) so SQS redelivers only it."""

        def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
            failures = []
            for record in event.get("Records", []):
                try:
                    self.take(delivery(record["body"]))
                except Exception:  # noqa: BLE001 - SQS retries the record; its error is the handler's log
                    failures.append({"itemIdentifier": record.get("messageId")})
            return {"batchItemFailures": failures}

        return handler

    def lambda_handler(self) -> Callable[[Mapping[str, Any], Any], None]:
        """A Lambda handler for a `lambda` target (invoked asynchronously with the delivery as its event)."""

        def handler(event: Mapping[str, Any], context: Any) -> None:
            self.take(delivery(event))

        return handler

    def serve(self, secret: str, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
        """A `url` target: an HTTP server (started on a thread) that checks each POST's signature,
        answers 204 once handled (or a repeat), 401 unsigned, 400 malformed, 500 when the handler
        failed, so Holdpoint retries."""
        server = ThreadingHTTPServer((host, port), _receiver(self, secret))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def _receiver(deliveries: Deliveries, secret: str) -> type[BaseHTTPRequestHandler]:
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_DELIVERY_BYTES:
                return self._answer(413)
            body = self.rfile.read(size)
            try:
                one = verified(body, dict(self.headers), secret)
            except DeliveryRefused as exc:
                return self._answer(401 if "signature" in str(exc) else 400)
            try:
                deliveries.take(one)
            except Exception:  # noqa: BLE001 - answered 500: Holdpoint retries the delivery
                return self._answer(500)
            self._answer(204)

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return Receiver
