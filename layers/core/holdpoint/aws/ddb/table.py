"""The table's client, with DynamoDB's failures turned into exceptions the layers above know.

The one place DynamoDB's refusals (`Refused`) are read: a failed condition or a cancelled
transaction becomes `ConditionFailed`/`Cancelled` (this package's own, handled inside it), an item
or transaction over DynamoDB's size limits `ports.TooLarge`; throttling is `ports.Throttled` already
(clients.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from holdpoint.aws import clients
from holdpoint.aws.errors import Cancelled, ConditionFailed, Refused
from holdpoint.ports import TooLarge


def too_large(err: dict[str, Any]) -> bool:
    """DynamoDB refused an item over 400 KB (or a transaction over 4 MB): nothing was written."""
    text = str(err.get("Message") or "").lower()
    return err.get("Code") == "ValidationException" and "size" in text and "exceeded" in text


@contextmanager
def translated() -> Iterator[None]:
    """Run a DynamoDB call, raising the failures above in place of `Refused`."""
    try:
        yield
    except Refused as exc:
        if exc.code == "ConditionalCheckFailedException":
            raise ConditionFailed(exc.response.get("Item") or {}) from None
        if exc.code == "TransactionCanceledException":
            reasons = [r.get("Code") or "None" for r in exc.response.get("CancellationReasons") or []]
            raise Cancelled(reasons, str(exc)) from exc
        if too_large(exc.response.get("Error") or {}):
            raise TooLarge("the item is too large to record") from exc
        raise


class Table:
    """One table through one client: every call goes through `translated`."""

    def __init__(self, name: str, client: Any = None) -> None:
        self.name = name
        self.client = clients.refusing(client) if client is not None else clients.client("dynamodb")

    def get(self, key: dict[str, Any], *, consistent: bool = True) -> dict[str, Any] | None:
        with translated():
            got = self.client.get_item(TableName=self.name, Key=key, ConsistentRead=consistent)
        item: dict[str, Any] | None = got.get("Item")
        return item

    def put(self, item: dict[str, Any], **expression: Any) -> dict[str, Any]:
        """PutItem; the item it replaced when `ReturnValues="ALL_OLD"` asks for it ({} otherwise)."""
        with translated():
            out = self.client.put_item(TableName=self.name, Item=item, **expression)
        old: dict[str, Any] = out.get("Attributes") or {}
        return old

    def delete(self, key: dict[str, Any], **expression: Any) -> None:
        with translated():
            self.client.delete_item(TableName=self.name, Key=key, **expression)

    def update(self, key: dict[str, Any], **expression: Any) -> dict[str, Any]:
        """UpdateItem returning the item as written; `ConditionFailed` carries it as it was."""
        with translated():
            out = self.client.update_item(TableName=self.name, Key=key, ReturnValues="ALL_NEW",
                                          ReturnValuesOnConditionCheckFailure="ALL_OLD", **expression)
        attrs: dict[str, Any] = out.get("Attributes") or {}
        return attrs

    def transact(self, ops: list[dict[str, Any]]) -> None:
        for op in ops:
            next(iter(op.values()))["TableName"] = self.name
        with translated():
            self.client.transact_write_items(TransactItems=ops)

    def query_page(self, **kwargs: Any) -> dict[str, Any]:
        with translated():
            page: dict[str, Any] = self.client.query(TableName=self.name, **kwargs)
        return page

    def query_all(self, **kwargs: Any) -> list[dict[str, Any]]:
        """Every item a Query matches, following its pages."""
        items: list[dict[str, Any]] = []
        while True:
            page = self.query_page(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def batch_get(self, keys: list[dict[str, Any]], *, consistent: bool) -> list[dict[str, Any]]:
        """BatchGetItem, 100 keys a request, until nothing is left unprocessed."""
        out: list[dict[str, Any]] = []
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self.name: {"Keys": keys[start:start + 100], "ConsistentRead": consistent}}
            while request:
                with translated():
                    page = self.client.batch_get_item(RequestItems=request)
                out.extend(page.get("Responses", {}).get(self.name, []))
                request = page.get("UnprocessedKeys") or {}
        return out
