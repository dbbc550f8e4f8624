"""Issue 19, class 6b: an event seq past what the store represents. The table's event keys have
12 digits (`ports.MAX_SEQ`); a larger `after_seq` would build a DynamoDB `BETWEEN` whose lower key
sorts above its upper one, which DynamoDB answers with a ValidationException (a 500; moto does not
check it). The edge refuses it (400 naming the field), and the store never builds such a range."""

from __future__ import annotations

from typing import Any

import pytest

from holdpoint.aws.store import Store
from holdpoint.ports import MAX_SEQ
from tests.security.probes import refusal
from tests.stack import Api


class Recording:
    """A DynamoDB client that answers every query with nothing and records the key conditions."""

    def __init__(self) -> None:
        self.queries: list[dict[str, Any]] = []

    def query(self, **kwargs: Any) -> dict[str, Any]:
        self.queries.append(kwargs)
        return {"Items": []}


@pytest.mark.parametrize("after_seq", [MAX_SEQ, MAX_SEQ + 1, 9_999_999_999_998, 10**30])
def test_seq_range_the_store_reads_nothing_past_its_last_key(after_seq: int) -> None:
    client = Recording()
    assert Store(table="t", client=client, cache=False).events("dev", "ses-1", after_seq, 10) == []
    assert client.queries == []


def test_seq_range_the_store_bounds_are_never_inverted() -> None:
    client = Recording()
    store = Store(table="t", client=client, cache=False)
    for after_seq in (0, 1, MAX_SEQ - 1):
        store.events("dev", "ses-1", after_seq, 10)
    for query in client.queries:
        values = query["ExpressionAttributeValues"]
        low, high = values[":v1"]["S"], values[":v2"]["S"]  # the BETWEEN bounds, after the partition key
        assert low <= high and len(low) == len(high)


def test_seq_range_after_seq_is_bounded_at_the_edge(api: Api) -> None:
    sid = api.start("say hi")
    api.wait_status(sid, "done")
    for route in ("events", "events/stream"):
        for after_seq in (MAX_SEQ + 1, 9_999_999_999_998, 10**20):
            refusal(api.req("GET", f"/v1/sessions/{sid}/{route}?after_seq={after_seq}"), 400,
                    code="validation_error", param="after_seq")
        assert api.ok("GET", f"/v1/sessions/{sid}/events?after_seq={MAX_SEQ}")["events"] == []
