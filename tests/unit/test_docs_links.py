"""The documents' links hold: every relative Markdown link in the README, `docs/` and the packages'
READMEs names a file of this repository (its `#anchor`, for a page of `docs/`, a heading there),
and the index (`docs/README.md`) lists every page of `docs/`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "sdk" / "README.md", ROOT / "local" / "README.md", ROOT / "bench" / "README.md",
         *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


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
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        assert found.exists() and ROOT in found.parents, f"{page.name}: {target} names no file here"
        if anchor and found.suffix == ".md":
            assert anchor in anchors(found), f"{page.name}: {target} names no heading of {found.name}"


def test_docs_the_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md" and f"]({p.name})" not in index]
    assert not missing, f"docs/README.md does not list {missing}"
