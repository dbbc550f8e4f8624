"""The `scripted` provider: canned replies chosen by the last prompt message, for tests and demos.

`{"provider": "scripted", "script": [{"when": {"role": "tool", "contains": "sent"}, "reply":
{"content": "...", "tool_calls": [{"name": "send_email", "arguments": {...}}]}}]}`: the first
rule whose `when` matches the last message answers (`contains`: a word or phrase of it, whole
words in any case); a rule without `when` always matches.
`stream` hands the reply's content over one word at a time (each word with the whitespace after it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from holdpoint.core.jsontypes import JsonObject
from holdpoint.core.outcomes import LlmOutcome, llm_reply
from holdpoint.llm.call import LlmCall, hand_over
from holdpoint.llm.chat import text
from holdpoint.llm.reply import tool_call
from holdpoint.ports import OnDelta

_WORD = re.compile(r"(?<=\s)(?=\S)")
"""Between a word's trailing whitespace and the next word: the points `stream` splits at."""


def _matches(when: Mapping[str, object] | None, last: Mapping[str, object]) -> bool:
    if not when:
        return True
    if "role" in when and last.get("role") != when["role"]:
        return False
    if "contains" in when and not _says(str(when["contains"]), text(last.get("content"))):
        return False
    return True


def _says(phrase: str, content: str) -> bool:
    """`contains`: the phrase as whole words, in any case ("hi" is in "say hi", not in "this")."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", content, re.IGNORECASE) is not None


def complete(call: LlmCall) -> LlmOutcome:
    """The first matching rule's reply, with word counts for usage and no cost; `ok` when none matches."""
    messages = call.messages
    last = messages[-1] if messages else {}
    for rule in call.config.get("script") or []:
        if _matches(rule.get("when"), last):
            reply = rule.get("reply") or {}
            message: JsonObject = {"role": "assistant", "content": reply.get("content")}
            calls = []
            for i, tc in enumerate(reply.get("tool_calls") or []):
                args = tc.get("arguments", {})
                calls.append(tool_call(call.call_id, i, tc.get("id"), tc["name"],
                                       args if isinstance(args, str) else json.dumps(args)))
            if calls:
                message["tool_calls"] = [*calls]
            prompt_tokens = sum(len(text(m.get("content")).split()) for m in messages)
            completion = len(text(message.get("content")).split()) + 8 * len(calls)
            return llm_reply(message, usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion},
                             cost=0.0)
    return llm_reply({"role": "assistant", "content": "ok"}, usage={"prompt_tokens": 0, "completion_tokens": 1},
                     cost=0.0)


def words(content: str) -> list[str]:
    """The content in the pieces `stream` hands over: each word with its trailing whitespace."""
    return [piece for piece in _WORD.split(content) if piece]


def stream(call: LlmCall, on_delta: OnDelta) -> LlmOutcome:
    """`complete`'s reply, its content handed to `on_delta` word by word first."""
    result = complete(call)
    for piece in words(text((result.get("message") or {}).get("content"))):
        hand_over(on_delta, piece)
    return result
