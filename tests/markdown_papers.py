"""Small fictional papers written as Markdown, for tests that need a real store without PDFs."""

from __future__ import annotations

from collections.abc import Sequence


def markdown(
    title: str,
    year: int | None,
    sections: list[tuple[str, list[str]]],
    authors: Sequence[str] = ("Ada Tester",),
) -> str:
    """A paper source with YAML front matter, a `#` title and the given (heading, paragraphs) sections."""
    lines = ["---", f'title: "{title}"', "authors: [" + ", ".join(f'"{a}"' for a in authors) + "]"]
    if year is not None:
        lines.append(f"year: {year}")
    lines += ["---", "", f"# {title}"]
    for heading, paragraphs in sections:
        lines += ["", heading]
        for p in paragraphs:
            lines += ["", p]
    return "\n".join(lines) + "\n"
