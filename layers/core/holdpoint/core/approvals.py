"""A2: approver policies and quorums. Who may answer an interrupt, and when its answers decide it.

A policy is declared on the agent (`approval`, the default), on a tool (`tools[].approval`, which
replaces the agent's for interrupts bound to that tool's calls) and on an interrupt (`approval`,
which may only narrow the policy in force). The effective policy is frozen on the interrupt when
it is raised. Everything here is pure: the resume service and the inbox ask `refusal_reason`,
`decides` says whether the recorded answers close the interrupt, and `outcome` how they did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from holdpoint.core import answers
from holdpoint.core.errors import PolicyError
from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.state import Interrupt

MAX_COMMENT = 2_000
"""A resume's `comment` is at most this many characters (400 `param: comment` beyond)."""
MAX_QUORUM = 20
"""The largest quorum a policy may ask for."""
MAX_QUORUM_ANSWER_BYTES = 4_096
"""Every answer to a quorum is kept on the interrupt's one item (at most 400 KB), so each is small."""
IDENTITY_KEYS = ("subjects", "groups")
END_USER = "user:"
"""A policy's `subjects` and `groups` name API-key principals (the tenant's keys, and the subjects
its own declarations map, such as a link's approver or a Slack user); an entry names an end user
(a client token's subject or `groups` claim) only as `user:NAME`. `key:NAME` names a key's
subject explicitly (for a subject that itself starts with `user:`)."""
_KEY = "key:"


def _entries(names: Any) -> set[str]:
    """A policy's subjects or groups in one namespace: `user:NAME`, or `key:NAME` for a bare name."""
    return {n if n.startswith((END_USER, _KEY)) else _KEY + n for n in names if isinstance(n, str)}


def _principal(name: str, end_user: bool) -> str:
    return (END_USER if end_user else _KEY) + name


class Policy(TypedDict, total=False):
    """A policy as an interrupt stores it (the wire model is `agent_config.ApprovalPolicy`, which
    checks it where it is declared): who may answer (origins AND (subjects OR groups), not the
    requester when `forbid_requester`) and how many must (`quorum`, default 1); the first denial
    decides unless `deny_resolves` is false. An absent field leaves callers unrestricted on it. An
    interrupt keeps `escalate_to` apart from its `policy` (`Interrupt.escalate_to`)."""

    origins: list[str]
    subjects: list[str]
    groups: list[str]
    forbid_requester: bool
    quorum: int
    deny_resolves: bool
    escalate_to: dict[str, list[str]]


def quorum_problem(quorum: int | None, subjects: list[str] | None, groups: list[str] | None) -> str | None:
    """A quorum no one could meet: more than the subjects named, with no group to draw on."""
    if quorum is not None and subjects and not groups and quorum > len(set(subjects)):
        return f"quorum {quorum} is larger than the {len(set(subjects))} subject(s) the policy allows"
    return None


def declared(model: Any) -> JsonObject | None:
    """A declared (already validated) policy model as stored: only the fields given."""
    if model is None:
        return None
    out: JsonObject = model.model_dump(mode="json", exclude_none=True)
    return out


def in_force(agent: Mapping[str, object] | None, tool: str | None) -> JsonObject | None:
    """The tool's own policy for an interrupt bound to its call, else the agent's default. Declared
    agents were checked by `PUT /v1/agents`; a config a worker put in force was not, so a policy in
    it that is not well formed raises `PolicyError` (the raise is refused, not the later resume)."""
    agent = agent or {}
    found = agent.get("approval")
    tools = agent.get("tools")
    for spec in tools if isinstance(tools, list) else []:  # nothing else holds a tool's object
        if tool is not None and isinstance(spec, dict) and spec.get("name") == tool and spec.get("approval"):
            found = spec["approval"]
    if found is None:
        return None
    problem = _malformed(found)
    if problem or not isinstance(found, dict):  # _malformed refuses anything but an object
        raise PolicyError("", f"the policy in force (the agent's or the tool's `approval`) {problem}")
    return dict(found)


def _malformed(policy: Any) -> str | None:
    """Why a stored policy cannot be used, judged by the shapes `refusal_reason` and `verdict` read."""
    if not isinstance(policy, dict):
        return "is not an object"
    for key in ("origins", *IDENTITY_KEYS):
        value = policy.get(key)
        if value is not None and not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            return f"has {key} that is not a list of names"
    quorum = policy.get("quorum", 1)
    if isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= MAX_QUORUM:
        return f"has a quorum that is not a whole number from 1 to {MAX_QUORUM}"
    if not isinstance(policy.get("escalate_to") or {}, dict):
        return "has an escalate_to that is not an object"
    return None


def narrow(in_force: dict[str, Any] | None, override: dict[str, Any] | None) -> dict[str, Any] | None:
    """The interrupt's policy: `override` applied to the policy in force, only ever narrowing it.
    A field that would let in anyone the policy in force keeps out raises `PolicyError`."""
    if not override:
        return in_force
    base = dict(in_force or {})
    out = {**base, **_narrowed_who(base, override), **_narrowed_how(base, override)}
    if any(override.get(k) is not None for k in IDENTITY_KEYS):  # the override's identities replace the base's
        for key in IDENTITY_KEYS:
            if override.get(key) is None:
                out.pop(key, None)
    problem = quorum_problem(out.get("quorum"), out.get("subjects"), out.get("groups"))
    if problem:
        raise PolicyError("quorum", problem)
    return out


def _narrowed_who(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Origins, subjects, groups and escalation approvers: subsets of what the base admits."""
    out: dict[str, Any] = {}
    if override.get("origins") is not None:
        if base.get("origins") is not None:  # none named: any origin was admitted, so any list narrows
            _subset(override["origins"], base["origins"], "origins")
        out["origins"] = override["origins"]
    for key in IDENTITY_KEYS:
        if override.get(key) is not None:
            if _names_identities(base):
                _subset(override[key], base.get(key), key)
            out[key] = override[key]
    if override.get("escalate_to") is not None:
        _escalation_within(override["escalate_to"], base)
        out["escalate_to"] = override["escalate_to"]
    return out


def _narrowed_how(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`forbid_requester` may only be set, `quorum` only grow, `deny_resolves` only stay on."""
    out: dict[str, Any] = {}
    if base.get("forbid_requester") and override.get("forbid_requester") is False:
        raise PolicyError("forbid_requester", "forbid_requester may not be turned off: the policy in force sets it")
    if override.get("forbid_requester"):
        out["forbid_requester"] = True
    if override.get("quorum") is not None:
        if override["quorum"] < base.get("quorum", 1):
            raise PolicyError("quorum", f"quorum may only grow: the policy in force requires {base.get('quorum')}")
        out["quorum"] = override["quorum"]
    if override.get("deny_resolves") is False and base.get("deny_resolves", True):
        raise PolicyError("deny_resolves", "deny_resolves may not be turned off: the policy in force resolves "
                          "on the first denial")
    if override.get("deny_resolves") is not None:
        out["deny_resolves"] = override["deny_resolves"]
    return out


def _names_identities(policy: Mapping[str, object]) -> bool:
    return any(policy.get(k) is not None for k in IDENTITY_KEYS)


def _subset(given: list[str], allowed: list[str] | None, field: str) -> None:
    if allowed is None:
        raise PolicyError(field, f"{field} would widen the policy in force, which names no {field}")
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise PolicyError(field, f"{field} may only narrow the policy in force: {', '.join(extra)} not allowed by it")


def _escalation_within(escalate_to: dict[str, Any], base: dict[str, Any]) -> None:
    """An interrupt may name escalation approvers only among those the policy in force could reach."""
    if not _names_identities(base):
        return
    reach = base.get("escalate_to") or {}
    for key in IDENTITY_KEYS:
        if escalate_to.get(key) is not None:
            allowed = [*(base.get(key) or []), *(reach.get(key) or [])]
            _subset(escalate_to[key], allowed, f"escalate_to.{key}")


def refusal_reason(policy: dict[str, Any] | None, caller_subject: str, caller_origin: str,
                   caller_groups: list[str] | tuple[str, ...], requester: str | None, escalated: bool,
                   escalate_to: dict[str, Any] | None = None, *, end_user: bool = False) -> str | None:
    """Why this caller may not answer an interrupt under `policy` (None: it may). An escalated
    interrupt also admits `escalate_to` (the interrupt's, else the policy's). An `end_user` (a
    client token) matches only the policy's `user:` entries, an API key only the others."""
    if not policy:
        return None
    origins = policy.get("origins")
    if origins and caller_origin not in origins:
        return f"the policy admits origins {', '.join(origins)}, not {caller_origin}"
    if _names_identities(policy):
        extra = (escalate_to or policy.get("escalate_to") or {}) if escalated else {}
        subjects = _entries([*(policy.get("subjects") or []), *(extra.get("subjects") or [])])
        groups = _entries([*(policy.get("groups") or []), *(extra.get("groups") or [])])
        mine = {_principal(g, end_user) for g in caller_groups}
        if _principal(caller_subject, end_user) not in subjects and not groups.intersection(mine):
            who = _principal(caller_subject, end_user) if end_user else caller_subject
            return f"{who} is not one of the policy's approvers (subjects or groups)"
    if policy.get("forbid_requester") and is_requester(requester, caller_subject, end_user):
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


def own_answer(interrupt: Interrupt, subject: str) -> JsonObject | None:
    """A2: this subject's answer to the interrupt, if it gave one (a second answer changes nothing)."""
    return next((dict(a) for a in interrupt.approvals if a.get("subject") == subject), None)


def waiting_for(interrupt: Interrupt) -> JsonObject:
    """Who an open interrupt still waits for: how many more approvals, and the named approvers
    (with the escalation's once escalated) who have not answered; groups as named."""
    policy = interrupt.policy or {}
    extra = (interrupt.escalate_to or policy.get("escalate_to") or {}) if interrupt.escalated else {}
    answered = {a.get("subject") for a in interrupt.approvals}
    subjects = [s for s in [*(policy.get("subjects") or []), *(extra.get("subjects") or [])] if s not in answered]
    approved = sum(1 for a in interrupt.approvals if a.get("status") == "approved")
    return {"approvals": max(0, quorum_of(policy) - approved), "subjects": list(dict.fromkeys(subjects)),
            "groups": list(dict.fromkeys([*(policy.get("groups") or []), *(extra.get("groups") or [])]))}


def interrupt_refusal(interrupt: Interrupt, caller_subject: str, caller_origin: str,
                      caller_groups: list[str] | tuple[str, ...], *, end_user: bool = False) -> str | None:
    """`refusal_reason` for a stored interrupt (the resume, and the inbox's `approver=me`)."""
    return refusal_reason(interrupt.policy, caller_subject, caller_origin, caller_groups, interrupt.requester,
                          interrupt.escalated, interrupt.escalate_to, end_user=end_user)


def quorum_of(policy: Mapping[str, object] | None) -> int:
    quorum = (policy or {}).get("quorum") or 1
    if not isinstance(quorum, int):  # a stored policy's quorum is a whole number (`_malformed`, ApprovalPolicy)
        raise TypeError("a policy's quorum is a whole number")
    return int(quorum)


def decides(policy: Mapping[str, object] | None, recorded: Sequence[Mapping[str, object]]) -> bool:
    """Whether the last of the recorded answers closes the interrupt: a denial (or dismissal)
    unless `deny_resolves` is false, the approval that completes `quorum` distinct approvals, or
    any answer at all where no approver policy is in force (it has no verdict to count)."""
    last = recorded[-1]["status"]
    if last == "answered" or (last in answers.DENIALS and (policy or {}).get("deny_resolves", True)):
        return True
    return sum(1 for a in recorded if a["status"] == "approved") >= quorum_of(policy)


def answer(subject: str, origin: str, given: answers.Given, verdict: answers.Verdict, comment: str | None,
           at: str, channel: answers.Channel) -> JsonObject:
    """One answer as the interrupt records it (its `approvals`): who, the verdict as `status`, the
    payload the person gave, their comment, when, and by which channel."""
    return {"subject": subject, "origin": origin, "status": verdict, "payload": given.payload,
            "comment": comment, "at": at, "channel": channel}


ANSWER_FIELDS = ("subject", "origin", "status", "channel", "comment", "at")
"""What `interrupt.resumed` and the notifications repeat of each recorded answer (not its payload)."""


@dataclass(frozen=True)
class Outcome:
    """How a closed interrupt was decided: the verdict, who decided it, by which channel, whether
    it expired, and every answer recorded (the quorum's, in order)."""

    verdict: answers.Verdict
    responder: JsonObject | None
    channel: answers.Channel | None
    expired: bool
    approvals: list[JsonObject]

    def fields(self) -> JsonObject:
        """The outcome as `interrupt.resumed` carries it beside `payload` (PROTOCOL.md §2.3)."""
        return {"verdict": self.verdict, "responder": self.responder, "channel": self.channel,
                "expired": self.expired, "approvals": [
                    {k: a.get(k) for k in ANSWER_FIELDS} for a in self.approvals]}


def outcome(interrupt: Interrupt) -> Outcome:
    """A closed interrupt's outcome: an expiry's from its `on_expiry` (A5), else the deciding
    answer's, which is always the last one recorded (the resolve appends it)."""
    recorded = [dict(a) for a in interrupt.approvals]
    if interrupt.status == "expired":
        return Outcome(answers.expiry_verdict(interrupt.on_expiry), interrupt.responder, "expiry", True, recorded)
    last = recorded[-1] if recorded else {}
    verdict = answers.as_verdict(last.get("status")) or "answered"
    return Outcome(verdict, interrupt.responder, answers.as_channel(last.get("channel")), False, recorded)


def resumed(interrupt: Interrupt) -> JsonObject:
    """What `interrupt.resumed` carries for a closed interrupt: the person's answer as `payload`,
    and beside it how it was decided (`Outcome.fields`), the same for every channel and policy."""
    return {"payload": interrupt.resolution, **outcome(interrupt).fields()}
