"""What a table holds, for tests that show a refused request recorded nothing."""

from __future__ import annotations

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
