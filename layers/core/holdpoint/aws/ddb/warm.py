"""The warm-load cache as a wrapper of the session reads (aws/ddb/cache.py says how it is proved)."""

from __future__ import annotations

import json

from holdpoint.aws.ddb import schema as k
from holdpoint.aws.ddb.cache import (
    MAX_DELTA_KEYS,
    Cached,
    Head,
    Reads,
    Stamp,
    StateCache,
    canonical,
    head_of,
    item_hash,
    stamp,
    tail_digest,
)
from holdpoint.aws.ddb.expr import Cond, Exists, Item, eq, s
from holdpoint.aws.ddb.table import Table


class WarmReads(Reads):
    """`Reads` that keep each session's tail in `cache` and read only what changed since."""

    def __init__(self, table: Table, cache: StateCache) -> None:
        super().__init__(table)
        self.cache = cache

    def _key(self, pk: str) -> tuple[str, str]:
        return self.table.name, pk

    def head(self, pk: str) -> list[Item]:
        items = super().head(pk)
        if items and items[0]["SK"]["S"] == k.HEADER_SK:
            self.cache.note(self._key(pk), head_of(items[0]))
        return items

    def state(self, pk: str) -> list[Item]:
        """Head, then the tail from the cache plus what changed since; the whole tail on any doubt."""
        key = self._key(pk)
        entry = self.cache.get(key)
        if entry is None:  # cold: the one Query of the whole state, kept for the next load
            items = super().state(pk)
            head = [item for item in items if not k.is_tail(item["SK"]["S"])]
            tail = [item for item in items if k.is_tail(item["SK"]["S"])]
        else:
            head, tail = self.query(pk, k.HEADER_SK, k.HEAD_END), []
        if not head or head[0]["SK"]["S"] != k.HEADER_SK:
            self.cache.drop(key)
            return []
        note = head_of(head[0])
        texts = self._delta(pk, entry, note) if entry is not None else None
        if texts is None:
            if entry is not None:
                tail = self.query(pk, k.HEAD_END, after=True)
            self._remember(key, note, {item["SK"]["S"]: canonical(item) for item in tail})
            return head + tail
        self.cache.put(key, Cached(note.version, texts))
        self.cache.note(key, note)
        return head + [json.loads(texts[sk]) for sk in sorted(texts)]

    def _delta(self, pk: str, entry: Cached, head: Head) -> dict[str, str] | None:
        """The tail at the header's version: `entry` with the keys the log lists since its version
        read again, or None when the log does not reach back that far or the result does not hash
        to the header's `tail_sum`."""
        version, header_sum = head.version, head.sum
        if header_sum is None or entry.version > version:
            return None
        listed = {int(v): keys for v, keys in head.log}
        if any(v not in listed for v in range(entry.version + 1, version + 1)):
            return None
        changed = sorted({sk for v in range(entry.version + 1, version + 1) for sk in listed[v]})
        if len(changed) > MAX_DELTA_KEYS:
            return None
        fetched = self.table.batch_get([{"PK": s(pk), "SK": s(sk)} for sk in changed], consistent=True)
        if len(fetched) != len(changed):
            return None
        texts = {**entry.items, **{item["SK"]["S"]: canonical(item) for item in fetched}}
        return texts if tail_digest(texts.values()) == int(header_sum, 16) else None

    def _remember(self, key: tuple[str, str], head: Head, texts: dict[str, str]) -> None:
        """Keep a tail read in full, unless the header's `tail_sum` says it is not the tail at that
        version (a commit landed between the two reads). Without a sum the tail is kept unverified:
        a warm load uses it only once a header with a sum vouches for it, and a commit from it
        writes a sum but keeps nothing (the next load checks that sum)."""
        if head.sum is not None and tail_digest(texts.values()) != int(head.sum, 16):
            self.cache.drop(key)
            return
        self.cache.put(key, Cached(head.version, texts))
        self.cache.note(key, head)

    def prepare(self, pk: str, *, exists: bool, version: int, written: dict[str, str]) -> Stamp:
        """The header's condition and, when the store can vouch for the tail it replaces, the new
        `tail_sum` and change log:

        - A new session's tail is empty: its sum is exact.
        - A tail cached at the version being replaced that hashes to the header's sum (and the
          commit is conditioned on that sum): the new sum is exact; the cache moves on.
        - A tail read in full at that version under a header with no sum: the new sum is
          written but the tail is not kept; the next load reads it in full and checks it.
        - Nothing written to the tail: the sum is carried over, conditioned on it.
        - Otherwise no sum: warm loads read the tail in full until a commit can vouch again."""
        plain = super().prepare(pk, exists=exists, version=version, written=written)
        key = self._key(pk)
        head, entry = self.cache.head(key), self.cache.get(key)
        if not exists or head is None or head.version != version:
            return plain
        entry = entry if entry is not None and entry.version == version else None
        condition: Cond = plain.condition
        if head.sum is not None:
            condition = condition & eq(k.TAIL_SUM, s(head.sum))
        if not written:
            if head.sum is None:
                return plain
            kept = entry if entry is not None and tail_digest(entry.items.values()) == int(head.sum, 16) else None
            out = stamp(head, int(head.sum, 16), written, condition)
            out.after = Cached(version + 1, kept.items) if kept is not None else None
            return out
        if entry is None:
            return Stamp(condition)
        digest = tail_digest(entry.items.values())
        if head.sum is not None and digest != int(head.sum, 16):
            return Stamp(condition)  # the cached tail is not what it was read as: vouch for nothing
        if head.sum is None:
            condition = condition & Exists(k.TAIL_SUM, present=False)
        for sk in written:
            if sk in entry.items:
                digest ^= item_hash(entry.items[sk])
        out = stamp(head, digest, written, condition)
        out.after = Cached(version + 1, {**entry.items, **written}) if head.sum is not None else None
        return out

    def committed(self, pk: str, header: Item, after: Cached | None) -> None:
        key = self._key(pk)
        self.cache.note(key, head_of(header))
        if after is not None:
            self.cache.put(key, after)
        else:
            self.cache.drop_tail(key)

    def forget(self, pk: str) -> None:
        self.cache.drop(self._key(pk))

