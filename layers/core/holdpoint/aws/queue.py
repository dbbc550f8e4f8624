"""The FIFO work queue: one message group per session keeps a session's steps in order."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from holdpoint import tracing
from holdpoint.aws import clients
from holdpoint.core.errors import MessageError
from holdpoint.core.messages import Kick, Park, Wake, WorkMessage, body, parse

WIRE: dict[str, dict[str, str]] = {Park.KIND: {"token": "task_token"}}
"""By kind, the fields the queue carries under another key: a park's `token` is the `task_token`
ParkBranch's Park state writes (template.yaml, `$$.Task.Token`)."""


def group_id(tenant: str, session_id: str) -> str:
    """FIFO group ids are at most 128 characters; a hash keeps any tenant/session pair valid."""
    return hashlib.sha256(f"{tenant}/{session_id}".encode()).hexdigest()[:40]


def traced() -> dict[str, Any]:
    """The send's `AWSTraceHeader`: the hop in progress, so the engine's hop continues its trace
    (set explicitly, it wins over the one SQS would take from an X-Ray SDK's request header)."""
    header = tracing.outgoing()
    return {"MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": header}}} \
        if header else {}


def to_queue(message: WorkMessage) -> dict[str, Any]:
    """A work message as the JSON object the queue carries: its fields under the queue's keys."""
    keys = WIRE.get(message.KIND, {})
    return {keys.get(name, name): value for name, value in body(message).items()}


def from_queue(data: Mapping[str, Any]) -> WorkMessage:
    """The message a queue body holds, parsed once into its class (`MessageError` naming what is
    wrong): a field the queue carries under another key is read from that key alone."""
    kind = data.get("kind")
    keys = WIRE.get(kind, {}) if isinstance(kind, str) else {}
    fields = {key: name for name, key in keys.items()}
    return parse({fields.get(key, key): value for key, value in data.items() if key not in keys})


def parse_message(text: str) -> WorkMessage:
    """A work message as the engine receives it: a JSON object, parsed once into its class."""
    out = json.loads(text)
    if not isinstance(out, dict):
        raise MessageError("work message is not an object")
    return from_queue(out)


class WorkQueue:
    def __init__(self, url: str | None = None, client: Any = None) -> None:
        self.url = url or os.environ["WORK_QUEUE_URL"]
        self.client = client or clients.client("sqs")

    def kick(self, tenant: str, session_id: str, version: int) -> None:
        """Tell the engine a session has work due; the dedup id makes repeats at one version free."""
        self.client.send_message(
            QueueUrl=self.url,
            MessageBody=json.dumps(to_queue(Kick(tenant, session_id))),
            MessageGroupId=group_id(tenant, session_id),
            MessageDeduplicationId=hashlib.sha256(f"kick/{tenant}/{session_id}/{version}".encode()).hexdigest(),
            **traced(),
        )

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None:
        """Tell the engine a resolved interrupt's branch is to wake. The engine applies the answer
        the resume stored (the message carries only ids and the generation it is for), and one wake
        per interrupt generation (`dedup_key`) is all it acts on, so a repeat is a no-op."""
        self._send(Wake(tenant, session_id, interrupt_id, "resumed", generation), f"{dedup_key}-wake")

    def expire(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None:
        """The expiry's wake, as ParkBranch's Expire state sends it (the same deduplication id)."""
        self._send(Wake(tenant, session_id, interrupt_id, "expired", generation), f"{dedup_key}-expire")

    def _send(self, message: Wake, dedup: str) -> None:
        self.client.send_message(QueueUrl=self.url, MessageBody=json.dumps(to_queue(message)),
                                 MessageGroupId=group_id(message.tenant, message.session_id),
                                 MessageDeduplicationId=dedup, **traced())
