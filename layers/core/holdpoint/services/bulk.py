"""Bulk answers: several interrupts answered in one request, each by the one resume path
(`services.resume.resume`), so every rule a single answer meets (tenant wall, end-user scope,
origin, approver policy and quorum, response schema, fingerprint, deadline, A4's no-ops) is met
by each item on its own. One item's refusal changes nothing for the others; a malformed list
(empty, over the bound, an item named twice) is refused whole before any item runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from holdpoint.core.errors import Refusal
from holdpoint.ports import Clock, Parking, SessionsAndInterrupts, Throttled, Unavailable
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Resumed, resume

MAX_ITEMS = 100
"""The most interrupts one bulk answer names: each item is a resume (a read, a write, the wake
and a SendTaskSuccess), and the request must end within the function's 29 s."""


RESERVE_SECS = 3.0
"""What the request keeps of its function's time for the item in flight and the answer: with less
left before an item, it and the rest are reported `unavailable`, unattempted, to be sent again."""


@dataclass(frozen=True)
class Item:
    """One interrupt to answer, with the answer a single resume would carry."""

    session_id: str
    interrupt_id: str
    payload: Any = None
    expect_fingerprint: str | None = None
    comment: str | None = None
    arguments: Any = None  # A3: an approver's edit of this item's action, as a single resume takes it


@dataclass(frozen=True)
class Outcome:
    """What one item came to: its resume's outcome, or why it has none (`failed`): the refusal a
    single resume would give, or AWS's refusal for load (throttled, unavailable) that stopped the
    list at this item or before it."""

    item: Item
    resumed: Resumed | None = None
    failed: Refusal | Throttled | Unavailable | None = None


def check_items(items: Sequence[Item]) -> None:
    """The list as a whole: at least one item, at most `MAX_ITEMS`, no interrupt named twice (two
    answers to one interrupt in one request would race each other). 400 naming the field."""
    if not items:
        raise Refusal("validation_error", "items must name at least one interrupt", "items")
    if len(items) > MAX_ITEMS:
        raise Refusal("validation_error", f"items names {len(items)} interrupts, at most {MAX_ITEMS} a request: "
                      "send the rest in another request", "items")
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        key = (item.session_id, item.interrupt_id)
        if key in seen:
            raise Refusal("validation_error", f"items[{index}] names the interrupt items[{seen[key]}] names; "
                          "name each interrupt once", f"items[{index}].interrupt_id")
        seen[key] = index


def resume_all(store: SessionsAndInterrupts, parking: Parking, caller: Caller, items: Sequence[Item],
               clock: Clock = time.time, time_left: Callable[[], float] | None = None) -> list[Outcome]:
    """Each item through the single resume, in order. A refusal is that item's alone. AWS refusing
    a call for load (throttled, unavailable), or the function's time running low (`time_left`,
    seconds), stops the list: that item and the ones after it are reported with it, unattempted
    past it, and the same request sent again is safe (A4: what was answered is a no-op, and a
    resolve whose release was refused is released by the repeat)."""
    check_items(items)
    out: list[Outcome] = []
    for index, item in enumerate(items):
        if time_left is not None and time_left() < RESERVE_SECS:
            return out + _stopped(items[index:], Unavailable("the request ran out of time before this item"))
        try:
            out.append(Outcome(item, resumed=resume(
                store, parking, caller, item.session_id, item.interrupt_id, item.payload, clock=clock,
                expect_fingerprint=item.expect_fingerprint, comment=item.comment,
                arguments=item.arguments)))
        except Refusal as refused:
            out.append(Outcome(item, failed=refused))
        except (Throttled, Unavailable) as busy:
            return out + _stopped(items[index:], busy)
    return out


def _stopped(rest: Sequence[Item], why: Throttled | Unavailable) -> list[Outcome]:
    return [Outcome(item, failed=why) for item in rest]
