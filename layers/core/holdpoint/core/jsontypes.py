"""JSON whose shape Holdpoint does not own (a tool's arguments, a JSON Schema, a payload relayed
as is), as types mypy checks: a reader narrows before it indexes, where `Any` would let it assume."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
JsonObject: TypeAlias = "dict[str, JsonValue]"
