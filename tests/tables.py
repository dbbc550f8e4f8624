"""What a table holds, for tests that show a refused request recorded nothing."""

from __future__ import annotations

import os
from typing import Any


def count_items(ddb: Any, table: str, skip_sk_prefix: str | None = None) -> int:
    """Every item in `table` (a paged COUNT scan), but those whose sort key starts `skip_sk_prefix`."""
    count, kwargs = 0, {"TableName": table, "Select": "COUNT"}
    if skip_sk_prefix:
        kwargs.update(FilterExpression="NOT begins_with(SK, :p)",
                      ExpressionAttributeValues={":p": {"S": skip_sk_prefix}})
    while True:
        page = ddb.scan(**kwargs)
        count += page["Count"]
        if "LastEvaluatedKey" not in page:
            return count
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def moto_item_count(table: str) -> int:
    """What `count_items` gives for `table` in moto's in-process AWS, read from moto's own table
    (under the DynamoDB fixes' lock, which every DynamoDB request holds): a scan has moto copy and size
    every item, two-thirds of the bad-input fuzz's time when it ran before and after each example."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    from holdpoint_local.moto import dynamodb

    with dynamodb._LOCK:
        return len(dynamodb_backends[DEFAULT_ACCOUNT_ID][os.environ["AWS_DEFAULT_REGION"]].get_table(table))
