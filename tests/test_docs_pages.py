"""The README is one page that leads to docs/, every link between them lands, and its quick start is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_the_readme_is_a_page_not_a_manual() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines: move the detail into a docs/ page and link it"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_and_heading(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name} links to {target!r}, which does not exist"
        if anchor:
            assert anchor in _anchors(linked), f"{page.name} links to {target!r}: no such heading"


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in LINK.findall(README.read_text("utf-8"))}
    missing = sorted(p.name for p in DOCS.glob("*.md") if p.resolve() not in linked)
    assert missing == [], f"docs pages the README does not lead to: {missing}"


def test_the_quick_start_installs_and_tests_as_ci_does() -> None:
    readme = README.read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # The README activates the venv; .ci/run names its python. Either way: one venv, the same pip lines, one pytest.
    assert "python3.11 -m venv .venv" in quick_start
    assert "python3.11 -m venv .venv" in ci
    for pip in ("-m pip install --upgrade pip", "-m pip install -e '.[test]'"):
        assert f"python {pip}" in quick_start, pip
        assert f".venv/bin/python {pip.replace('install', 'install --quiet', 1)}" in ci, pip
    assert "python -m pytest " in quick_start
    assert ".venv/bin/python -m pytest\n" in ci
