"""The `ports.PushConfigs` contract (PROTOCOL.md §8), held by both: the DynamoDB configs on moto
(aws/pushconfigs.py) and their in-memory twin (memory/pushconfigs.py). A task holds at most its
limit of configs: a new id past it is refused with nothing written, the same config again is a
no-op and a changed one replaces it in its slot; a delete gives its slot back, once. A listing is
a task's configs (or the session's), oldest id first, each with its task."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from holdpoint.core.push import PushAuth, PushRecord
from holdpoint_local.memory.pushconfigs import MemoryPushConfigs

CONFIGS = ["memory", "dynamodb"]


@pytest.fixture(params=CONFIGS)
def configs(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryPushConfigs()
        return
    request.getfixturevalue("aws")
    from holdpoint.aws.pushconfigs import PushConfigLog

    yield PushConfigLog()


def config(config_id: str, url: str = "https://r.example/hook", **more: Any) -> PushRecord:
    return PushRecord(config_id, url, **more)


def of_task(kept: PushRecord, turn_id: str) -> PushRecord:
    return replace(kept, turn_id=turn_id)


def test_a2a_push_a_config_is_kept_and_read_back_with_its_task(configs: Any) -> None:
    assert configs.get("t1", "s1", "turn-1", "c1") is None
    secret = config("c1", token="tok", auth=PushAuth("Bearer", "cred"))
    assert configs.put("t1", "s1", "turn-1", secret, 3)
    assert configs.get("t1", "s1", "turn-1", "c1") == of_task(secret, "turn-1")
    assert configs.put("t1", "s1", "turn-1", config("c2", auth=PushAuth("Basic")), 3)
    assert configs.get("t1", "s1", "turn-1", "c2") == of_task(config("c2", auth=PushAuth("Basic")), "turn-1")
    assert configs.get("t1", "s1", "turn-2", "c1") is None
    assert configs.get("t1", "s2", "turn-1", "c1") is None and configs.get("t2", "s1", "turn-1", "c1") is None


def test_quota_a2a_push_a_task_holds_at_most_its_limit_of_configs(configs: Any) -> None:
    for i in range(3):
        assert configs.put("t1", "s1", "turn-1", config(f"c{i}"), 3) is True
    assert configs.put("t1", "s1", "turn-1", config("c9"), 3) is False
    assert configs.get("t1", "s1", "turn-1", "c9") is None  # nothing written
    assert configs.put("t1", "s1", "turn-2", config("c9"), 3) is True  # another task has its own


def test_quota_a2a_push_setting_a_config_again_or_changing_it_takes_no_slot(configs: Any) -> None:
    for i in range(2):
        configs.put("t1", "s1", "turn-1", config(f"c{i}"), 2)
    assert configs.put("t1", "s1", "turn-1", config("c0"), 2) is True  # the same again: a no-op
    assert configs.put("t1", "s1", "turn-1", config("c1", "https://r.example/new"), 2) is True
    assert configs.get("t1", "s1", "turn-1", "c1") == of_task(config("c1", "https://r.example/new"), "turn-1")
    assert configs.put("t1", "s1", "turn-1", config("c2"), 2) is False


def test_quota_a2a_push_a_delete_gives_its_slot_back_once(configs: Any) -> None:
    for i in range(2):
        configs.put("t1", "s1", "turn-1", config(f"c{i}"), 2)
    configs.delete("t1", "s1", "turn-1", "c0")
    configs.delete("t1", "s1", "turn-1", "c0")  # gone already: a no-op, no second slot
    configs.delete("t1", "s1", "turn-1", "never")
    assert configs.get("t1", "s1", "turn-1", "c0") is None
    assert configs.put("t1", "s1", "turn-1", config("c2"), 2) is True
    assert configs.put("t1", "s1", "turn-1", config("c3"), 2) is False


def test_quota_a2a_push_concurrent_creates_never_pass_the_limit(configs: Any) -> None:
    results: list[bool] = []
    lock = threading.Lock()

    def create(i: int) -> None:
        done = configs.put("t1", "s1", "turn-1", config(f"c{i}"), 3)
        with lock:
            results.append(done)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 3 and len(configs.list("t1", "s1", "turn-1")) == 3


def test_a2a_push_a_listing_is_oldest_id_first_with_each_task(configs: Any) -> None:
    for turn, config_id in (("turn-2", "b"), ("turn-1", "b"), ("turn-1", "a"), ("turn-10", "a")):
        configs.put("t1", "s1", turn, config(config_id, f"https://r.example/{turn}/{config_id}"), 5)
    configs.put("t1", "s2", "turn-1", config("z"), 5)
    assert [(c.turn_id, c.id) for c in configs.list("t1", "s1", "turn-1")] == [("turn-1", "a"), ("turn-1", "b")]
    assert [(c.turn_id, c.id) for c in configs.list("t1", "s1")] == [
        ("turn-1", "a"), ("turn-1", "b"), ("turn-10", "a"), ("turn-2", "b")]
    assert configs.list("t1", "s1", "turn-3") == [] and configs.list("t2", "s1") == []
    assert configs.list("t1", "s1", "turn-1")[0] == of_task(config("a", "https://r.example/turn-1/a"), "turn-1")
