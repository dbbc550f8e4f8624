"""One-click signed links (docs/NOTIFICATIONS.md): approve/deny straight from a notification.

A link's token is sealed (HMAC under the `link` subkey of the deployment's signing secret) over
the tenant, session, interrupt and its generation, the option, the intended approver and an
expiry. Opening it (GET) only reads; the page's button (POST) resumes through `resume.resume`
as the approver with origin `client`, so R17, A1 and every other resume rule apply unchanged.
A token for an interrupt that was cleared, or cleared and raised again (even after its closed
interrupt was deleted, A6: a fresh raise never reuses a generation), resumes nothing.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from holdpoint.core.errors import Refusal
from holdpoint.core.interrupts import answerable_until
from holdpoint.core.notify import LINK_ORIGINS, link_choices, summary
from holdpoint.core.state import Interrupt
from holdpoint.ports import Clock, Interrupts, Parking, Sealer, SessionsAndInterrupts
from holdpoint.services.caller import Caller
from holdpoint.services.resume import Resumed, readable, resume

PURPOSE = "link"
LINK_TTL_SECS = 7 * 24 * 3600
"""A link lives at most a week, and never past its interrupt's own expiry."""
LINK_ORIGIN = "client"
"""Who a link resumes as: the intended approver, at the lowest origin (R17)."""
PATH = "/v1/links/"
OPTION_KEY = re.compile(r"approve|deny|option-\d{1,2}")
PRINCIPAL = re.compile(r"(?:user|key):.+", re.DOTALL)
"""A link's approver: a principal with its kind (`Caller.principal`). A token without one was
signed before links carried it and is refused as never issued."""
"""What a link's option may be (`core.notify.link_choices`); which it answers is read from the interrupt."""


@dataclass(frozen=True)
class Link:
    tenant: str
    session_id: str
    interrupt_id: str
    generation: int
    option: str
    approver: str
    expires: int

    def claims(self) -> dict[str, Any]:
        return {"t": self.tenant, "s": self.session_id, "i": self.interrupt_id, "g": self.generation,
                "o": self.option, "a": self.approver, "x": self.expires}

    @classmethod
    def from_claims(cls, raw: dict[str, Any]) -> Link | None:
        try:
            link = cls(str(raw["t"]), str(raw["s"]), str(raw["i"]), int(raw["g"]), str(raw["o"]),
                       str(raw["a"]), int(raw["x"]))
        except (KeyError, TypeError, ValueError):
            return None
        return link if OPTION_KEY.fullmatch(link.option) and PRINCIPAL.fullmatch(link.approver) else None

    def caller(self) -> Caller:
        """Exactly the principal the link was minted for: an end user (`user:NAME`) reaches and
        matches as a client token of that subject would, an API key's subject (`key:NAME`) as
        that key, so a policy's `ann` (a key) never admits a link minted for the end user `ann`."""
        kind, _, name = self.approver.partition(":")
        return Caller(tenant=self.tenant, subject=name, origin=LINK_ORIGIN, own_only=kind == "user")

    @property
    def approver_name(self) -> str:
        return self.approver.partition(":")[2]


@dataclass(frozen=True)
class Followed:
    """A link's button pressed (the edge renders it): the resume's outcome and the option it answered."""

    resumed: Resumed
    option: str


def declared_approver(name: str) -> str:
    """The principal a notify entry's `approver` names, read as a policy's `subjects` are: a bare
    name is an API key's subject, `user:NAME` an end user (`core.approvals.END_USER`)."""
    return name if name.startswith(("user:", "key:")) else f"key:{name}"


def mint(sealer: Sealer, base_url: str, tenant: str, session_id: str, interrupt: Interrupt,
         approver: str, now: float) -> dict[str, str]:
    """One link per option, for the principal `approver` (`user:NAME` or `key:NAME`); none for an
    interrupt a `client` may not clear."""
    if not base_url or interrupt.origin not in LINK_ORIGINS or not PRINCIPAL.fullmatch(approver):
        return {}
    expires = min(now + LINK_TTL_SECS, answerable_until(interrupt))
    out = {}
    for option in link_choices(interrupt.payload):
        link = Link(tenant, session_id, interrupt.interrupt_id, interrupt.generation, option, approver,
                    int(expires))
        out[option] = f"{base_url.rstrip('/')}{PATH}{sealer.seal(PURPOSE, link.claims())}"
    return out


def read(sealer: Sealer, token: str, now: float) -> Link:
    """The link a token is, or a refusal naming the problem (tampered, expired)."""
    raw = sealer.unseal(PURPOSE, token)
    link = Link.from_claims(raw) if raw is not None else None
    if link is None:
        raise Refusal("invalid_link", "this link is not valid: it was altered or never issued", param="token")
    if now >= link.expires:
        raise Refusal("link_expired", "this link has expired; answer from the inbox instead", param="token")
    return link


def _current(store: Interrupts, link: Link) -> Interrupt | None:
    """The interrupt the link was minted for, if it is still that one (same generation)."""
    found = store.read_interrupt(link.tenant, link.session_id, link.interrupt_id)
    return found if found is not None and found.generation == link.generation else None


def show(store: Interrupts, sealer: Sealer, token: str, clock: Clock = time.time) -> dict[str, Any]:
    """What the confirmation page shows. Reads only: opening a link never changes anything."""
    link = read(sealer, token, clock())
    interrupt = _current(store, link)
    status = interrupt.status if interrupt is not None else "closed"
    choice = link_choices(interrupt.payload).get(link.option) if interrupt is not None else None
    out: dict[str, Any] = {
        "option": link.option, "label": choice["label"] if choice else link.option,
        "approver": link.approver_name, "status": status, "interrupt_id": link.interrupt_id,
        "session_id": link.session_id, "reason": interrupt.reason if interrupt is not None else None,
        "summary": summary(interrupt.payload, 512) if interrupt is not None else None}
    if interrupt is not None:  # what the person approves, as the console's card shows it
        action = interrupt.action.to_item() if interrupt.action else None
        out.update(readable(interrupt), action=action, expires_at=interrupt.expires_at, on_expiry=interrupt.on_expiry)
    return out


def follow(store: SessionsAndInterrupts, parking: Parking, sealer: Sealer, token: str, confirm: str | None,
           clock: Clock = time.time) -> Followed:
    """The page's button: resume with the link's option as the link's approver. `confirm` must
    name the option (the form sends it), so a bare POST of the URL does nothing."""
    link = read(sealer, token, clock())
    if confirm != link.option:
        raise Refusal("validation_error", f"confirm must be {link.option!r}, as the page's button sends it",
                      param="confirm")
    interrupt = _current(store, link)
    if interrupt is None:
        return Followed(Resumed(link.interrupt_id, noop=True), link.option)
    choice = link_choices(interrupt.payload).get(link.option)
    if choice is None:  # signed, but for an option this interrupt does not offer
        raise Refusal("invalid_link", "this link is not valid for this request", param="token")
    out = resume(store, parking, link.caller(), link.session_id, link.interrupt_id, choice["answer"], clock,
                 generation=link.generation, channel="link")
    return Followed(out, link.option)
