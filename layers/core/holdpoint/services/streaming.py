"""A streamed LLM reply's text to the session's live connections (docs/PROTOCOL.md, "Live events").

The engine streams a call only when someone follows the session: it looks the followers up once,
when the call starts (one Query), and with nobody there calls the provider whole, as without a
WebSocket API. A subscriber that connects mid-reply gets the committed message, not the deltas.

Deltas are batched (`Batcher`): the text is posted when `FLUSH_BYTES` of it wait, or when a delta
arrives `FLUSH_SECS` or more after the last post ended (the first delta goes at once); the rest
goes when the provider is done, before the engine commits the reply. There is no timer: text that
waits goes with the next delta or then. Each post is one `delta` frame per connection, `index` 0,
1, 2.. per call; the stream ends with one `delta_end` (`finished`, `voided`, `failed`), after the
commit of the call's outcome (a voided call's at once). Deltas are ephemeral: the committed
message is the record, and a call that runs again (a retry, a redelivered step) streams again
from index 0 after a `delta_end` `failed`.

While it streams, the engine checks at most once every `VOID_CHECK_SECS` (on a delta's arrival)
whether the call is still open: one session load (the step's own read) per check. A call voided
(R6: a park on its branch, or the head moved) stops the provider's stream and ends `voided`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from holdpoint.ports import Clock
from holdpoint.services.live import Live

log = logging.getLogger("holdpoint.services.streaming")

FLUSH_SECS = 0.05
FLUSH_BYTES = 1024
PIECE_CHARS = 4096
"""The most text one `delta` frame carries: escaped as JSON at worst 6 bytes a character, under the 32 KB frame."""
VOID_CHECK_SECS = 1.0

EndReason = Literal["finished", "voided", "failed"]


class Batcher:
    """Text pieces into posts: at `max_bytes` waiting, or on a piece `every` seconds after the last post."""

    def __init__(self, post: Callable[[str], None], clock: Clock, every: float = FLUSH_SECS,
                 max_bytes: int = FLUSH_BYTES) -> None:
        self.post, self.clock, self.every, self.max_bytes = post, clock, every, max_bytes
        self.waiting: list[str] = []
        self.size = 0
        self.posted_at: float | None = None

    def add(self, text: str) -> None:
        if not text:
            return
        self.waiting.append(text)
        self.size += len(text.encode())
        now = self.clock()
        if self.size >= self.max_bytes or self.posted_at is None or now - self.posted_at >= self.every:
            self.flush()

    def flush(self) -> None:
        """Post what waits, in pieces of at most `PIECE_CHARS` characters."""
        if not self.waiting:
            return
        text, self.waiting, self.size = "".join(self.waiting), [], 0
        for start in range(0, len(text), PIECE_CHARS):
            self.post(text[start:start + PIECE_CHARS])
        # From the posts' end: while slow posts run, the provider's tokens wait in the socket and
        # are read into the next batch, so a slow fan-out sends fewer, larger frames, not more.
        self.posted_at = self.clock()


class DeltaStream:
    """One call's deltas to the connections that followed the session when it started."""

    def __init__(self, live: Live, tenant: str, session_id: str, call_id: str, followers: dict[str, str],
                 clock: Clock, still_open: Callable[[], bool]) -> None:
        self.live, self.tenant, self.session_id, self.call_id = live, tenant, session_id, call_id
        self.followers, self.clock, self.still_open = followers, clock, still_open
        self.batcher = Batcher(self._post, clock)
        self.index = 0
        self.checks = 0
        self.checked_at = clock()
        self.stopped = False

    def on_delta(self, text: str) -> bool:
        """The provider's next piece (`ports.OnDelta`); False once the call is found voided."""
        if self.stopped:
            return False
        self.batcher.add(text)
        now = self.clock()
        if now - self.checked_at >= VOID_CHECK_SECS:
            self.checked_at, self.checks = now, self.checks + 1
            try:
                self.stopped = not self.still_open()
            except Exception:  # a failed read stops nothing: the commit still discards a voided reply
                log.exception("checking call %s of %s failed", self.call_id, self.session_id)
        return not self.stopped

    def drain(self) -> None:
        """The text that waits, posted (the engine calls it before it commits the reply, so every
        delta comes before the committed message)."""
        if not self.stopped:
            self.batcher.flush()

    def end(self, reason: EndReason) -> None:
        """The last frame; a voided call's waiting text is dropped, the others' posted first."""
        if reason != "voided":
            self.drain()
        self._send({"type": "delta_end", "session_id": self.session_id, "call_id": self.call_id, "reason": reason})

    def _post(self, text: str) -> None:
        self._send({"type": "delta", "session_id": self.session_id, "call_id": self.call_id, "index": self.index,
                    "text": text})
        self.index += 1

    def _send(self, frame: dict[str, object]) -> None:
        if self.followers:
            self.followers = self.live.publish_delta(self.tenant, self.session_id, self.followers, dict(frame))
