"""A3: an approver's edit of the action they approve. Where the approver policy allows it
(`edit: true`, `core.policy`), an approval may carry new arguments for the bound tool call: they
are checked against the tool's `input` schema (frozen on the interrupt at its raise), and the
approval then binds the edited action, whose fingerprint is new. The interrupt keeps every edit
(the action before and after, who, when), and an edit restarts a quorum's count
(`approvals.standing`). Pure: no clock, no I/O."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from holdpoint.core import schemas
from holdpoint.core.answers import Responder, Verdict
from holdpoint.core.bound_action import BoundAction, canonical
from holdpoint.core.errors import Refusal
from holdpoint.core.jsontypes import JsonObject, JsonValue
from holdpoint.core.policy import Policy

MAX_EDIT_BYTES = 16_384
"""An edit's arguments are at most this many bytes of canonical JSON: every edit is kept on the
interrupt's one item (at most 400 KB) beside the action it replaced."""
MAX_EDITS = 10
"""How many edits one interrupt keeps; past this an edit is refused (approve or deny as it stands)."""
MAX_EDITS_BYTES = 65_536
"""The arguments all of an interrupt's edits keep (each the action before and after) are at most
this many bytes in all, so the item stays well within DynamoDB's 400 KB."""
PARAM = "arguments"


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit as the interrupt records it: the action before and after, who made it and when,
    and `restart`, the index in the interrupt's answers of the editor's own approval, where the
    count of the edited action starts."""

    original: BoundAction
    action: BoundAction
    by: Responder
    at: str
    restart: int

    def to_item(self) -> JsonObject:
        return {"original": self.original.to_item(), "action": self.action.to_item(), "by": self.by.to_item(),
                "at": self.at, "restart": self.restart}

    @classmethod
    def from_item(cls, item: JsonValue) -> Edit | None:
        """An edit as stored; None for anything this code did not write."""
        body = item if isinstance(item, dict) else {}
        original, action = BoundAction.from_item(body.get("original")), BoundAction.from_item(body.get("action"))
        by, restart = Responder.from_item(body.get("by")), body.get("restart")
        if original is None or action is None or by is None or not isinstance(restart, int):
            return None
        return cls(original, action, by, str(body.get("at", "")), restart)

    def resumed(self, first: Edit) -> JsonObject:
        """What `interrupt.resumed` carries of the edits (this the last, `first` the first): the
        arguments the tool call runs with now, the action they bind, the action as raised, who
        edited last and when."""
        return {"arguments": _arguments(self.action), "action": self.action.to_item(),
                "original": first.original.to_item(), "by": self.by.to_item(), "at": self.at}


def arguments_to_run(edit: Mapping[str, Any] | None, called: Any) -> Any:
    """What the bound call runs with, for a worker or an external run (the SDK's `arguments_for`):
    an approver's edit's `arguments` where `interrupt.resumed` carries one, else the call's own."""
    return edit.get("arguments") if edit is not None else called


def _arguments(action: BoundAction) -> JsonValue:
    try:
        value: JsonValue = json.loads(action.arguments)
    except ValueError:
        return action.arguments
    return value


def edited(action: BoundAction | None, policy: Policy | None, schema: Any, arguments: JsonValue,
           verdict: Verdict, previous: Sequence[Edit] = ()) -> BoundAction | None:
    """The action an approval with `arguments` binds, or None when they are the action's own (no
    edit). Refused, naming the field, where the interrupt binds no action, its policy does not
    allow edits, the answer does not approve, or the arguments are too large, not an object or
    not what the tool's `input` schema (`schema`, None: any object) accepts."""
    if action is None:
        raise Refusal("invalid_resume", "this interrupt approves no tool call, so there are no arguments to "
                      "edit: send the answer without `arguments`", param=PARAM)
    if policy is None or not policy.allows_edit:
        raise Refusal("edit_not_allowed", "the approver policy of this interrupt does not allow edits (it needs "
                      "`edit: true`): approve or deny the action as it stands", param=PARAM)
    if verdict != "approved":
        raise Refusal("invalid_resume", "an edit is given only with an approval: a denial has nothing to run; "
                      "send `approved: true` with the edit, or leave out `arguments`", param=PARAM)
    size = len(canonical(arguments).encode())
    if size > MAX_EDIT_BYTES:
        raise Refusal("payload_too_large", f"edited arguments are at most {MAX_EDIT_BYTES} bytes of JSON, these "
                      f"{size}", param=PARAM)
    if not isinstance(arguments, dict):
        raise Refusal("invalid_resume", "arguments must be a JSON object: the tool call's arguments", param=PARAM)
    failure = schemas.evaluate(schema, arguments) if schema is not None else None
    if failure is not None:
        where = schemas.json_path(PARAM, failure.path) if failure.judged else PARAM
        raise Refusal("invalid_resume", f"the edited arguments do not satisfy the input schema of tool "
                      f"{action.tool!r}: {failure.message}", param=where)
    after = action.with_arguments(arguments)
    if after.fingerprint == action.fingerprint:
        return None
    _check_kept(action, after, previous)
    return after


def _check_kept(action: BoundAction, after: BoundAction, previous: Sequence[Edit]) -> None:
    """Every edit is kept on the interrupt's one item: a bounded number, of bounded size in all."""
    if len(previous) >= MAX_EDITS:
        raise Refusal("invalid_resume", f"this interrupt has been edited {MAX_EDITS} times, the most it keeps: "
                      "approve or deny the action as it stands", param=PARAM)
    kept = sum(len(e.original.arguments) + len(e.action.arguments) for e in previous)
    if kept + len(action.arguments) + len(after.arguments) > MAX_EDITS_BYTES:
        raise Refusal("payload_too_large", f"this interrupt's edits keep at most {MAX_EDITS_BYTES} bytes of "
                      "arguments in all (each edit keeps the action before and after it): approve or deny the "
                      "action as it stands", param=PARAM)
