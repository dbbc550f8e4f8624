"""What a table holds, for tests that show a refused request recorded nothing."""

from __future__ import annotations

from typing import Any


def count_items(ddb: Any, table: str) -> int:
    """Every item in `table` (a paged COUNT scan)."""
    count, kwargs = 0, {"TableName": table, "Select": "COUNT"}
    while True:
        page = ddb.scan(**kwargs)
        count += page["Count"]
        if "LastEvaluatedKey" not in page:
            return count
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
