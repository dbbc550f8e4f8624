"""A `StateCache` that goes wrong on purpose: on most reads it drops the session, or hands back a
tail that is stale, from another version line or corrupted. The store must notice every one of
these (the header's `sum`) or fail safe (a conflict), so every test passes with it as with none."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from holdpoint.aws.store import Cached, Head, StateCache

Poison = Callable[[StateCache, tuple[str, str], Cached, random.Random], Cached | None]


def _drop(cache: StateCache, key: tuple[str, str], entry: Cached, rng: random.Random) -> Cached | None:
    cache.drop(key)
    return None


def _edit_body(entry: Cached, rng: random.Random) -> None:
    """Change one item's content (a message, a status, a result) but keep its key and rev."""
    sk = rng.choice(sorted(entry.items))
    item = json.loads(entry.items[sk])
    if "body" in item:
        body = json.loads(item["body"]["S"])
        if isinstance(body.get("message"), dict):
            body["message"]["content"] = "POISONED"
        else:
            body["status"] = "POISONED" if body.get("status") != "POISONED" else "open"
        item["body"]["S"] = json.dumps(body)
    item["rev"] = {"N": "7"}
    entry.items[sk] = json.dumps(item)


def _corrupt(cache: StateCache, key: tuple[str, str], entry: Cached, rng: random.Random) -> Cached | None:
    if entry.items:
        _edit_body(entry, rng)
    return entry


def _lose_item(cache: StateCache, key: tuple[str, str], entry: Cached, rng: random.Random) -> Cached | None:
    if entry.items:
        entry.items.pop(rng.choice(sorted(entry.items)))
    return entry


def _stale(cache: StateCache, key: tuple[str, str], entry: Cached, rng: random.Random) -> Cached | None:
    """Claim a later version than the tail is at (a missed write), or an earlier one."""
    entry.version += rng.choice([1, 2, -1])
    return entry


def _other_line(cache: StateCache, key: tuple[str, str], entry: Cached, rng: random.Random) -> Cached | None:
    """Another session's tail (or an empty one) under this session's key and version."""
    others = [e for k, e in cache._entries.items() if k != key]
    entry.items = dict(rng.choice(others).items) if others and rng.random() < 0.5 else {}
    return entry


POISONS: list[Poison] = [_drop, _corrupt, _lose_item, _stale, _other_line]


class PoisonedCache(StateCache):
    """On each read, with probability `rate`, one of `POISONS` is applied to the entry first."""

    def __init__(self, seed: int = 0, rate: float = 0.5) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.rate = rate
        self.poisoned = 0

    def get(self, key: tuple[str, str]) -> Cached | None:
        entry = super().get(key)
        if entry is None or self.rng.random() >= self.rate:
            return entry
        self.poisoned += 1
        return self.rng.choice(POISONS)(self, key, entry, self.rng)

    def head(self, key: tuple[str, str]) -> Head | None:
        """The header a commit conditions on: sometimes forgotten, or with a wrong `sum` or log."""
        head = super().head(key)
        if head is None or self.rng.random() >= self.rate:
            return head
        self.poisoned += 1
        kind = self.rng.choice(["forget", "sum", "no sum", "log"])
        if kind == "forget":
            return None
        if kind == "sum":
            return Head(head.version, f"{self.rng.getrandbits(128):032x}", head.log)
        if kind == "no sum":
            return Head(head.version, None, head.log)
        return Head(head.version, head.sum, [[head.version, ["N#nothing"]]])
