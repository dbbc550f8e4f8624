"""The server-rendered pages' HTML for what a person approves: a question's Markdown blocks (as
`core.markdown` parsed them) and the bound action. Every piece of text is escaped; the only markup
is what this module writes, and a link is written only for an `https:` URL, with `rel="noopener
noreferrer"`. The console builds the same from the same blocks in the browser (inbox.js)."""

from __future__ import annotations

import html
import json

from holdpoint.core.bound_action import argument_pairs
from holdpoint.core.jsontypes import JsonValue
from holdpoint.core.markdown import safe_href

EXPIRY_VERBS = {"approve": "approves", "deny": "denies", "cancel": "cancels"}
"""What an expiry answers (A5), as a page says it: "it denies at 16:10"."""


def inline_html(parts: JsonValue) -> str:
    out = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            out.append(html.escape(part).replace("\n", "<br>"))
        elif isinstance(part, dict):
            out.append(_span(part))
    return "".join(out)


def _span(part: dict[str, JsonValue]) -> str:
    if "b" in part:
        return f"<strong>{inline_html(part['b'])}</strong>"
    if "i" in part:
        return f"<em>{inline_html(part['i'])}</em>"
    if isinstance(part.get("code"), str):
        return f"<code>{html.escape(str(part['code']))}</code>"
    href = part.get("href")
    if "a" in part and isinstance(href, str) and safe_href(href):
        return f"<a href=\"{html.escape(href)}\" rel=\"noopener noreferrer\">{inline_html(part['a'])}</a>"
    return inline_html(part.get("a") or part.get("span"))


def blocks_html(blocks: JsonValue) -> str:
    out = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        items = block.get("ul") or block.get("ol")
        if isinstance(items, list):
            tag = "ul" if "ul" in block else "ol"
            out.append(f"<{tag}>{''.join(f'<li>{inline_html(i)}</li>' for i in items)}</{tag}>")
        elif "h" in block:
            out.append(f"<p><strong>{inline_html(block['h'])}</strong></p>")
        else:
            out.append(f"<p>{inline_html(block.get('p'))}</p>")
    return "".join(out)


def action_html(action: JsonValue) -> str:
    """The tool call an approval is bound to (A3): its name, each argument, and the fingerprint."""
    if not isinstance(action, dict):
        return ""
    pairs = argument_pairs(str(action.get("arguments") or "{}"))
    rows = "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(v if isinstance(v, str) else json.dumps(v))}</dd>"
                   for k, v in pairs)
    return (f"<h2>Action: <code>{html.escape(str(action.get('tool') or ''))}</code></h2><dl>{rows}</dl>"
            f"<p>fingerprint <code>{html.escape(str(action.get('fingerprint') or ''))}</code></p>")
