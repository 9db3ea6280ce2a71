"""Authors as printed, against hand-read ground truth: first author, last author and count for each dev paper.

`devset_authors.tsv` (next to this script) holds the byline of each paper in ../shared/devset/pdfs, read by hand
from the rendered first page (natural case, footnote marks dropped). This script parses each PDF and compares
the parser's `authors` with it. Names are compared on their letters only (case, accents, spaces and
punctuation aside: "Patrick N.J. Lane" is "Patrick N. J. Lane"), so a check fails on a wrong or missing name, a
wrong order or a wrong count, not on how initials are spaced.

Usage: python benchmarks/authors_check.py [PDF_DIR] [--show]  (PDF_DIR defaults to ../shared/devset/pdfs)
Prints the share of papers with the first author, the last author and the count right, and the share with all
three right (the figure to report); --show lists every paper that misses one.
"""

from __future__ import annotations

import argparse
import unicodedata
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRUTH = HERE / "devset_authors.tsv"
DEVSET_PDFS = HERE.parent.parent / "shared" / "devset" / "pdfs"


def name_key(name: str) -> str:
    """A name's letters, lower-cased and without accents: how two spellings of one name are compared."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed.casefold() if ch.isalpha() and not unicodedata.combining(ch))


def read_truth(path: Path = TRUTH) -> dict[str, list[str]]:
    """{file stem: authors in print order} from the ground-truth file."""
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        stem, count, names, *_ = line.split("\t")
        authors = [n.strip() for n in names.split(";") if n.strip()]
        if len(authors) != int(count):
            raise ValueError(f"{path}: {stem}: count {count} but {len(authors)} names")
        out[stem] = authors
    return out


@dataclass(frozen=True)
class Checked:
    """One paper's authors against the truth."""

    stem: str
    truth: list[str]
    found: list[str]

    @property
    def first(self) -> bool:
        return bool(self.found) and name_key(self.found[0]) == name_key(self.truth[0])

    @property
    def last(self) -> bool:
        return bool(self.found) and name_key(self.found[-1]) == name_key(self.truth[-1])

    @property
    def count(self) -> bool:
        return len(self.found) == len(self.truth)

    @property
    def right(self) -> bool:
        return self.first and self.last and self.count


def check(found: dict[str, list[str]], truth: dict[str, list[str]]) -> list[Checked]:
    """Each paper of `truth` against what the parser `found` for it (by file stem; a paper not parsed has none)."""
    return [Checked(stem, names, found.get(stem, [])) for stem, names in sorted(truth.items())]


def summary(rows: list[Checked]) -> str:
    n = len(rows) or 1
    first, last, count, right = (sum(getattr(r, a) for r in rows) for a in ("first", "last", "count", "right"))
    return (
        f"authors of {len(rows)} papers: first {first / n:.3f}  last {last / n:.3f}  count {count / n:.3f}  "
        f"all three {right}/{len(rows)} = {right / n:.3f}"
    )


def main() -> None:
    from paperscope.parser import parse_pdf

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pdf_dir", nargs="?", type=Path, default=DEVSET_PDFS)
    ap.add_argument("--show", action="store_true", help="list the papers that miss a check")
    args = ap.parse_args()
    truth = read_truth()
    found = {stem: parse_pdf(args.pdf_dir / f"{stem}.pdf").authors for stem in truth}
    rows = check(found, truth)
    if args.show:
        for r in rows:
            if not r.right:
                print(f"{r.stem}\n    printed: {'; '.join(r.truth)}\n    parsed:  {'; '.join(r.found)}")
    print(summary(rows))


if __name__ == "__main__":
    main()
