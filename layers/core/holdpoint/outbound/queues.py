"""SQS queues a tenant names: an SQS worker (`worker.queue`, PROTOCOL.md §2.1) and a run's `queue`
target (§10). Only queues of this deployment's account and region that the template's
`TenantQueueArnPattern` admits (both the IAM grant and this check; empty admits none), checked
where declared and again at every send."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import SdkFailure
from holdpoint.outbound.allowlists import allowed, here
from holdpoint.outbound.errors import QueueRefused

ALLOWLIST = "TENANT_QUEUE_ALLOWLIST"
_QUEUE_URL = re.compile(r"^https?://[^/\s]+/(\d{12})/([A-Za-z0-9_-]{1,75}(?:\.fifo)?)$")


def check_queue_url(url: object, field: str) -> str | None:
    """Why a queue may not be named, or None: a queue of this deployment's account, in its
    region, matching a pattern of `TENANT_QUEUE_ALLOWLIST` (ARNs; empty allows none)."""
    match = _QUEUE_URL.match(url) if isinstance(url, str) else None
    if match is None:
        return f"{field} must be an SQS queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)"
    account, name = match.groups()
    if account != os.environ.get("HOLDPOINT_ACCOUNT_ID"):
        return f"{field} must be a queue of this deployment's account"
    if not allowed(f"arn:aws:sqs:{here()}:{account}:{name}", ALLOWLIST):
        return f"{field} is not allowed by {ALLOWLIST}"
    return None


def send(url: str, field: str, body: Any, *, group: str, dedup: str,
         attributes: dict[str, str] | None = None) -> None:
    """One message, checked first; a FIFO queue gets `group` as its message group and `dedup` as
    its deduplication id (a retried send within five minutes is one message)."""
    why = check_queue_url(url, field)
    if why is not None:
        raise QueueRefused(why)
    params: dict[str, Any] = {"QueueUrl": url, "MessageBody": json.dumps(body, separators=(",", ":"))}
    if url.endswith(".fifo"):
        params.update(MessageGroupId=group[:128], MessageDeduplicationId=dedup[:128])
    if attributes:
        params["MessageAttributes"] = {k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()}
    try:
        with clients.sdk_failures():
            clients.sdk("sqs").send_message(**params)
    except SdkFailure as exc:
        raise QueueRefused(f"{field}: sqs SendMessage: {exc.code or exc.kind}: {exc.message}"[:512]) from exc
