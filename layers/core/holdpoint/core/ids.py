"""Ids, input and action tags, and validation error locations as `param`s: what the HTTP edge
checks on every request, kept apart from the pydantic models in `protocol` so a handler that
needs only these (the resume function) never builds or imports the models."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from holdpoint.core.errors import Refusal

if TYPE_CHECKING:
    from pydantic import ValidationError

ID_REGEX = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,63}$"
ID_PATTERN = re.compile(ID_REGEX)
IDEMPOTENCY_KEY_REGEX = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,254}$"
"""An `Idempotency-Key` header: an id's alphabet, up to 255 characters (a UUID fits)."""


PAIR_SEPARATOR = "~"
"""Joins a session id and a record id into one protocol id (an A2A task, an MCP approval): `~` is
in no id's alphabet, so the pair splits back one way only."""


def pair_id(session_id: str, record_id: str) -> str:
    return f"{session_id}{PAIR_SEPARATOR}{record_id}"


def split_pair(value: str, what: str, param: str) -> tuple[str, str]:
    """(session_id, record_id) of a `pair_id`; one that cannot be ours is an unknown `what`
    (404 `not_found`, naming `param`)."""
    sid, sep, rid = value.partition(PAIR_SEPARATOR)
    if not sep or not ID_PATTERN.fullmatch(sid) or not ID_PATTERN.fullmatch(rid):
        raise Refusal("not_found", f"{what} {value[:100]} not found", param)
    return sid, rid


def error_param(loc: tuple[Any, ...], tags: frozenset[str] = frozenset()) -> str:
    """Render a pydantic error location as `actions[0].reason`, dropping union tags."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in tags or (isinstance(part, str) and ("." in part or part.startswith("function-"))):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


ACTION_TAGS = frozenset(
    {"llm.call", "tool.call", "tool.result", "tool.error", "llm.result", "llm.error", "sub_agent.spawn",
     "message.send", "interrupt", "done", "fail"}
)
INPUT_TAGS = frozenset({"client.message", "client.messages", "client.action", "interrupt.resume",
                        "tool.result", "tool.error"})


def first_error(exc: ValidationError, prefix: str = "") -> tuple[str, str]:
    """The first validation error as (param, message), the param naming the field."""
    err = exc.errors()[0]
    param = error_param(tuple(err["loc"]), ACTION_TAGS | INPUT_TAGS)
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        param = f"{param}.type" if param else "type"
    if prefix:
        param = f"{prefix}.{param}" if param else prefix
    return param, next_step(err["type"], param, err["msg"])


def next_step(kind: str, param: str, message: str) -> str:
    """Pydantic's message with what to do about it, for the errors a person meets first: a field
    the body does not have (most often an answer sent without its `payload` wrapper), and a
    string where an object belongs (a plain-text `message`)."""
    field = param.rsplit(".", 1)[-1]
    if kind == "extra_forbidden":
        hint = (f"`{field}` is not a field of this body; remove it or check its spelling")
        if "." not in param and "[" not in param:
            hint += " (an interrupt's answer goes inside `payload`: {\"payload\": {...}})"
        return hint
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        hint = f"{param or 'the body'} must be a JSON object"
        if field == "message":
            hint += ', such as {"role": "user", "content": "Email Bob"}'
        return hint
    return message
