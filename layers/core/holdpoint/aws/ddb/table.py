"""The table's client, with DynamoDB's failures turned into exceptions the layers above know.

The one place DynamoDB's refusals (`Refused`) are read: a failed condition or a cancelled
transaction becomes `ConditionFailed`/`Cancelled` (this package's own, handled inside it), an item
or transaction over DynamoDB's size limits `ports.TooLarge`; throttling is `ports.Throttled` already
(clients.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypedDict

from holdpoint.aws import clients
from holdpoint.aws.ddb.expr import Item, QueryPage, TransactOp
from holdpoint.aws.errors import Cancelled, ConditionFailed, Refused
from holdpoint.ports import TooLarge


def too_large(err: Mapping[str, object]) -> bool:
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


class _KeysToGet(TypedDict):
    """One table's part of a BatchGetItem request (and of its `UnprocessedKeys`)."""

    Keys: list[Item]
    ConsistentRead: bool


class Table:
    """One table through one client: every call goes through `translated`."""

    def __init__(self, name: str, client: Any = None) -> None:
        self.name = name
        self.client = clients.refusing(client) if client is not None else clients.client("dynamodb")

    def get(self, key: Item, *, consistent: bool = True) -> Item | None:
        with translated():
            got = self.client.get_item(TableName=self.name, Key=key, ConsistentRead=consistent)
        item: Item | None = got.get("Item")
        return item

    def put(self, item: Item, **expression: Any) -> Item:
        """PutItem; the item it replaced when `ReturnValues="ALL_OLD"` asks for it ({} otherwise)."""
        with translated():
            out = self.client.put_item(TableName=self.name, Item=item, **expression)
        old: Item = out.get("Attributes") or {}
        return old

    def delete(self, key: Item, **expression: Any) -> None:
        with translated():
            self.client.delete_item(TableName=self.name, Key=key, **expression)

    def update(self, key: Item, **expression: Any) -> Item:
        """UpdateItem returning the item as written; `ConditionFailed` carries it as it was."""
        with translated():
            out = self.client.update_item(TableName=self.name, Key=key, ReturnValues="ALL_NEW",
                                          ReturnValuesOnConditionCheckFailure="ALL_OLD", **expression)
        attrs: Item = out.get("Attributes") or {}
        return attrs

    def transact(self, ops: list[TransactOp]) -> None:
        for op in ops:
            for write in (op.get("Put"), op.get("Update"), op.get("Delete"), op.get("ConditionCheck")):
                if write is not None:
                    write["TableName"] = self.name
        with translated():
            self.client.transact_write_items(TransactItems=ops)

    def query_page(self, **kwargs: Any) -> QueryPage:
        with translated():
            page: QueryPage = self.client.query(TableName=self.name, **kwargs)
        return page

    def query_all(self, **kwargs: Any) -> list[Item]:
        """Every item a Query matches, following its pages."""
        items: list[Item] = []
        while True:
            page = self.query_page(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def batch_get(self, keys: list[Item], *, consistent: bool) -> list[Item]:
        """BatchGetItem, 100 keys a request, until nothing is left unprocessed."""
        out: list[Item] = []
        for start in range(0, len(keys), 100):
            request: dict[str, _KeysToGet] = {
                self.name: {"Keys": keys[start:start + 100], "ConsistentRead": consistent}}
            while request:
                with translated():
                    page = self.client.batch_get_item(RequestItems=request)
                out.extend(page.get("Responses", {}).get(self.name, []))
                request = page.get("UnprocessedKeys") or {}
        return out
