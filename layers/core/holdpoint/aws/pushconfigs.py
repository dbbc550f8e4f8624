"""A2A push notification configs (PROTOCOL.md §8) in the task's session partition, `D#A#{turn}#{id}`:
before the events and the state, so no session read ever sees them (as the delivery records,
`aws/deliveries.py`). A task's count item `D#AN#{turn}` holds how many it has: a new config is
put in one transaction with `ADD n 1` under `n < limit`, so concurrent creates cannot pass the cap,
and a delete takes its config and `ADD n -1` in one too. Each write is conditional: a config written
again unchanged writes nothing, one changed keeps its slot, a delete of one that is gone is a
no-op. They expire with the longest an interrupt can park (the count with the newest of them)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from typing import Any, Literal

from holdpoint.aws.ddb import schema
from holdpoint.aws.ddb.expr import AttributeValue, Item
from holdpoint.aws.ddb.schema import session_pk
from holdpoint.aws.ddb.table import Table
from holdpoint.aws.deliveries import POSTED_KEEP_SECS
from holdpoint.aws.errors import Cancelled, ConditionFailed
from holdpoint.core.push import PushRecord
from holdpoint.ports import Throttled

ATTEMPTS = 5
FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"
"""Another transaction wrote one of the items at the same moment: nothing was written, send it again."""

Created = Literal["created", "exists", "full", "interfered"]


def _s(value: str) -> AttributeValue:
    return {"S": value}


def _body(config: PushRecord) -> str:
    return json.dumps(config.body(), separators=(",", ":"), sort_keys=True)


def _reasons(exc: Cancelled) -> tuple[str, str]:
    """A cancelled transaction's codes for (the config, the count)."""
    codes = [*exc.reasons, "None", "None"]
    return codes[0], codes[1]


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0, 0.02 * 2 ** attempt))  # noqa: S311 - jitter, not a secret


class PushConfigLog:
    """`ports.PushConfigs` on the single table."""

    def __init__(self, table: str | None = None, client: Any = None) -> None:
        self.table = table or os.environ["TABLE_NAME"]
        self.db = Table(self.table, client)
        self.client = self.db.client

    def _key(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> Item:
        return {"PK": _s(session_pk(tenant, session_id)), "SK": _s(schema.push_config_sk(turn_id, config_id))}

    def _count_key(self, tenant: str, session_id: str, turn_id: str) -> Item:
        return {"PK": _s(session_pk(tenant, session_id)), "SK": _s(schema.push_count_sk(turn_id))}

    def put(self, tenant: str, session_id: str, turn_id: str, config: PushRecord, limit: int) -> bool:
        """Keep the config; False (nothing written) when it is new and the task holds `limit`."""
        for attempt in range(ATTEMPTS):
            created = self._create(tenant, session_id, turn_id, config, limit)
            if created != "interfered":
                if created != "exists":
                    return created == "created"
                if self._replace(tenant, session_id, turn_id, config):
                    return True
            _backoff(attempt)  # another write interfered, or the config went between the two writes
        raise Throttled("the push config kept changing under this write")

    def _create(self, tenant: str, session_id: str, turn_id: str, config: PushRecord, limit: int) -> Created:
        """Put a new config and take a slot, in one transaction."""
        ttl: AttributeValue = {"N": str(int(time.time()) + POSTED_KEEP_SECS)}
        item: Item = {**self._key(tenant, session_id, turn_id, config.id), "body": _s(_body(config)), "ttl": ttl}
        try:
            self.db.transact([
                {"Put": {"Item": item, "ConditionExpression": "attribute_not_exists(SK)"}},
                {"Update": {"Key": self._count_key(tenant, session_id, turn_id),
                            "UpdateExpression": "ADD n :one SET #ttl = :ttl",
                            "ConditionExpression": "attribute_not_exists(n) OR n < :limit",
                            "ExpressionAttributeNames": {"#ttl": "ttl"},
                            "ExpressionAttributeValues": {":one": {"N": "1"}, ":ttl": ttl,
                                                          ":limit": {"N": str(limit)}}}}])
        except Cancelled as exc:
            config_code, count_code = _reasons(exc)
            if config_code == FAILED:
                return "exists"
            if count_code == FAILED:
                return "full"
            if CONFLICT in (config_code, count_code):
                return "interfered"
            raise
        return "created"

    def _replace(self, tenant: str, session_id: str, turn_id: str, config: PushRecord) -> bool:
        """Change an existing config's body in its slot (its ttl kept, so the count outlives it);
        True when it is there (changed, or the same already), False when it is gone."""
        try:
            self.db.update(self._key(tenant, session_id, turn_id, config.id),
                           UpdateExpression="SET body = :body",
                           ConditionExpression="attribute_exists(SK) AND body <> :body",
                           ExpressionAttributeValues={":body": _s(_body(config))})
        except ConditionFailed as exc:
            return bool(exc.item)
        return True

    def get(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> PushRecord | None:
        item = self.db.get(self._key(tenant, session_id, turn_id, config_id))
        return PushRecord.of(json.loads(item["body"]["S"]), turn_id) if item else None

    def list(self, tenant: str, session_id: str, turn_id: str | None = None) -> list[PushRecord]:
        prefix = schema.push_configs_prefix(turn_id)
        items = self.db.query_all(
            ConsistentRead=True, KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
            ExpressionAttributeValues={":pk": _s(session_pk(tenant, session_id)), ":prefix": _s(prefix)})
        return [PushRecord.of(json.loads(item["body"]["S"]), schema.push_config_turn(item["SK"]["S"]))
                for item in items]

    def delete(self, tenant: str, session_id: str, turn_id: str, config_id: str) -> None:
        """Delete the config and give its slot back, in one transaction; a config that is gone is a
        no-op (a second delete gives nothing back)."""
        key = self._key(tenant, session_id, turn_id, config_id)
        for attempt in range(ATTEMPTS):
            try:
                self.db.transact([
                    {"Delete": {"Key": key, "ConditionExpression": "attribute_exists(SK)"}},
                    {"Update": {"Key": self._count_key(tenant, session_id, turn_id),
                                "UpdateExpression": "ADD n :minus", "ConditionExpression": "n > :zero",
                                "ExpressionAttributeValues": {":minus": {"N": "-1"}, ":zero": {"N": "0"}}}}])
                return
            except Cancelled as exc:
                config_code, count_code = _reasons(exc)
                if config_code == FAILED:
                    return
                if count_code == FAILED:
                    self._delete_uncounted(key)
                    return
                if CONFLICT not in (config_code, count_code):
                    raise
            _backoff(attempt)
        raise Throttled("the push config kept changing under this delete")

    def _delete_uncounted(self, key: Item) -> None:
        """A config no count holds (its count item expired before it was swept): delete it alone."""
        with contextlib.suppress(ConditionFailed):  # gone already
            self.db.delete(key, ConditionExpression="attribute_exists(SK)")
