"""A2A push notification configs (PROTOCOL.md §8) in the task's session partition, `D#A#{turn}#{id}`:
before the events and the state, so no session read ever sees them (as the delivery records,
`aws/deliveries.py`). Each write is conditional: a config written again unchanged writes nothing,
a delete of one that is gone is a no-op. They expire with the longest an interrupt can park."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from botocore.exceptions import ClientError

from holdpoint.aws import clients
from holdpoint.aws.deliveries import POSTED_KEEP_SECS
from holdpoint.aws.store import session_pk

PREFIX = "D#A#"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _body(config: dict[str, Any]) -> str:
    return json.dumps(config, separators=(",", ":"), sort_keys=True)


class PushConfigLog:
    """`ports.PushConfigs` on the single table."""

    def __init__(self, table: str | None = None, client: Any = None) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.client = client or clients.client("dynamodb")

    def _key(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> dict[str, Any]:
        return {"PK": _s(session_pk(tenant, session_id)), "SK": _s(f"{PREFIX}{turn_id}#{config_id}")}

    def put(self, tenant: str, session_id: str, turn_id: str, config: dict[str, Any]) -> None:
        """Write the config unless the same one is there already (a retried create writes nothing)."""
        item = {**self._key(tenant, session_id, turn_id, str(config["id"])), "body": _s(_body(config)),
                "ttl": {"N": str(int(time.time()) + POSTED_KEEP_SECS)}}
        try:
            self.client.put_item(TableName=self.table, Item=item,
                                 ConditionExpression="attribute_not_exists(SK) OR body <> :body",
                                 ExpressionAttributeValues={":body": item["body"]})
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> dict[str, Any] | None:
        got = self.client.get_item(TableName=self.table, Key=self._key(tenant, session_id, turn_id, config_id),
                                   ConsistentRead=True)
        item = got.get("Item")
        return {**json.loads(item["body"]["S"]), "turn_id": turn_id} if item else None

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[dict[str, Any]]:
        prefix = f"{PREFIX}{turn_id}#" if turn_id is not None else PREFIX
        out: list[dict[str, Any]] = []
        args: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :prefix)",
            "ExpressionAttributeValues": {":pk": _s(session_pk(tenant, session_id)), ":prefix": _s(prefix)}}
        while True:
            page = self.client.query(**args)
            for item in page.get("Items") or []:
                turn = item["SK"]["S"][len(PREFIX):].rpartition("#")[0]
                out.append({**json.loads(item["body"]["S"]), "turn_id": turn})
            if not page.get("LastEvaluatedKey"):
                return out
            args["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def delete(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> None:
        self.client.delete_item(TableName=self.table, Key=self._key(tenant, session_id, turn_id, config_id))
