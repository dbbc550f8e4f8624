"""Fix 25 to moto 5.2.5's X-Ray.

25. **GetTraceSummaries filters on annotations.** moto answers any `FilterExpression` with a 500
    ("Not implemented yet") and every summary with empty `Annotations`, so a trace could not be
    found by the session it belongs to (`holdpoint trace SESSION`). A filter made of
    `annotation.KEY = "VALUE"` terms joined by `AND` (X-Ray's own syntax; numbers and `true` /
    `false` unquoted) now keeps the traces one of whose segments or subsegments carries every
    term, and each summary lists its trace's annotations as X-Ray does (key, then a list of
    `{"AnnotationValue": {...}}`). Any other expression is still moto's 500.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from moto.xray.models import SegmentCollection

_TERM = re.compile(r'\s*annotation\.([A-Za-z0-9_]+)\s*=\s*("(?:[^"\\]|\\.)*"|true|false|-?[0-9.]+)\s*$')


def parse_filter(expression: str) -> dict[str, Any] | None:
    """`annotation.a = "x" AND annotation.b = 2` as {"a": "x", "b": 2}; None for anything else."""
    terms: dict[str, Any] = {}
    for part in re.split(r"\s+AND\s+", expression.strip(), flags=re.IGNORECASE):
        match = _TERM.match(part)
        if match is None:
            return None
        terms[match.group(1)] = json.loads(match.group(2))
    return terms


def _entities(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield doc
    for sub in doc.get("subsegments") or []:
        yield from _entities(sub)


def annotations_of(trace: dict[str, Any]) -> dict[str, list[Any]]:
    """Every annotation of a trace's segments and subsegments, each value once."""
    found: dict[str, list[Any]] = {}
    for segment in trace["segments"]:
        for entity in _entities(json.loads(segment.raw)):
            for key, value in (entity.get("annotations") or {}).items():
                if value not in found.setdefault(key, []):
                    found[key].append(value)
    return found


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BooleanValue": value}
    if isinstance(value, int | float):
        return {"NumberValue": value}
    return {"StringValue": str(value)}


def _summarise(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def summary(self: SegmentCollection, start_time: Any, end_time: Any, filter_expression: Any = None) -> Any:
        terms = parse_filter(filter_expression) if filter_expression else {}
        if terms is None:
            return original(self, start_time, end_time, filter_expression)  # moto's own refusal
        result = original(self, start_time, end_time, None)
        kept = []
        for item in result["TraceSummaries"]:
            annotations = annotations_of(self._traces[item["Id"]])
            if all(value in annotations.get(key, []) for key, value in terms.items()):
                item["Annotations"] = {key: [{"AnnotationValue": _value(v)} for v in values]
                                       for key, values in annotations.items()}
                kept.append(item)
        result["TraceSummaries"] = kept
        result["TracesProcessedCount"] = len(kept)
        return result

    summary.__holdpoint_fixed__ = True  # type: ignore[attr-defined]
    return summary


def apply() -> None:
    if not getattr(SegmentCollection.summary, "__holdpoint_fixed__", False):
        SegmentCollection.summary = _summarise(SegmentCollection.summary)  # type: ignore[method-assign]
