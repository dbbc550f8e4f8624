"""The FIFO work queue: one message group per session keeps a session's steps in order."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import boto3


def group_id(tenant: str, session_id: str) -> str:
    """FIFO group ids are at most 128 characters; a hash keeps any tenant/session pair valid."""
    return hashlib.sha256(f"{tenant}/{session_id}".encode()).hexdigest()[:40]


def parse_message(body: str) -> dict[str, Any]:
    """A work message as the engine receives it (a JSON object)."""
    out = json.loads(body)
    if not isinstance(out, dict):
        raise ValueError("work message is not an object")
    return out


class WorkQueue:
    def __init__(self, url: str | None = None, client: Any = None) -> None:
        self.url = url or os.environ["WORK_QUEUE_URL"]
        self.client = client or boto3.client("sqs")

    def kick(self, tenant: str, session_id: str, version: int) -> None:
        """Tell the engine a session has work due; the dedup id makes repeats at one version free."""
        body = {"kind": "kick", "tenant": tenant, "session_id": session_id}
        self.client.send_message(
            QueueUrl=self.url,
            MessageBody=json.dumps(body),
            MessageGroupId=group_id(tenant, session_id),
            MessageDeduplicationId=hashlib.sha256(f"kick/{tenant}/{session_id}/{version}".encode()).hexdigest(),
        )

    def wake(self, tenant: str, session_id: str, interrupt_id: str, dedup_key: str, generation: int) -> None:
        """Tell the engine a resolved interrupt's branch is to wake. The engine applies the answer
        the resume stored (the message carries only ids and the generation it is for), and one wake
        per interrupt generation (`dedup_key`) is all it acts on, so a repeat is a no-op."""
        body = {"kind": "wake", "outcome": "resumed", "tenant": tenant, "session_id": session_id,
                "interrupt_id": interrupt_id, "generation": generation}
        self.client.send_message(QueueUrl=self.url, MessageBody=json.dumps(body),
                                 MessageGroupId=group_id(tenant, session_id),
                                 MessageDeduplicationId=f"{dedup_key}-wake")
