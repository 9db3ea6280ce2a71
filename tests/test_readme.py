"""README.md and docs/ speak to someone who cloned only this repository: every link and image stays inside it and
lands on a file (and a heading) that exists, and no path or command reaches outside the clone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*|_", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    prose = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", prose, re.M)}


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(FENCE.sub("", page.read_text()))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_stays_in_the_repository_and_lands(page: Path) -> None:
    assert links(ROOT / "README.md"), "the link pattern finds README's links"
    for target in links(page):
        assert not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I), f"{page.name} links outside: {target}"
        path, _, anchor = target.partition("#")
        landing = (page.parent / path).resolve() if path else page
        assert landing.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert landing.exists(), f"{page.name} links to a missing file: {target}"
        if anchor and landing.suffix == ".md":
            assert anchor in anchors(landing), f"{page.name}: no heading #{anchor} in {landing.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_path_or_command_reaches_outside_the_clone(page: Path) -> None:
    text = page.read_text()
    # ../ leaves the clone (a sibling folder this repository does not ship); the tests' optional real papers are
    # named as `shared/papers`, never walked to. A hostile upload's name (`../x.pdf`) opens a code span.
    outside = re.search(r"(?<![\w.`])\.\./(?!benchmarks/|src/|tests/|examples/|eval/|README)", text)
    assert outside is None, f"{page.name}: {text[outside.start() - 40 : outside.end() + 40]!r}"


def test_readme_explains_the_tracks_before_using_them_and_names_the_sample_fictional() -> None:
    text = (ROOT / "README.md").read_text()
    first = {name: text.index(name) for name in ("Track A", "Track B", "NONE")}
    for name, at in first.items():
        line = text[text.rfind("\n", 0, at) + 1 : text.find("\n", at)]
        assert line.lstrip().startswith(f"- **{name}**"), f"{name} is first used before it is explained: {line}"
    assert "fictional" in text[: text.index("## Set up")]
