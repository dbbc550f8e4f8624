"""A2's approver policy as an interrupt keeps it: frozen types, made once where the policy is
declared (`protocols.approval.ApprovalPolicy.frozen`) or read from a stored record, so nothing in
the core indexes a policy dict or re-checks its shape. The rules that read a policy are
`core/approvals.py`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from holdpoint.core.jsontypes import JsonObject, JsonValue

MAX_QUORUM = 20
"""The largest quorum a policy may ask for."""

Names = tuple[str, ...]


def quorum_problem(quorum: int | None, subjects: Sequence[str] | None, groups: Sequence[str] | None) -> str | None:
    """A quorum no one could meet: more than the subjects named, with no group to draw on."""
    if quorum is not None and subjects and not groups and quorum > len(set(subjects)):
        return f"quorum {quorum} is larger than the {len(set(subjects))} subject(s) the policy allows"
    return None


def _names(value: object, field: str) -> Names | None:
    """A stored list of names, or None when absent; anything else is not a policy this code wrote."""
    if value is None:
        return None
    if not (isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value)):
        raise ValueError(f"has {field} that is not a list of names")
    return tuple(value)


def _flag(value: object, field: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"has {field} that is not true or false")


def _put(out: JsonObject, key: str, value: Names | bool | int | None) -> None:
    if value is not None:
        out[key] = list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True, slots=True)
class Approvers:
    """Who an escalation adds (`escalate_to`): subjects and groups, either may be absent."""

    subjects: Names | None = None
    groups: Names | None = None

    def to_item(self) -> JsonObject:
        out: JsonObject = {}
        _put(out, "subjects", self.subjects)
        _put(out, "groups", self.groups)
        return out

    @classmethod
    def from_item(cls, item: object) -> Approvers:
        if not isinstance(item, Mapping):
            raise ValueError("has an escalate_to that is not an object")
        subjects, groups = item.get("subjects"), item.get("groups")
        return cls(_names(subjects, "escalate_to.subjects"), _names(groups, "escalate_to.groups"))


@dataclass(frozen=True, slots=True)
class Policy:
    """Who may answer (origins AND (subjects OR groups), not the requester when
    `forbid_requester`) and how many must (`quorum`, 1 when absent); the first denial decides
    unless `deny_resolves` is false. An absent field leaves callers unrestricted on it. A policy
    in force may name `escalate_to`; an interrupt keeps it apart (`Interrupt.escalate_to`).
    `edit` lets an approver change the action's arguments as they approve (A3); only `true` does."""

    origins: Names | None = None
    subjects: Names | None = None
    groups: Names | None = None
    forbid_requester: bool | None = None
    quorum: int | None = None
    deny_resolves: bool | None = None
    escalate_to: Approvers | None = None
    edit: bool | None = None

    @property
    def names_identities(self) -> bool:
        return self.subjects is not None or self.groups is not None

    @property
    def required(self) -> int:
        """How many distinct approvals decide it."""
        return self.quorum or 1

    @property
    def denial_decides(self) -> bool:
        return self.deny_resolves is not False

    @property
    def allows_edit(self) -> bool:
        """Fail closed: an approver may edit only where the policy says `edit: true`."""
        return self.edit is True

    def without_escalation(self) -> Policy:
        return replace(self, escalate_to=None)

    def or_none(self) -> Policy | None:
        """None for a policy that restricts nothing (`approval: {}`): no approver policy is in force."""
        return None if self == Policy() else self

    def to_item(self) -> JsonObject:
        """The policy as records and views carry it: only the fields given."""
        out: JsonObject = {}
        for key in ("origins", "subjects", "groups", "forbid_requester", "quorum", "deny_resolves", "edit"):
            _put(out, key, getattr(self, key))
        if self.escalate_to is not None:
            out["escalate_to"] = self.escalate_to.to_item()
        return out

    @classmethod
    def from_item(cls, item: JsonValue | Mapping[str, object]) -> Policy:
        """A policy from its JSON form; `ValueError` says why one is not well formed (a config a
        worker put in force was not checked by `PUT /v1/agents`, so this is where it is)."""
        if not isinstance(item, Mapping):
            raise ValueError("is not an object")
        quorum = item.get("quorum")
        if quorum is not None and (isinstance(quorum, bool) or not isinstance(quorum, int)
                                   or not 1 <= quorum <= MAX_QUORUM):
            raise ValueError(f"has a quorum that is not a whole number from 1 to {MAX_QUORUM}")
        escalate_to = item.get("escalate_to")
        return cls(origins=_names(item.get("origins"), "origins"), subjects=_names(item.get("subjects"), "subjects"),
                   groups=_names(item.get("groups"), "groups"),
                   forbid_requester=_flag(item.get("forbid_requester"), "forbid_requester"),
                   quorum=quorum, deny_resolves=_flag(item.get("deny_resolves"), "deny_resolves"),
                   escalate_to=Approvers.from_item(escalate_to) if escalate_to else None,
                   edit=_flag(item.get("edit"), "edit"))
