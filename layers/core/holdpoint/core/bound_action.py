"""A3: the exact action an approval approves, and its fingerprint. A session's own tool call and
an external run's declared action are bound alike, so the fingerprint a person approved is the
one the worker, the receipt and the audit name."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from holdpoint.core.jsontypes import JsonObject, JsonValue


def canonical(value: object) -> str:
    """JSON text with sorted keys and no spaces: equal values give equal text (A3, A4)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def digest(value: object) -> str:
    """SHA-256 hex of a value's canonical JSON (the agent configuration's version, as the store's)."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()


def arguments_value(arguments: str) -> JsonValue:
    """A bound action's arguments as JSON, or the text as sent when it is not JSON."""
    try:
        value: JsonValue = json.loads(arguments)
    except ValueError:
        return arguments
    return value


def argument_pairs(arguments: str) -> list[tuple[str, JsonValue]]:
    """Each argument by name, the rows every channel shows an action as; arguments that are not an
    object are one row named `arguments`."""
    value = arguments_value(arguments)
    return [(str(k), v) for k, v in value.items()] if isinstance(value, dict) else [("arguments", value)]


@dataclass(frozen=True, slots=True)
class BoundAction:
    """The tool, the canonical JSON of its arguments (text that is not JSON as sent), the agent
    configuration in force (`agent_version`, its digest), and the fingerprint of the three."""

    tool: str
    arguments: str
    agent_version: str
    fingerprint: str

    @classmethod
    def of(cls, tool: str, arguments_text: str, agent: object) -> BoundAction:
        try:
            arguments = canonical(json.loads(arguments_text))
        except ValueError:
            arguments = arguments_text  # not JSON: bound to the text as sent
        return cls.bound(tool, arguments, digest(agent))

    @classmethod
    def bound(cls, tool: str, arguments: str, agent_version: str) -> BoundAction:
        """The action of these canonical arguments, with the fingerprint of the three."""
        return cls(tool, arguments, agent_version, digest([tool, arguments, agent_version]))

    def with_arguments(self, arguments: JsonValue) -> BoundAction:
        """The same tool under the same configuration with an approver's edited arguments: another
        action, so another fingerprint, which the approval then binds (A3)."""
        return self.bound(self.tool, canonical(arguments), self.agent_version)

    def to_item(self) -> JsonObject:
        return {"tool": self.tool, "arguments": self.arguments, "agent_version": self.agent_version,
                "fingerprint": self.fingerprint}

    @classmethod
    def from_item(cls, item: JsonValue) -> BoundAction | None:
        if not isinstance(item, dict):
            return None
        return cls(*(str(item.get(key, "")) for key in ("tool", "arguments", "agent_version", "fingerprint")))
