"""The documents hold together: every relative Markdown link in the README, `docs/` and the packages'
READMEs names a file of this repository (its `#anchor`, for a page of `docs/`, a heading there);
the index (`docs/README.md`) lists every page of `docs/` and says what kind of page each is; the
README stays a short tutorial; and every page links a rule code (R1–R17, A1–A6) to the glossary
where it first uses it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", ROOT / "sdk" / "README.md", ROOT / "local" / "README.md", ROOT / "bench" / "README.md",
         ROOT / "examples" / "README.md", *DOCS]
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
README_MAX_LINES = 250
KINDS = ("tutorial", "how-to", "reference", "explanation")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return out


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_docs_every_relative_link_names_a_file_of_the_repository(page: Path) -> None:
    for _, target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        assert found.exists() and ROOT in found.parents, f"{page.name}: {target} names no file here"
        if anchor and found.suffix == ".md":
            assert anchor in anchors(found), f"{page.name}: {target} names no heading of {found.name}"


def test_docs_the_index_lists_every_page_with_its_kind() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    rows = {target: kind for _, target, kind in re.findall(r"^\| \[([^\]]*)\]\(([^)]+)\) \| ([^|]+?) \|", index, re.M)}
    missing = [p.name for p in DOCS if p.name != "README.md" and p.name not in rows]
    assert not missing, f"docs/README.md does not list {missing}"
    for package in ("../README.md", "../sdk/README.md", "../local/README.md", "../bench/README.md",
                    "../examples/README.md"):
        assert package in rows, f"docs/README.md does not list {package}"
    unkinded = {target: kind for target, kind in rows.items() if kind not in KINDS}
    assert not unkinded, f"docs/README.md: each page is one of {KINDS}: {unkinded}"


def test_docs_the_readme_is_at_most_250_lines() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move what a first reader does not need to docs/"


CODE = re.compile(r"(?<![\w-])([RA])(\d{1,2})(?!\w)")


def prose(text: str) -> str:
    """The page with its fenced blocks, inline code and headings blanked, at the same offsets:
    where a rule code can be a link."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append(" " * len(line))
        elif fenced or line.startswith("#"):
            out.append(" " * len(line))
        else:
            out.append(re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group()), line))
    return "\n".join(out)


def rule_code(match: re.Match[str]) -> bool:
    n = int(match.group(2))
    return 1 <= n <= (17 if match.group(1) == "R" else 6)


# bench/README.md and docs/PERFORMANCE.md are the benchmarks' notebook and table, kept by their own
# process; the glossary is where the links lead.
RULE_PAGES = [p for p in PAGES if p.name not in ("GLOSSARY.md", "PERFORMANCE.md") and p.parent.name != "bench"]


@pytest.mark.parametrize("page", RULE_PAGES, ids=[str(p.relative_to(ROOT)) for p in RULE_PAGES])
def test_docs_a_rule_code_links_to_the_glossary_where_a_page_first_uses_it(page: Path) -> None:
    text = prose(page.read_text())
    linked = [(m.start(), m.end()) for m in LINK.finditer(text) if "GLOSSARY.md#rule-codes" in m.group(2)]
    first: dict[str, int] = {}
    for m in CODE.finditer(text):
        if rule_code(m):
            first.setdefault(m.group(1) + m.group(2), m.start())
    unlinked = [f"{code} (line {text.count(chr(10), 0, at) + 1})" for code, at in first.items()
                if not any(start <= at < end for start, end in linked)]
    assert not unlinked, f"{page.relative_to(ROOT)}: link the first use of each rule code to the glossary: {unlinked}"
