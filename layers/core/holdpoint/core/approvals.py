"""A2: approver policies and quorums. Who may answer an interrupt, and when its answers decide it.

A policy is declared on the agent (`approval`, the default), on a tool (`tools[].approval`, which
replaces the agent's for interrupts bound to that tool's calls) and on an interrupt (`approval`,
which may only narrow the policy in force). The effective policy is frozen on the interrupt when
it is raised. Everything here is pure: the resume service and the inbox ask `refusal_reason`,
`decides` says whether the recorded answers close the interrupt, and `outcome` how they did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from holdpoint.core import answers
from holdpoint.core.answers import Answer, Responder
from holdpoint.core.errors import PolicyError
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.policy import MAX_QUORUM, Approvers, Names, Policy, quorum_problem
from holdpoint.core.state import Interrupt

__all__ = ["MAX_QUORUM", "Policy"]

MAX_QUORUM_ANSWER_BYTES = 4_096
"""Every answer to a quorum is kept on the interrupt's one item (at most 400 KB), so each is small."""
END_USER = "user:"
"""A policy's `subjects` and `groups` name API-key principals (the tenant's keys, and the subjects
its own declarations map, such as a link's approver or a Slack user); an entry names an end user
(a client token's subject or `groups` claim) only as `user:NAME`. `key:NAME` names a key's
subject explicitly (for a subject that itself starts with `user:`)."""
_KEY = "key:"


def _entries(names: Sequence[str]) -> set[str]:
    """A policy's subjects or groups in one namespace: `user:NAME`, or `key:NAME` for a bare name."""
    return {n if n.startswith((END_USER, _KEY)) else _KEY + n for n in names}


def _principal(name: str, end_user: bool) -> str:
    return (END_USER if end_user else _KEY) + name


def narrow(in_force: Policy | None, override: Policy | None) -> Policy | None:
    """The interrupt's policy: `override` applied to the policy in force, only ever narrowing it.
    A field that would let in anyone the policy in force keeps out raises `PolicyError`."""
    if override is None or override == Policy():
        return in_force
    base = in_force or Policy()
    out = replace(base, **_narrowed_who(base, override), **_narrowed_how(base, override))
    if override.names_identities:  # the override's identities replace the base's
        out = replace(out, subjects=override.subjects, groups=override.groups)
    problem = quorum_problem(out.quorum, out.subjects, out.groups)
    if problem:
        raise PolicyError("quorum", problem)
    return out


def _narrowed_who(base: Policy, override: Policy) -> dict[str, Any]:
    """Origins, subjects, groups and escalation approvers: subsets of what the base admits."""
    out: dict[str, Any] = {}
    if override.origins is not None:
        if base.origins is not None:  # none named: any origin was admitted, so any list narrows
            _subset(override.origins, base.origins, "origins")
        out["origins"] = override.origins
    for key in IDENTITY_KEYS:
        given = getattr(override, key)
        if given is not None:
            if base.names_identities:
                _subset(given, getattr(base, key), key)
            out[key] = given
    if override.escalate_to is not None:
        _escalation_within(override.escalate_to, base)
        out["escalate_to"] = override.escalate_to
    return out


def _narrowed_how(base: Policy, override: Policy) -> dict[str, Any]:
    """`forbid_requester` may only be set, `quorum` only grow, `deny_resolves` only stay on, and
    `edit` only be turned off: an interrupt may not allow edits the policy in force does not."""
    out: dict[str, Any] = {}
    if override.edit and not base.allows_edit:
        raise PolicyError("edit", "edit may not be turned on here: the policy in force (the agent's or the "
                          "tool's `approval`) does not allow edits; declare `edit: true` there")
    if override.edit is not None:
        out["edit"] = override.edit
    if base.forbid_requester and override.forbid_requester is False:
        raise PolicyError("forbid_requester", "forbid_requester may not be turned off: the policy in force sets it")
    if override.forbid_requester:
        out["forbid_requester"] = True
    if override.quorum is not None:
        if override.quorum < base.required:
            raise PolicyError("quorum", f"quorum may only grow: the policy in force requires {base.quorum}")
        out["quorum"] = override.quorum
    if override.deny_resolves is False and base.denial_decides:
        raise PolicyError("deny_resolves", "deny_resolves may not be turned off: the policy in force resolves "
                          "on the first denial")
    if override.deny_resolves is not None:
        out["deny_resolves"] = override.deny_resolves
    return out


IDENTITY_KEYS = ("subjects", "groups")


def _subset(given: Names, allowed: Names | None, field: str) -> None:
    if allowed is None:
        raise PolicyError(field, f"{field} would widen the policy in force, which names no {field}")
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise PolicyError(field, f"{field} may only narrow the policy in force: {', '.join(extra)} not allowed by it")


def _escalation_within(escalate_to: Approvers, base: Policy) -> None:
    """An interrupt may name escalation approvers only among those the policy in force could reach."""
    if not base.names_identities:
        return
    reach = base.escalate_to or Approvers()
    for key in IDENTITY_KEYS:
        given = getattr(escalate_to, key)
        if given is not None:
            _subset(given, (*(getattr(base, key) or ()), *(getattr(reach, key) or ())), f"escalate_to.{key}")


def _admitted(policy: Policy, escalated: bool, escalate_to: Approvers | None) -> tuple[Names, Names]:
    """The subjects and groups a policy admits: with the escalation's (the interrupt's, else the
    policy's) once escalated."""
    extra = (escalate_to or policy.escalate_to or Approvers()) if escalated else Approvers()
    return (*(policy.subjects or ()), *(extra.subjects or ())), (*(policy.groups or ()), *(extra.groups or ()))


def refusal_reason(policy: Policy | None, caller_subject: str, caller_origin: str,
                   caller_groups: Sequence[str], requester: str | None, escalated: bool,
                   escalate_to: Approvers | None = None, *, end_user: bool = False) -> str | None:
    """Why this caller may not answer an interrupt under `policy` (None: it may). An escalated
    interrupt also admits `escalate_to` (the interrupt's, else the policy's). An `end_user` (a
    client token) matches only the policy's `user:` entries, an API key only the others."""
    if policy is None:
        return None
    if policy.origins and caller_origin not in policy.origins:
        return f"the policy admits origins {', '.join(policy.origins)}, not {caller_origin}"
    if policy.names_identities:
        named, grouped = _admitted(policy, escalated, escalate_to)
        subjects, groups = _entries(named), _entries(grouped)
        mine = {_principal(g, end_user) for g in caller_groups}
        if _principal(caller_subject, end_user) not in subjects and not groups.intersection(mine):
            who = _principal(caller_subject, end_user) if end_user else caller_subject
            return f"{who} is not one of the policy's approvers (subjects or groups)"
    if policy.forbid_requester and is_requester(requester, caller_subject, end_user):
        return f"{caller_subject} requested this action and the policy forbids approving one's own request"
    return None


def is_requester(requester: str | None, caller_subject: str, end_user: bool) -> bool:
    """Whether the caller is the interrupt's requester: the same principal (`user:NAME` or
    `key:NAME`). An interrupt with no requester refuses everyone the rule applies to (its raise
    is refused, `interrupts.raise_interrupt`, so only a record written before requesters were
    always kept has none); one recorded before principals were, by a bare name, stands for
    either kind of that name."""
    if requester is None:
        return True
    if requester.startswith((END_USER, _KEY)):
        return requester == _principal(caller_subject, end_user)
    return requester == caller_subject


def standing(interrupt: Interrupt) -> tuple[Answer, ...]:
    """A2/A3: the answers that count now. An edit restarts the count: only the answers from the
    edit on (the editor's own first) were given for the action as it now stands."""
    return interrupt.approvals[interrupt.edits[-1].restart:] if interrupt.edits else interrupt.approvals


def own_answer(interrupt: Interrupt, subject: str) -> Answer | None:
    """A2: this subject's standing answer to the interrupt, if it gave one (a second answer
    changes nothing; an answer to an action since edited no longer stands)."""
    return next((a for a in standing(interrupt) if a.subject == subject), None)


def waiting_for(interrupt: Interrupt) -> JsonObject:
    """Who an open interrupt still waits for: how many more approvals, and the named approvers
    (with the escalation's once escalated) who have not answered; groups as named."""
    policy = interrupt.policy or Policy()
    named, grouped = _admitted(policy, interrupt.escalated, interrupt.escalate_to)
    counted = standing(interrupt)
    answered = {a.subject for a in counted}
    approved = sum(1 for a in counted if a.status == "approved")
    return {"approvals": max(0, policy.required - approved),
            "subjects": list(dict.fromkeys(s for s in named if s not in answered)),
            "groups": list(dict.fromkeys(grouped))}


def interrupt_refusal(interrupt: Interrupt, caller_subject: str, caller_origin: str,
                      caller_groups: Sequence[str], *, end_user: bool = False) -> str | None:
    """`refusal_reason` for a stored interrupt (the resume, and the inbox's `approver=me`)."""
    return refusal_reason(interrupt.policy, caller_subject, caller_origin, caller_groups, interrupt.requester,
                          interrupt.escalated, interrupt.escalate_to, end_user=end_user)


def quorum_of(policy: Policy | None) -> int:
    return policy.required if policy is not None else 1


def decides(policy: Policy | None, recorded: Sequence[Answer]) -> bool:
    """Whether the last of the recorded answers closes the interrupt: a denial (or dismissal)
    unless `deny_resolves` is false, the approval that completes `quorum` distinct approvals, or
    any answer at all where no approver policy is in force (it has no verdict to count)."""
    last = recorded[-1].status
    if last == "answered" or (last in answers.DENIALS and (policy is None or policy.denial_decides)):
        return True
    return sum(1 for a in recorded if a.status == "approved") >= quorum_of(policy)


def answer(subject: str, origin: str, given: answers.Given, verdict: answers.Verdict, comment: str | None,
           at: str, channel: answers.Channel) -> Answer:
    """One answer as the interrupt records it (its `approvals`)."""
    return Answer(subject=subject, origin=origin, status=verdict, payload=given.payload, comment=comment, at=at,
                  channel=channel)


@dataclass(frozen=True)
class Outcome:
    """How a closed interrupt was decided: the verdict, who decided it, by which channel, whether
    it expired, and every answer recorded (the quorum's, in order)."""

    verdict: answers.Verdict
    responder: Responder | None
    channel: answers.Channel | None
    expired: bool
    approvals: tuple[Answer, ...]

    def fields(self) -> JsonObject:
        """The outcome as `interrupt.resumed` carries it beside `payload` (PROTOCOL.md §2.3)."""
        return {"verdict": self.verdict, "responder": self.responder.to_item() if self.responder else None,
                "channel": self.channel, "expired": self.expired,
                "approvals": [a.summary() for a in self.approvals]}


def outcome(interrupt: Interrupt) -> Outcome:
    """A closed interrupt's outcome: an expiry's from its `on_expiry` (A5), else the deciding
    answer's, which is always the last one recorded (the resolve appends it). Its answers are the
    standing ones: those given for the action as it stands (an edit restarts the count)."""
    recorded = standing(interrupt)
    if interrupt.status == "expired":
        return Outcome(answers.expiry_verdict(interrupt.on_expiry), interrupt.responder, "expiry", True, recorded)
    if not recorded:
        return Outcome("answered", interrupt.responder, None, False, recorded)
    return Outcome(recorded[-1].status, interrupt.responder, recorded[-1].channel, False, recorded)


def resumed(interrupt: Interrupt) -> JsonObject:
    """What `interrupt.resumed` carries for a closed interrupt: the person's answer as `payload`,
    and beside it how it was decided (`Outcome.fields`), the same for every channel and policy."""
    out: JsonObject = {"payload": interrupt.resolution, **outcome(interrupt).fields()}
    if interrupt.receipt is not None:  # the signed approval receipt, once the wake made it
        out["receipt"] = interrupt.receipt
    if interrupt.edits:  # A3: the tool call's arguments as the approver edited them
        out["edit"] = interrupt.edits[-1].resumed(interrupt.edits[0])
    return out
