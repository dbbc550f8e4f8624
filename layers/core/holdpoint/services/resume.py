"""The resume path (R7, R17, A1, A2, A4): one consistent read of the interrupt, one conditional
write, then the release: the wake message and one SendTaskSuccess (neither for a quorum answer
that does not yet decide it)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from holdpoint.core import answers, approvals, edits, markdown, schemas
from holdpoint.core.answers import Answer, Responder
from holdpoint.core.bound_action import BoundAction
from holdpoint.core.edits import Edit
from holdpoint.core.errors import Refusal
from holdpoint.core.expiry import kept_until
from holdpoint.core.interrupts import Checked, may_resume, past_deadline, resumable_origins
from holdpoint.core.state import Interrupt, iso_ms
from holdpoint.ports import (
    AddAnswer,
    Clock,
    InterruptRef,
    Interrupts,
    Parking,
    Resolve,
    ResolveOutcome,
    SessionsAndInterrupts,
)
from holdpoint.services.caller import Caller

ROUNDS = 3
"""A2: a conditional write lost to another approver's answer is decided again on the item as it
then was (the failed write returns it), at most this many times in all; then 409 `conflict`."""


@dataclass(frozen=True)
class Progress:
    """Where an open quorum stands: approvals so far, of how many (A2)."""

    approvals: int
    quorum: int


@dataclass(frozen=True)
class Answered:
    """A2: this subject's own earlier answer to a still-open interrupt, which stands."""

    at: str | None
    status: str | None
    same_payload: bool


@dataclass(frozen=True)
class Cleared:
    """A4: who cleared the interrupt a repeated resume names, when and how."""

    subject: str | None
    origin: str | None
    at: str | None
    status: str
    same_payload: bool


@dataclass(frozen=True)
class Edited:
    """A3: the edit this resume made: the fingerprint the approval now binds, the one it replaced,
    and how many approvals of the replaced action no longer count (the count restarted)."""

    fingerprint: str
    replaces: str
    superseded: int


@dataclass(frozen=True)
class Resumed:
    """A resume's outcome (the edge renders it): `noop` when it changed nothing (A4); `progress`
    when the interrupt stays open under a quorum, with `answered` for this subject's repeat;
    `cleared` for a repeat on an interrupt already closed; `edited` for an approval that edited
    the action (A3)."""

    interrupt_id: str
    noop: bool
    progress: Progress | None = None
    answered: Answered | None = None
    cleared: Cleared | None = None
    known: bool = True  # False: this session never had an interrupt of this id (still a no-op, A4)
    edited: Edited | None = None

    @property
    def decided(self) -> bool:
        """This resume closed the interrupt (a quorum answer that decides nothing yet did not)."""
        return not self.noop and self.progress is None


def resume(store: SessionsAndInterrupts, parking: Parking, caller: Caller, session_id: str, interrupt_id: str,
           payload: Any, clock: Clock = time.time, expect_fingerprint: str | None = None,
           comment: str | None = None, generation: int | None = None, channel: answers.Channel = "api",
           arguments: Any = None) -> Resumed:
    """Clear an interrupt exactly once. Stale, unknown and duplicate ids are no-ops (200) that say
    how the interrupt was cleared (A4); an answer its response schema refuses changes nothing (A1),
    nor does an answer with no verdict under an approver policy, nor an `expect_fingerprint` that
    is not the fingerprint of the action it approves (A3), nor a caller its approver policy does
    not admit (A2). Under a quorum an answer that does not decide the interrupt is recorded
    (`comment` with it) and leaves it open. With `generation` (a sealed link's or Slack button's),
    an interrupt that is now another raise is a no-op too. `channel` is how the answer came.
    `arguments` (A3) edit the bound action as the approval approves it, where the policy allows:
    the approval binds the edited action, and a quorum's count restarts with it. A subject whose
    answer stands may not edit with a second one (409 naming `arguments`, never a silent no-op)."""
    if caller.session_id and caller.session_id != session_id:
        raise Refusal("not_found", f"session {session_id} not found")
    if comment is not None and len(comment) > answers.MAX_COMMENT:  # A6 (the wire models bound it too)
        raise Refusal("validation_error", f"comment is over {answers.MAX_COMMENT} characters", param="comment")
    found = store.read_interrupt(caller.tenant, session_id, interrupt_id)
    if found is None:
        if not store.session_exists(caller.tenant, session_id, caller.owner()):
            raise Refusal("not_found", f"session {session_id} not found")
        return Resumed(interrupt_id, noop=True, known=False)
    if not caller.owns(session_id, found.end_user):
        raise Refusal("not_found", f"session {session_id} not found")
    if generation not in (None, found.generation):  # the raise a sealed link or button was for is gone
        return Resumed(interrupt_id, noop=True)
    if found.status != "open":
        return _noop(parking, caller.tenant, session_id, found, payload, caller.subject)
    now_secs = clock()
    _check_deadline(found, iso_ms(now_secs))
    given, verdict = _check(caller, found, payload)
    _check_fingerprint(found, expect_fingerprint)
    _check_size(found, given)
    after = _check_edit(found, arguments, verdict)
    at = iso_ms(now_secs)
    mine = approvals.answer(caller.subject, caller.origin, given, verdict, comment, at, channel)
    until = kept_until(found.retention_days, now_secs)  # A6: how long the closed interrupt stays listable
    for _ in range(ROUNDS):
        own = approvals.own_answer(found, caller.subject)
        if own is not None:  # A2: a second answer by the same subject is a no-op, never a new edit
            _check_no_new_edit(own, after)
            return _noop_open(found, own, payload)
        edit = _edit(found, after, caller, at)
        outcome, now = _write(store, caller, session_id, found, mine, until, edit)
        if outcome in ("resolved", "recorded"):
            return _written(parking, caller.tenant, session_id, outcome, now or found, _edited(found, edit))
        if outcome == "not_found":
            raise Refusal("not_found", f"session {session_id} not found")
        if outcome == "expired" and now is not None:  # its deadline passed between the read and the write
            _check_deadline(now, at)
        if outcome != "raced" or now is None:
            break
        _check_same_action(found, now)
        found = now  # another approver's answer landed first: decide again on what is there now
    if outcome in ("changed", "forbidden", "raced") or now is None or now.status == "open":
        # Raised again (another generation, perhaps another schema) between the read and the write,
        # or answered by others faster than this resume could record its answer.
        raise Refusal("conflict", "the interrupt changed while this resume was checked; retry",
                      param="interrupt_id")
    return _noop(parking, caller.tenant, session_id, now, payload, caller.subject)


def _write(store: Interrupts, caller: Caller, session_id: str, found: Interrupt, mine: Answer,
           until: int | None, edit: Edit | None = None) -> tuple[ResolveOutcome, Interrupt | None]:
    """One conditional UpdateItem: record an answer that decides nothing yet, or resolve with it
    (kept until `until`, A6). An edit is written with its approval, and the count restarts there:
    the answers that count are the edit's approval alone (A3)."""
    where = InterruptRef(caller.tenant, session_id, found.interrupt_id)
    checked = Checked(resumable_origins(caller.origin), caller.owner(), found.generation, len(found.approvals),
                      now=mine.at)  # the answer's own time (`approvals.answer`)
    counted = [mine] if edit is not None else [*approvals.standing(found), mine]
    if not approvals.decides(found.policy, counted):
        return store.record_approval(AddAnswer(where, checked, mine, edit))
    return store.resolve_interrupt(Resolve(
        where, checked, resolution=mine.payload, responder=Responder(caller.subject, caller.origin),
        at=mine.at, approval=mine, kept_until=until, edit=edit))


def _check_edit(found: Interrupt, arguments: Any, verdict: answers.Verdict) -> BoundAction | None:
    """A3: the action an edit with this answer binds (None: no edit), or the refusal naming why."""
    if arguments is None:
        return None
    return edits.edited(found.action, found.policy, found.edit_schema, arguments, verdict, found.edits)


def _check_no_new_edit(own: Answer, after: BoundAction | None) -> None:
    """A2/A3: this subject's answer stands, so a repeat of it is a no-op; one that edits the action
    as it stands (arguments not the action's own) would be dropped by that no-op, so it is refused
    (409 naming `arguments`) and the approver learns the edit was not taken."""
    if after is not None:
        raise Refusal("conflict", f"you have already answered this interrupt ({own.status} at {own.at}) and your "
                      "answer stands, so a second answer may not edit the action: nothing was recorded. Send the "
                      "answer again without `arguments` (a no-op), or leave the edit to another approver (an "
                      "edit restarts a quorum's count)", param=edits.PARAM)


def _edit(found: Interrupt, after: BoundAction | None, caller: Caller, at: str) -> Edit | None:
    """A3: the edit as the interrupt records it: its approval is the next answer, where the count restarts."""
    if after is None or found.action is None:
        return None
    return Edit(found.action, after, Responder(caller.subject, caller.origin), at, restart=len(found.approvals))


def _edited(found: Interrupt, edit: Edit | None) -> Edited | None:
    """What the reply says of an edit: the new fingerprint, the one replaced, the approvals superseded."""
    if edit is None:
        return None
    superseded = sum(1 for a in approvals.standing(found) if a.status == "approved")
    return Edited(edit.action.fingerprint, edit.original.fingerprint, superseded)


def _check_same_action(read: Interrupt, now: Interrupt) -> None:
    """A3: an answer is given for the action as it was read; one an edit replaced meanwhile is
    refused (409 naming the new fingerprint), never counted for an action its approver never saw.
    Of two racing editors, one wins and the other is refused here."""
    before = read.action.fingerprint if read.action is not None else None
    _check_fingerprint(now, before)


def _written(parking: Parking, tenant: str, session_id: str, outcome: ResolveOutcome,
             interrupt: Interrupt, edited: Edited | None = None) -> Resumed:
    """The answer to a resume whose write landed: resolved (the branch wakes) or recorded (open)."""
    if outcome == "resolved":
        parking.release(tenant, session_id, interrupt)
        return Resumed(interrupt.interrupt_id, noop=False, edited=edited)
    return Resumed(interrupt.interrupt_id, noop=False, progress=_progress(interrupt), edited=edited)


def _progress(interrupt: Interrupt) -> Progress:
    """Where an open quorum stands: approvals of the action as it stands so far, of how many."""
    return Progress(approvals=sum(1 for a in approvals.standing(interrupt) if a.status == "approved"),
                    quorum=approvals.quorum_of(interrupt.policy))


def _noop_open(interrupt: Interrupt, own: Answer, payload: Any) -> Resumed:
    """A2: the subject has answered this still-open interrupt already; its answer stands."""
    same = _canonical(answers.given(payload).payload) == _canonical(own.payload)
    return Resumed(interrupt.interrupt_id, noop=True, progress=_progress(interrupt),
                   answered=Answered(at=own.at, status=own.status, same_payload=same))


def _check_size(interrupt: Interrupt, given: answers.Given) -> None:
    """A2: every answer to a quorum is kept on the interrupt's one item, so each is small."""
    size = len(_canonical(given.payload))
    if approvals.quorum_of(interrupt.policy) > 1 and size > approvals.MAX_QUORUM_ANSWER_BYTES:
        raise Refusal("payload_too_large", f"an answer to a quorum is at most {approvals.MAX_QUORUM_ANSWER_BYTES} "
                      f"bytes of JSON, this one {size}", param="payload")


def _check(caller: Caller, interrupt: Interrupt, payload: Any) -> tuple[answers.Given, answers.Verdict]:
    """R17 (origin rank), A2 (the approver policy), then the answer itself: A1 (the response
    schema, which a missing answer never satisfies) and its verdict (under a policy it must say
    whether it approves), before anything is written. The answer as read and its verdict."""
    refused = refusal(caller, interrupt)
    if refused is not None:
        raise refused
    given = answers.given(payload)
    schema = schemas.declared(interrupt.response_schema, interrupt.payload)
    if schema is not None and given.empty:
        raise Refusal("invalid_resume", "this interrupt declares a response_schema, and the resume sent no answer: "
                      "send the answer in `payload`", param=given.param)
    failed = None if given.cancelled else schemas.answer_error(interrupt.response_schema, given.payload,
                                                               given.param)
    if failed is not None:
        raise Refusal("invalid_resume", failed[1], param=failed[0])
    options = answers.declared_options(interrupt.payload)
    return given, answers.verdict(given, options, under_policy=interrupt.policy is not None)


def refusal(caller: Caller, interrupt: Interrupt) -> Refusal | None:
    """Why this caller may not answer the interrupt at all: R17's origin rank, then its approver
    policy (A2, with the escalation's approvers once escalated). The resume raises it; the inbox
    and the session view show it, so a person is offered only what they may do."""
    if not may_resume(caller.origin, interrupt.origin):
        return Refusal("forbidden", f"an interrupt raised by {interrupt.origin} cannot be cleared by {caller.origin}",
                       param="interrupt_id")
    reason = approvals.interrupt_refusal(interrupt, caller.subject, caller.origin, caller.groups,
                                         end_user=caller.own_only)
    return Refusal("not_an_approver", reason, param="interrupt_id") if reason is not None else None


def yours(caller: Caller, interrupt: Interrupt) -> dict[str, Any]:
    """What the caller may do with an open interrupt, by the resume's own rules: answer it, or why
    not (refused by the origin rank or the policy, or already answered: its answer stands, A2),
    and whether it may edit the action as it approves (A3)."""
    own = approvals.own_answer(interrupt, caller.subject)
    if own is not None:
        return {"may_answer": False, "why": "you have answered; your answer stands",
                "answered": {"status": own.status, "at": own.at}}
    refused = refusal(caller, interrupt)
    may_edit = refused is None and interrupt.action is not None and interrupt.policy is not None \
        and interrupt.policy.allows_edit  # A3: the console offers the edit only where it would be taken
    out = {"may_answer": refused is None, "why": refused.message if refused is not None else None}
    return {**out, "may_edit": True} if may_edit else out


def open_fields(caller: Caller, interrupt: Interrupt) -> dict[str, Any]:
    """What a console needs to offer only what this caller may do with an open interrupt: `you`
    (may they answer, why not), `waiting_for` (the approvals and approvers still missing), and
    the question to show (`readable`)."""
    out = {"you": yours(caller, interrupt), "waiting_for": approvals.waiting_for(interrupt)}
    return {**out, **readable(interrupt)}


END_USER_HIDDEN = ("policy", "escalate_to", "escalated")
"""An interrupt's fields an end user's views leave out: who the tenant's approvers are is not hers to read."""


def shown_to(caller: Caller, view: dict[str, Any]) -> dict[str, Any]:
    """An interrupt's view as the caller may read it: whole to the tenant's API keys; to an end
    user (a client token) without the approver policy (`policy: null` where there is one), and
    with `waiting_for` naming only end users (`user:` entries) beside the approvals still missing."""
    if not caller.own_only:
        return view
    out = {k: v for k, v in view.items() if k not in END_USER_HIDDEN}
    if view.get("policy") is not None:
        out["policy"] = None  # there is one: a page says "the tenant's approvers", not "anyone"
    waiting = out.get("waiting_for")
    if isinstance(waiting, dict):
        out["waiting_for"] = {"approvals": waiting.get("approvals"), "groups": [],
                              "subjects": [s for s in waiting.get("subjects") or [] if str(s).startswith("user:")]}
    return out


def readable(interrupt: Interrupt) -> dict[str, Any]:
    """The question as a page renders it (`core.markdown`: a safe subset, parsed here once)."""
    shown = markdown.question(interrupt.payload)
    return {"message_blocks": shown} if shown is not None else {}


def _check_deadline(interrupt: Interrupt, now: str) -> None:
    """R16: past `expires_at` an answer no longer counts, on every channel, even before the expiry
    is applied (ParkBranch's timeout, then the engine): 410 `interrupt_expired`, nothing recorded.
    The resolve's conditional write carries the same deadline, so an answer racing it loses."""
    if past_deadline(interrupt, now):
        outcome = interrupt.on_expiry or "cancel"
        raise Refusal("interrupt_expired", f"this interrupt expired at {interrupt.expires_at}: its expiry "
                      f"answers `{outcome}` and nothing was recorded", param="interrupt_id",
                      expires_at=interrupt.expires_at, on_expiry=outcome)


def _check_fingerprint(interrupt: Interrupt, expected: str | None) -> None:
    """A3: an approval given for one exact action is refused once the open interrupt binds another."""
    if expected is None:
        return
    actual = interrupt.action.fingerprint if interrupt.action is not None else None
    if expected != actual:
        raise Refusal("stale_approval", "expect_fingerprint is not the fingerprint of the action this interrupt "
                      "approves now (the action changed, or the value has a typo): read `action.fingerprint` "
                      "from the interrupt again and resend", param="expect_fingerprint", fingerprint=actual)


def _noop(parking: Parking, tenant: str, session_id: str, interrupt: Interrupt, payload: Any,
          subject: str | None = None) -> Resumed:
    """A4: a repeated resume changes nothing and says who cleared the interrupt, when, and how."""
    if interrupt.status == "resolved" and not interrupt.woken:
        # A resume whose release was lost (crash) is completed by the retry: the engine applies
        # one wake per interrupt generation, and a spent token answers InvalidToken.
        parking.release(tenant, session_id, interrupt)
    who = interrupt.responder
    same = _canonical(answers.given(payload).payload) == _canonical(_answered_with(interrupt, subject))
    return Resumed(interrupt.interrupt_id, noop=True, cleared=Cleared(
        subject=who.subject if who else None, origin=who.origin if who else None, at=interrupt.resolved_at,
        status=interrupt.status, same_payload=same))


def _answered_with(interrupt: Interrupt, subject: str | None) -> Any:
    """What a repeat is compared with: this subject's own answer to a quorum, else the resolution."""
    own = approvals.own_answer(interrupt, subject or "") if approvals.quorum_of(interrupt.policy) > 1 else None
    return own.payload if own is not None else interrupt.resolution


def _canonical(value: Any) -> str:
    """JSON text with sorted keys: the same answer compares equal whatever its key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def precheck(store: Interrupts, caller: Caller, session_id: str, interrupt_id: str, payload: Any,
             arguments: Any = None) -> None:
    """The refusals `resume` would give before writing (R17 origin, A2 policy, A1 schema, the
    verdict, A3's edit, an edit by a subject whose answer stands), without writing:
    a caller resuming several interrupts at once checks them all first, so a bad one records nothing."""
    found = store.read_interrupt(caller.tenant, session_id, interrupt_id)
    if found is not None and found.status == "open":
        after = _check_edit(found, arguments, _check(caller, found, payload)[1])
        own = approvals.own_answer(found, caller.subject)
        if own is not None:
            _check_no_new_edit(own, after)
