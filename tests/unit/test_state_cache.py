"""The store's warm-load cache (bench/README.md (a)): a warm load reads the head and what
changed, gives exactly the state a full load gives, and any cache it cannot vouch for (dropped,
stale, corrupted, from another version line) costs a full read, never a wrong state."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import boto3
import pytest

from holdpoint.aws.store import Cached, StateCache, Store, session_pk
from holdpoint.core.state import SessionState
from holdpoint.ports import Conflict
from tests.cache_chaos import POISONS, PoisonedCache
from tests.harness import Harness

pytestmark = pytest.mark.usefixtures("aws")


class Reads:
    """Every read request a store makes: (operation, key condition or key count)."""

    def __init__(self, store: Store) -> None:
        self.calls: list[tuple[str, str]] = []
        real = store.client
        spy = self

        class Client:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def query(self, **kw: Any) -> Any:
                spy.calls.append(("query", kw["KeyConditionExpression"]))
                return real.query(**kw)

            def batch_get_item(self, **kw: Any) -> Any:
                (req,) = kw["RequestItems"].values()
                assert req["ConsistentRead"] is True
                spy.calls.append(("batch_get_item", str(len(req["Keys"]))))
                return real.batch_get_item(**kw)

        store.client = Client()

    def take(self) -> list[tuple[str, str]]:
        out, self.calls = self.calls, []
        return out


def snapshot(state: SessionState | None) -> dict[str, Any]:
    assert state is not None
    return {"header": asdict(state.header), "nodes": {k: asdict(n) for k, n in state.tree.nodes.items()},
            "head": state.tree.head_id, "calls": state.calls, "decisions": state.decisions, "turns": state.turns,
            "interrupts": state.interrupts, "snapshot": state.snapshot}


def truth(h: Harness) -> dict[str, Any]:
    assert h.session_id
    return snapshot(Store(cache=False).load("t1", h.session_id))


def test_a_warm_load_reads_the_head_only_and_equals_a_full_load() -> None:
    h = Harness()
    h.say("say hi")
    h.say("Email Bob")  # parks: the engine's own commits keep its cache current
    assert h.session_id
    reads = Reads(h.store)
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)
    assert reads.take() == [("query", "#PK = :v0 AND #SK BETWEEN :v1 AND :v2")]  # the head range alone


def test_a_warm_load_fetches_exactly_the_items_another_writer_changed() -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id
    other = Store()  # another container (the API, cold) commits a turn's input
    state = other.load("t1", h.session_id)
    assert state is not None
    state.add_node("msg_other", state.tree.head_id, {"role": "user", "content": "from elsewhere"})
    other.commit(state)
    reads = Reads(h.store)
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)
    assert reads.take() == [("query", "#PK = :v0 AND #SK BETWEEN :v1 AND :v2"), ("batch_get_item", "1")]


def test_a_header_without_a_sum_is_read_in_full_then_vouched_for_again() -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id
    ddb, pk = boto3.client("dynamodb"), session_pk("t1", h.session_id)
    # A writer that knows nothing of the cache (an older release) puts the header without `sum`.
    header = ddb.get_item(TableName="holdpoint", Key={"PK": {"S": pk}, "SK": {"S": "H"}})["Item"]
    header.pop("tail_sum"), header.pop("changes")
    header["version"] = {"N": str(int(header["version"]["N"]) + 1)}
    ddb.put_item(TableName="holdpoint", Item=header)
    reads = Reads(h.store)
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)
    assert [op for op, _ in reads.take()] == ["query", "query"]  # head, then the whole tail
    h.say("say hi again")  # commits from a full read write a `sum`; a later full read checks it
    assert "tail_sum" in ddb.get_item(TableName="holdpoint", Key={"PK": {"S": pk}, "SK": {"S": "H"}})["Item"]
    h.store.load("t1", h.session_id)
    reads.take()
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)
    assert reads.take() == [("query", "#PK = :v0 AND #SK BETWEEN :v1 AND :v2")]


@pytest.mark.parametrize("poison", POISONS, ids=[p.__name__.strip("_") for p in POISONS])
def test_a_poisoned_cache_gives_the_true_state(poison: Any) -> None:
    h = Harness()
    h.say("say hi")
    h.say("Email Bob")
    assert h.session_id and h.store.cache is not None
    import random

    key = ("holdpoint", session_pk("t1", h.session_id))
    entry = h.store.cache.get(key)
    assert entry is not None and entry.items
    if poison(h.store.cache, key, entry, random.Random(1)) is None:
        assert h.store.cache.get(key) is None
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)


def test_a_corrupted_cache_between_load_and_commit_writes_no_false_sum() -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id and h.store.cache is not None
    state = h.store.load("t1", h.session_id)
    assert state is not None
    key = ("holdpoint", session_pk("t1", h.session_id))
    entry = h.store.cache.get(key)
    assert entry is not None
    sk = next(sk for sk in entry.items if sk.startswith("N#"))
    item = json.loads(entry.items[sk])
    item["body"]["S"] = item["body"]["S"].replace("say hi", "POISONED")
    entry.items[sk] = json.dumps(item)
    state.emit("test.marker")
    h.store.commit(state)
    assert "POISONED" not in json.dumps(snapshot(h.store.load("t1", h.session_id)), default=repr)
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)


def test_a_conflict_drops_the_cache_so_the_reload_reads_everything() -> None:
    h = Harness()
    h.say("say hi")
    assert h.session_id
    mine, theirs = h.store.load("t1", h.session_id), Store(cache=False).load("t1", h.session_id)
    assert mine is not None and theirs is not None
    theirs.emit("test.marker")
    Store(cache=False).commit(theirs)
    mine.emit("test.marker")
    with pytest.raises(Conflict):
        h.store.commit(mine)
    reads = Reads(h.store)
    assert snapshot(h.store.load("t1", h.session_id)) == truth(h)
    assert reads.take() == [("query", "#PK = :v0 AND #SK >= :v1")]


def test_rules_hold_with_a_cache_poisoned_on_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from holdpoint.aws import store

    monkeypatch.setattr(store, "cache_from_env", lambda: PoisonedCache(seed=7, rate=1.0))
    h = Harness()
    h.say("say hi")
    h.say("Email Bob")
    iid = h.open_interrupt()["interrupt_id"]
    h.resume(iid, {"approved": True})
    assert h.view()["status"] == "done"
    assert snapshot(h.store.load("t1", h.session_id or "")) == truth(h)


def test_the_cache_is_bounded_by_sessions_and_bytes() -> None:
    cache = StateCache(max_sessions=2, max_bytes=10)
    cache.put(("t", "a"), Cached(1, {"K#1": "xxxx"}))
    cache.put(("t", "b"), Cached(1, {"K#1": "xxxx"}))
    cache.get(("t", "a"))
    cache.put(("t", "c"), Cached(1, {"K#1": "xxxx"}))  # over 10 bytes: the least recently used goes
    assert len(cache) == 2 and cache.get(("t", "b")) is None
    cache.put(("t", "d"), Cached(1, {"K#1": "x" * 11}))  # larger than the whole cache: not kept
    assert cache.get(("t", "d")) is None
