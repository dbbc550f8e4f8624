"""Warm loads (bench/README.md (a)): the session reads of the store, with or without a cache.

The tail (calls, nodes, decisions, turns) is written only by a commit, always together with the
header; the head also changes outside it (the resume flips an interrupt, the park message stores
its task token, neither touching the header). So `WarmReads` keeps each session's tail as of a
header version, and a later load reads the head (one small Query), then only the tail keys the
header's change log (`changes`) lists since that version (BatchGetItem, strongly consistent). The
header's `tail_sum` (an XOR of SHA-256 hashes of every tail item) proves the result: a cached tail
that does not hash to it (dropped, stale, from another version line, corrupted) is thrown away and
the tail is read in full. A writer that cannot vouch for the sum writes none, which turns warm
loads of the session off until a commit writes one again and a full read confirms it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.expr import Between, Compare, Cond, Exists, Expr, Item, eq, n, s
from holdpoint.aws.ddb.table import Table

LOG_VERSIONS = 4  # versions the header's change log covers: a cache further behind reads the tail in full
LOG_CHARS = 1200  # and at most this much of it, so the header (rewritten by every commit) stays small
MAX_DELTA_KEYS = 100  # more changed keys than this and reading the whole tail is cheaper
CACHE_ENV = "HOLDPOINT_STATE_CACHE"  # sessions a container keeps warm; 0 turns the cache off


def canonical(item: Item) -> str:
    """An item as one immutable string: what the cache keeps and what the header's `tail_sum` hashes."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def item_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:16], "big")


def tail_digest(texts: Iterable[str]) -> int:
    """XOR of the items' hashes: independent of order, and updated by XOR-ing old and new items out and in."""
    return reduce(lambda acc, text: acc ^ item_hash(text), texts, 0)


@dataclass
class Cached:
    """A session's tail as of header `version`: SK -> canonical item text."""

    version: int
    items: dict[str, str]

    def size(self) -> int:
        return sum(len(text) for text in self.items.values())


@dataclass
class Head:
    """The header's `version`, `tail_sum` and change log as the last load of the session read
    them: what a commit conditions on and carries forward."""

    version: int
    sum: str | None
    log: list[Any] = field(default_factory=list)


def head_of(header: Item) -> Head:
    return Head(int(header[k.VERSION]["N"]), header.get(k.TAIL_SUM, {}).get("S"),
                json.loads(header[k.CHANGES]["S"]) if k.CHANGES in header else [])


class StateCache:
    """Per container, least recently used first out, bounded by sessions and by bytes kept. Locked:
    the local stack's front end serves requests on threads that share one store."""

    def __init__(self, max_sessions: int = 32, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_sessions = max_sessions
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], Cached] = OrderedDict()
        self._bytes: dict[tuple[str, str], int] = {}
        self._heads: OrderedDict[tuple[str, str], Head] = OrderedDict()
        self._lock = threading.RLock()

    def head(self, key: tuple[str, str]) -> Head | None:
        with self._lock:
            return self._heads.get(key)

    def note(self, key: tuple[str, str], head: Head) -> None:
        with self._lock:
            self._heads[key] = head
            self._heads.move_to_end(key)
            while len(self._heads) > self.max_sessions:
                self._heads.popitem(last=False)

    def get(self, key: tuple[str, str]) -> Cached | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: tuple[str, str], entry: Cached) -> None:
        size = entry.size()
        with self._lock:
            self.drop_tail(key)
            if size > self.max_bytes:
                return
            self._entries[key] = entry
            self._bytes[key] = size
            while len(self._entries) > self.max_sessions or sum(self._bytes.values()) > self.max_bytes:
                oldest, _ = self._entries.popitem(last=False)
                self._bytes.pop(oldest, None)

    def drop_tail(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._bytes.pop(key, None)

    def drop(self, key: tuple[str, str]) -> None:
        with self._lock:
            self.drop_tail(key)
            self._heads.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


def cache_from_env() -> StateCache | None:
    sessions = int(os.environ.get(CACHE_ENV, "32") or 0)
    return StateCache(max_sessions=sessions) if sessions > 0 else None


@dataclass
class Stamp:
    """What a commit adds to its header write: the condition, the `tail_sum` and change log it
    can vouch for (if any), and the cache entry for the new version (if any)."""

    condition: Cond
    attrs: Item = field(default_factory=dict)
    after: Cached | None = None


def stamp(head: Head, digest: int, written: dict[str, str], condition: Cond) -> Stamp:
    """`digest` with the new items hashed in as the header's `tail_sum`, and the change log."""
    for text in written.values():
        digest ^= item_hash(text)
    new_version = head.version + 1
    log = [*head.log, [new_version, sorted(written)]][-LOG_VERSIONS:]
    while len(log) > 1 and len(json.dumps(log, separators=(",", ":"))) > LOG_CHARS:
        log = log[1:]
    attrs = {k.TAIL_SUM: s(f"{digest:032x}"), k.CHANGES: s(json.dumps(log, separators=(",", ":")))}
    return Stamp(condition, attrs, Cached(new_version, dict(written)))


class Reads:
    """The session reads with no cache: every load reads the whole state."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def query(self, pk: str, low: str, high: str | None = None, *, after: bool = False) -> list[Item]:
        """Every item of the partition from `low` (or after it) up to `high`, strongly consistent."""
        expr = Expr()
        if high is not None:
            cond: Cond = eq("PK", s(pk)) & Between("SK", s(low), s(high))
        else:
            cond = eq("PK", s(pk)) & Compare("SK", ">" if after else ">=", s(low))
        return self.table.query_all(ConsistentRead=True, **expr.request(key_condition=cond))

    def head(self, pk: str) -> list[Item]:
        return self.query(pk, k.HEADER_SK, k.HEAD_END)

    def state(self, pk: str) -> list[Item]:
        return self.query(pk, k.HEADER_SK)

    def prepare(self, pk: str, *, exists: bool, version: int, written: dict[str, str]) -> Stamp:
        """The header write's condition: a new session's header must not exist (and its empty
        tail's sum is exact), a later one must be at the version loaded."""
        if not exists:
            return stamp(Head(version, None), 0, written, Exists("PK", present=False))
        return Stamp(eq(k.VERSION, n(version)))

    def committed(self, pk: str, header: Item, after: Cached | None) -> None:
        """The commit landed."""

    def forget(self, pk: str) -> None:
        """The commit failed, or may have: nothing kept about the session can be trusted."""

