"""The question a person approves (`payload.message`), read as a safe subset of Markdown.

Parsed once, here, into blocks of plain data that every page renders without parsing again: the
console and the session page build DOM nodes from them (`textContent` only), the one-click link
page escapes them into HTML. Nothing in a message can become markup of its own: raw HTML stays
text, and a link is kept only when it is `https:` (rendered with `rel="noopener noreferrer"`);
any other link is its text. The subset: paragraphs, line breaks, `# headings`, `-`/`*` and `1.`
lists, `**strong**`, `*emphasis*`/`_emphasis_`, `` `code` `` and `[text](https://...)`.

A hand-written subset, not a CommonMark library: the one that fits (markdown-it-py) took 66 ms to
import cold, on every API cold start, for the handful of forms a question uses. Pure: no I/O.
"""

from __future__ import annotations

import re

from holdpoint.core.jsontypes import JsonObject, JsonValue

MAX_CHARS = 8_000
"""A message is rendered up to this many characters (the rest is cut with an ellipsis)."""

_INLINE = re.compile(
    r"`(?P<code>[^`\n]+)`"
    r"|\[(?P<text>[^\]\n]{1,500})\]\((?P<href>[^)\s]{1,2000})\)"
    r"|\*\*(?P<strong>[^*\n]+?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^*\n]+?)\*(?![\w*])"
    r"|(?<![\w_])_(?P<em2>[^_\n]+?)_(?![\w_])")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


_HTTPS = re.compile(r"https://[A-Za-z0-9.-]+(?::\d{1,5})?(?:[/?#][^\s\\]*)?")
"""An `https:` URL whose authority is a host (and port): no userinfo, nothing a browser reads otherwise."""


def safe_href(href: str) -> str | None:
    """The link as rendered, or None when it is not such an `https:` URL."""
    return href if _HTTPS.fullmatch(href) else None


def inlines(text: str) -> list[JsonValue]:
    """A line's text as strings and `{b|i|code|a}` spans (a span's own text is read again)."""
    out: list[JsonValue] = []
    at = 0
    for found in _INLINE.finditer(text):
        if found.start() > at:
            out.append(text[at:found.start()])
        out.append(_span(found))
        at = found.end()
    if at < len(text):
        out.append(text[at:])
    return out


def _span(found: re.Match[str]) -> JsonValue:
    if found["code"] is not None:
        return {"code": found["code"]}
    if found["strong"] is not None:
        return {"b": inlines(found["strong"])}
    if found["em"] is not None or found["em2"] is not None:
        return {"i": inlines(found["em"] or found["em2"])}
    href = safe_href(found["href"])
    label = inlines(found["text"])
    return {"a": label, "href": href} if href else {"span": label}


def blocks(message: str) -> list[JsonObject]:
    """The message as blocks: `{p|h: inlines}` (a paragraph's lines joined by `\\n`) and
    `{ul|ol: [inlines, ...]}`."""
    if len(message) > MAX_CHARS:
        message = message[:MAX_CHARS - 1] + "\u2026"
    out: list[JsonObject] = []
    lines: list[str] = []
    items: list[JsonValue] = []
    kind = ""

    def flush() -> None:
        nonlocal lines, items, kind
        if lines:
            out.append({"p": inlines("\n".join(lines))})
        if items:
            out.append({kind: items})
        lines, items, kind = [], [], ""

    for line in message.replace("\r\n", "\n").split("\n"):
        bullet, number, heading = _BULLET.match(line), _NUMBER.match(line), _HEADING.match(line)
        item = bullet or number
        listed = "ul" if bullet else "ol" if number else ""
        if not line.strip() or heading or (listed and listed != kind) or (not listed and items):
            flush()
        if heading:
            out.append({"h": inlines(heading[1])})
        elif item is not None:
            kind = listed
            items.append(inlines(item[1]))
        elif line.strip():
            lines.append(line.strip())
    flush()
    return out


def question(payload: JsonValue) -> list[JsonObject] | None:
    """An interrupt's `payload.message` as blocks, or None when it has no message text."""
    message = payload.get("message") if isinstance(payload, dict) else None
    return blocks(message) if isinstance(message, str) else None
