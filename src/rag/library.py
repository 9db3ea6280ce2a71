"""What `ingest` is given, sorted out: files and folders, .bib files, a Zotero library, arXiv ids, DOIs and URLs.

`gather` reads the libraries and downloads what is named remotely, before anything is ingested, so the ingest that
follows sees only PDFs on disk, each with its library's metadata (`LibraryItem`). A source that cannot be read or
fetched becomes one failed line of the report; the others go on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..errors import SourceError
from ..sources.bibtex import read_bibtex
from ..sources.models import LibraryItem
from ..sources.remote import fetch_remote, remote_kind
from ..sources.zotero import default_zotero_dir, read_zotero
from .ingest import FileResult
from .paths import escape_path


@dataclass
class Gathered:
    """Paths to ingest as they are, library items with their metadata, and what could not be read."""

    paths: list[Path] = field(default_factory=list)
    items: list[LibraryItem] = field(default_factory=list)
    failed: list[FileResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sync: str | None = None  # the library the items are the whole of (a Zotero data directory)


def downloads_dir(settings: Settings) -> Path:
    """Where downloaded PDFs are kept."""
    return settings.sources.downloads or settings.home / "downloads"


def zotero_dir(settings: Settings, given: str | None) -> Path:
    """The Zotero data directory: the one given, else the setting, else ~/Zotero."""
    return Path(given).expanduser() if given else settings.sources.zotero_dir or default_zotero_dir()


def gather(specs: Sequence[str], settings: Settings, *, zotero: bool = False) -> Gathered:
    """Sort `specs` out: with `zotero`, they name one Zotero data directory (none: the default one); else each is a
    file or folder, a .bib file, an arXiv id (`arXiv:2501.10120`), a DOI (`doi:10.1145/...`) or a URL."""
    out = Gathered()
    if zotero:
        if len(specs) > 1:
            raise SourceError(f"--zotero takes one data directory, not {len(specs)}: {', '.join(specs)}")
        library = read_zotero(zotero_dir(settings, specs[0] if specs else None))
        out.items.extend(library.items)
        out.sync = str(library.data_dir.resolve())
        out.notes.append(
            f"Zotero library {library.data_dir}: {len(library.items)} item(s) with a PDF; skipped "
            f"{library.skipped_trash} in the trash and {library.skipped_no_pdf} without a PDF"
        )
        return out
    for spec in specs:
        if remote_kind(spec) is not None:
            try:
                out.items.append(fetch_remote(spec, settings.sources, downloads_dir(settings)))
            except SourceError as exc:
                out.failed.append(FileResult(path=escape_path(spec), status="failed", error=str(exc)))
            continue
        path = Path(spec)
        if path.suffix.lower() == ".bib" and path.is_file():
            try:
                bib = read_bibtex(path)
            except SourceError as exc:
                out.failed.append(FileResult(path=escape_path(path.absolute()), status="failed", error=str(exc)))
                continue
            out.items.extend(bib.items)
            skipped = f"; {bib.without_pdf} entr(ies) without a PDF skipped" if bib.without_pdf else ""
            out.notes.append(f"{path}: {len(bib.items)} entr(ies) with a PDF{skipped}")
            out.notes.extend(f"{path}: {line}" for line in bib.failed_blocks)
            continue
        out.paths.append(path)
    return out
