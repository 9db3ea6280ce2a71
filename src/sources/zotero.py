"""Read a Zotero library (its data directory) into `LibraryItem`s, without writing to it.

A Zotero data directory (~/Zotero unless moved in Zotero's settings) holds, as used here:

    zotero.sqlite              the library: items, their fields, creators, collections, tags, attachments, trash
    storage/<KEY>/<file>       stored attachment files; KEY is the 8-character key of the *attachment* item
    (styles/, translators/, zotero.sqlite.bak, ... are not read)

In zotero.sqlite (Zotero 5 and later; tables from Zotero's resource/schema/userdata.sql):

    items(itemID, itemTypeID, key, libraryID)           every item: regular items, attachments, notes, annotations
    itemTypes(itemTypeID, typeName)                     "journalArticle", "attachment", "note", ... (global schema)
    itemData(itemID, fieldID, valueID)                  an item's fields: `fields.fieldName` = `itemDataValues.value`
    itemCreators(itemID, creatorID, creatorTypeID, orderIndex) -> creators(firstName, lastName, fieldMode),
                                                        creatorTypes(creatorType: "author", "editor", ...)
    itemAttachments(itemID, parentItemID, linkMode, contentType, path)
        linkMode 0/1 (stored file, imported from a file or a URL): path "storage:<filename>", the file in
            storage/<attachment key>/<filename>
        linkMode 2 (linked file): an absolute path, or "attachments:<relative>" relative to the "Linked Attachment
            Base Directory" (a preference in Zotero's profile, not in the data directory)
        linkMode 3 (linked URL) has no file; linkMode 4 is an image embedded in a note
    deletedItems(itemID)                                the trash
    collections(collectionID, collectionName, parentCollectionID) and collectionItems(collectionID, itemID)
    tags(tagID, name) and itemTags(itemID, tagID)

Fields hold what Zotero's item editor shows, except `date`, stored "YYYY-MM-DD originalText" ("2020-04-15 April 15,
2020"; "0000" for an unknown part).

Zotero keeps the database locked while it runs. The database is opened read-only (`mode=ro`); when that finds it
locked, it is opened again with `immutable=1`, which reads the file without taking any lock: what Zotero wrote
since its last checkpoint (still in zotero.sqlite-wal or not yet flushed) is not seen, and a write under way can
make the read fail (reported as a SourceError; read again later).
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from pydantic import BaseModel, Field

from ..errors import SourceError
from .models import LibraryItem, PaperMeta

DB_NAME = "zotero.sqlite"
STORAGE_PREFIX = "storage:"
BASE_DIR_PREFIX = "attachments:"

LINK_MODE_LINKED_FILE = 2
LINK_MODE_LINKED_URL = 3
NOT_REGULAR_TYPES = ("attachment", "note", "annotation")

# Venue fields in order of preference; an item type has at most a few of them (journalArticle: publicationTitle,
# conferencePaper: proceedingsTitle and conferenceName, bookSection: bookTitle, preprint: repository).
VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "conferenceName", "bookTitle", "websiteTitle", "repository")

# Tables read below; a database without them is not a Zotero library (or one older than Zotero 5).
REQUIRED_TABLES = (
    "items",
    "itemTypes",
    "fields",
    "itemData",
    "itemDataValues",
    "creators",
    "itemCreators",
    "creatorTypes",
    "itemAttachments",
    "deletedItems",
    "collections",
    "collectionItems",
    "tags",
    "itemTags",
)

# Zotero waits on nobody: it holds its lock for as long as it runs, so waiting long for it is pointless; a short
# wait covers another reader or a brief writer that is not Zotero.
BUSY_TIMEOUT_S = 0.5

_SQLITE_HEADER = b"SQLite format 3\x00"
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_EXTRA_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z \-]*?)\s*:\s*(\S.*?)\s*$")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_ARXIV_ID = r"(\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?"
_ARXIV_PLAIN = re.compile(r"^\s*(?:(?i:arxiv):\s*)?" + _ARXIV_ID + r"\s*$")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/" + _ARXIV_ID, re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^(?i:10\.48550/arxiv\.)" + _ARXIV_ID + "$")


class ZoteroLibrary(BaseModel):
    """What a Zotero data directory holds to ingest: its regular items with a PDF, and what was left out."""

    data_dir: Path = Field(description="The Zotero data directory read.")
    items: list[LibraryItem] = Field(default_factory=list, description="Items with a PDF attachment, by itemID.")
    skipped_trash: int = Field(0, description="Items in the trash, or whose only PDFs are.")
    skipped_no_pdf: int = Field(0, description="Items without a PDF attachment.")


@dataclass(frozen=True)
class _Attachment:
    """A child attachment item of a regular item."""

    item_id: int
    key: str
    link_mode: int | None
    content_type: str
    path: str | None

    @property
    def is_pdf(self) -> bool:
        """A PDF file: by its content type, or by its file name when Zotero did not record one."""
        if self.link_mode == LINK_MODE_LINKED_URL:  # a web link, not a file, even when it points at a PDF
            return False
        return self.content_type == "application/pdf" or (self.path or "").lower().endswith(".pdf")


@dataclass(frozen=True)
class _Creator:
    first: str
    last: str
    single_field: bool  # fieldMode 1: one name (an institution), held in lastName
    role: str

    @property
    def name(self) -> str:
        return self.last if self.single_field else f"{self.first} {self.last}".strip()


@dataclass
class _Rows:
    """The rows of the database this reader needs, grouped by itemID."""

    regular: list[tuple[int, str]] = field(default_factory=list)  # (itemID, key) of regular items, by itemID
    fields: dict[int, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    creators: dict[int, list[_Creator]] = field(default_factory=lambda: defaultdict(list))
    attachments: dict[int, list[_Attachment]] = field(default_factory=lambda: defaultdict(list))
    trashed: set[int] = field(default_factory=set)
    collections: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    tags: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))


def default_zotero_dir() -> Path:
    """Where Zotero keeps its data unless told otherwise: ~/Zotero."""
    return Path.home() / "Zotero"


def read_zotero(data_dir: Path, *, base_dir: Path | None = None) -> ZoteroLibrary:
    """The regular items of the Zotero library in `data_dir` that have a PDF attachment, with their metadata.

    `base_dir` is Zotero's "Linked Attachment Base Directory", which linked files stored as "attachments:<relative>"
    are relative to; it is a preference of Zotero's profile, so when not given the data directory's parent is
    assumed (and named in the problem of an item whose file is not there). Of an item with several PDFs the first
    (by attachment itemID) whose file exists is taken; when none exists, the item comes with pdf=None and a problem
    naming the first. Raises SourceError when `data_dir` holds no readable Zotero database.
    """
    db = _database_path(data_dir)
    rows = _read_rows(db)
    library = ZoteroLibrary(data_dir=data_dir)
    origin = _Origin(data_dir=data_dir, base_dir=base_dir, library=str(data_dir.resolve()))
    for item_id, key in rows.regular:
        _add_item(library, rows, origin, item_id, key)
    return library


def _database_path(data_dir: Path) -> Path:
    if not data_dir.exists():
        raise SourceError(f"{data_dir}: no such Zotero data directory")
    if not data_dir.is_dir():
        raise SourceError(f"{data_dir}: not a directory (a Zotero data directory holds {DB_NAME})")
    db = data_dir / DB_NAME
    if not db.is_file():
        raise SourceError(f"{db}: not found; {data_dir} is not a Zotero data directory")
    return db


# --- reading the database ---


def _read_rows(db: Path) -> _Rows:
    """All the rows needed, read read-only; a locked database (Zotero running) is read as an immutable file."""
    try:
        immutable = _wal_without_log(db)
        try:
            return _query(db, immutable=immutable)
        except sqlite3.OperationalError as exc:
            if immutable or "locked" not in str(exc):
                raise
        return _query(db, immutable=True)
    except (sqlite3.Error, OSError) as exc:
        raise SourceError(f"{db}: cannot be read as a Zotero database: {_one_line(str(exc))}") from exc


def _wal_without_log(db: Path) -> bool:
    """True for a WAL-mode database with no -wal file: nobody has it open, so all of it is in the main file.

    A `mode=ro` connection to a WAL database creates zotero.sqlite-wal and -shm (and leaves them); `immutable=1`
    reads the same data and creates nothing.
    """
    with db.open("rb") as file:
        header = file.read(20)
    is_wal = header.startswith(_SQLITE_HEADER) and header[18:20] == b"\x02\x02"  # read/write format 2 = WAL
    return is_wal and not db.with_name(db.name + "-wal").exists()


def _query(db: Path, *, immutable: bool) -> _Rows:
    uri = f"file:{_uri_path(db)}?mode=ro" + ("&immutable=1" if immutable else "")
    with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)) as conn:
        conn.execute("PRAGMA query_only = ON")  # belt and braces: mode=ro already refuses writes
        return _fetch(conn, db)


def _uri_path(db: Path) -> str:
    """`db` as the path of a file: URI, quoted so that spaces, ?, # and % in it stay part of the path."""
    posix = db.absolute().as_posix()
    if not posix.startswith("/"):  # Windows: C:/... is written file:/C:/...
        posix = "/" + posix
    return quote(posix, safe="/:")


def _fetch(conn: sqlite3.Connection, db: Path) -> _Rows:
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [table for table in REQUIRED_TABLES if table not in tables]
    if len(missing) == len(REQUIRED_TABLES):
        raise SourceError(f"{db}: not a Zotero database (none of its tables: {', '.join(REQUIRED_TABLES[:3])}, ...)")
    if missing:
        raise SourceError(f"{db}: not a Zotero database, or one older than Zotero 5 (no table {', '.join(missing)})")
    rows = _Rows()
    rows.regular = _regular_items(conn, feeds="feedItems" in tables)
    _fetch_fields(conn, rows)
    _fetch_creators(conn, rows)
    _fetch_attachments(conn, rows)
    rows.trashed = {item_id for (item_id,) in conn.execute("SELECT itemID FROM deletedItems")}
    _fetch_collections(conn, rows, trash="deletedCollections" in tables)
    for item_id, name in conn.execute("SELECT itemID, name FROM itemTags JOIN tags USING (tagID)"):
        rows.tags[item_id].append(str(name))
    return rows


def _regular_items(conn: sqlite3.Connection, *, feeds: bool) -> list[tuple[int, str]]:
    # Feed items (RSS subscriptions) share the items table but are not part of the library.
    not_feed = "AND i.itemID NOT IN (SELECT itemID FROM feedItems)" if feeds else ""
    marks = ", ".join("?" for _ in NOT_REGULAR_TYPES)
    sql = (
        "SELECT i.itemID, i.key FROM items i LEFT JOIN itemTypes t USING (itemTypeID) "
        f"WHERE COALESCE(t.typeName, '') NOT IN ({marks}) {not_feed} ORDER BY i.itemID"
    )
    return [(item_id, str(key)) for item_id, key in conn.execute(sql, NOT_REGULAR_TYPES)]


def _fetch_fields(conn: sqlite3.Connection, rows: _Rows) -> None:
    sql = (
        "SELECT d.itemID, f.fieldName, v.value FROM itemData d "
        "JOIN fields f USING (fieldID) JOIN itemDataValues v USING (valueID)"
    )
    for item_id, name, value in conn.execute(sql):
        if value is not None:
            rows.fields[item_id][str(name)] = str(value)


def _fetch_creators(conn: sqlite3.Connection, rows: _Rows) -> None:
    sql = (
        "SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType FROM itemCreators ic "
        "JOIN creators c USING (creatorID) LEFT JOIN creatorTypes ct USING (creatorTypeID) "
        "ORDER BY ic.itemID, ic.orderIndex"
    )
    for item_id, first, last, mode, role in conn.execute(sql):
        rows.creators[item_id].append(_Creator(first or "", last or "", mode == 1, role or ""))


def _fetch_attachments(conn: sqlite3.Connection, rows: _Rows) -> None:
    sql = (
        "SELECT a.itemID, i.key, a.parentItemID, a.linkMode, a.contentType, a.path FROM itemAttachments a "
        "JOIN items i USING (itemID) WHERE a.parentItemID IS NOT NULL ORDER BY a.itemID"
    )
    for item_id, key, parent, mode, content_type, path in conn.execute(sql):
        rows.attachments[parent].append(_Attachment(item_id, str(key), mode, content_type or "", path))


def _fetch_collections(conn: sqlite3.Connection, rows: _Rows, *, trash: bool) -> None:
    tree = {
        cid: (str(name), parent)
        for cid, name, parent in conn.execute(
            "SELECT collectionID, collectionName, parentCollectionID FROM collections"
        )
    }
    trashed = {cid for (cid,) in conn.execute("SELECT collectionID FROM deletedCollections")} if trash else set()
    paths = {cid: _collection_path(cid, tree, trashed) for cid in tree}
    for item_id, cid in conn.execute("SELECT itemID, collectionID FROM collectionItems"):
        path = paths.get(cid)
        if path:
            rows.collections[item_id].append(path)


def _collection_path(cid: int, tree: dict[int, tuple[str, int | None]], trashed: set[int]) -> str | None:
    """The path ("Parent/Child") of collection `cid`; None when it or a parent is in the trash or the chain breaks."""
    names: list[str] = []
    current: int | None = cid
    for _ in range(len(tree)):  # a parent chain is at most as long as there are collections: no cycle loops
        if current is None:
            return "/".join(reversed(names))
        if current in trashed or current not in tree:
            return None
        name, current = tree[current]
        names.append(name)
    return None if current is not None else "/".join(reversed(names))


# --- turning rows into items ---


@dataclass(frozen=True)
class _Origin:
    data_dir: Path
    base_dir: Path | None
    library: str


def _add_item(library: ZoteroLibrary, rows: _Rows, origin: _Origin, item_id: int, key: str) -> None:
    if item_id in rows.trashed:
        library.skipped_trash += 1
        return
    pdfs = [a for a in rows.attachments.get(item_id, []) if a.is_pdf]
    if not pdfs:
        library.skipped_no_pdf += 1
        return
    live = [a for a in pdfs if a.item_id not in rows.trashed]
    if not live:  # its PDFs were all moved to the trash: as good as trashed
        library.skipped_trash += 1
        return
    meta = _meta(rows, origin, item_id, key)
    pdf, problem = _pick_pdf(live, origin)
    if problem:
        problem = _one_line(f'Zotero item "{meta.title or "(untitled)"}" ({key}): {problem}')
    library.items.append(LibraryItem(pdf=pdf, meta=meta, problem=problem))


def _pick_pdf(pdfs: list[_Attachment], origin: _Origin) -> tuple[Path | None, str]:
    """The first PDF whose file exists, or None and why the first one cannot be had."""
    problems: list[str] = []
    for attachment in pdfs:
        path, note = _attachment_file(attachment, origin)
        if path is not None and path.is_file():
            return path, ""
        why = f"file missing: {path}" if path is not None else ""
        problems.append(f"PDF attachment {attachment.key}: " + "; ".join(part for part in (why, note) if part))
    return None, problems[0]


def _attachment_file(attachment: _Attachment, origin: _Origin) -> tuple[Path | None, str]:
    """Where the attachment's file should be (None: cannot be known), and a note on how it was found or why not."""
    raw = attachment.path
    if not raw:
        return None, "no file path recorded"
    if attachment.link_mode != LINK_MODE_LINKED_FILE:  # stored (imported) file
        if not raw.startswith(STORAGE_PREFIX):
            return None, f"stored file path {raw!r} does not start with {STORAGE_PREFIX!r}"
        return origin.data_dir / "storage" / attachment.key / raw[len(STORAGE_PREFIX) :], ""
    if raw.startswith(BASE_DIR_PREFIX):
        # Zotero writes these with forward slashes whatever the platform, so they read the same everywhere.
        relative = raw[len(BASE_DIR_PREFIX) :].replace("\\", "/")
        if origin.base_dir is not None:
            return origin.base_dir / relative, ""
        assumed = origin.data_dir.parent
        return assumed / relative, f"{raw!r} is relative to the linked attachment base directory, assumed {assumed}"
    path = Path(raw)
    if not path.is_absolute():
        return None, f"linked file path {raw!r} is neither absolute nor relative to the base directory"
    return path, ""


def _meta(rows: _Rows, origin: _Origin, item_id: int, key: str) -> PaperMeta:
    fields = rows.fields.get(item_id, {})
    extra = _extra_fields(fields.get("extra", ""))
    doi = _doi(fields.get("DOI", "")) or _doi(extra.get("doi", ""))
    return PaperMeta(
        title=fields.get("title", "").strip(),
        authors=_authors(rows.creators.get(item_id, [])),
        year=_year(fields.get("date", "")),
        venue=next((fields[name].strip() for name in VENUE_FIELDS if fields.get(name, "").strip()), ""),
        doi=doi,
        arxiv_id=_arxiv_id(fields, extra),
        url=fields.get("url", "").strip(),
        citation_key=(extra.get("citationkey") or fields.get("citationKey", "")).strip(),
        item_key=key,
        collections=sorted(set(rows.collections.get(item_id, [])), key=str.casefold),
        tags=sorted(set(rows.tags.get(item_id, [])), key=str.casefold),
        origin="zotero",
        library=origin.library,
    )


def _authors(creators: list[_Creator]) -> list[str]:
    """Authors in order; when the item names none as author (an edited book), whoever it names."""
    authors = [c for c in creators if c.role == "author"] or creators
    return [name for name in (c.name for c in authors) if name]


def _year(date: str) -> int | None:
    """The first year in a Zotero date ("2020-04-15 April 15, 2020"); "0000" stands for an unknown year."""
    for match in _YEAR.finditer(date):
        if match.group(1) != "0000":
            return int(match.group(1))
    return None


def _extra_fields(extra: str) -> dict[str, str]:
    """`Key: value` lines of the Extra field, keys lower-cased without spaces ("citationkey"); the first one wins."""
    found: dict[str, str] = {}
    for line in extra.splitlines():
        match = _EXTRA_LINE.match(line)
        if match:
            found.setdefault(match.group(1).replace(" ", "").lower(), match.group(2))
    return found


def _doi(value: str) -> str | None:
    doi = _DOI_PREFIX.sub("", value.strip()).strip().lower()
    return doi if doi.startswith("10.") and "/" in doi else None


def _arxiv_id(fields: dict[str, str], extra: dict[str, str]) -> str | None:
    """From Extra ("arXiv: 2004.07180"), the preprint's Archive ID ("arXiv:2004.07180"), the URL or an arXiv DOI."""
    for value in (extra.get("arxiv", ""), fields.get("archiveID", "")):
        match = _ARXIV_PLAIN.match(value)
        if match:
            return match.group(1)
    match = _ARXIV_URL.search(fields.get("url", ""))
    if match:
        return match.group(1)
    # The DOI was lower-cased, which would spoil an old-style id's subject class: read the field as written.
    for raw in (fields.get("DOI", ""), extra.get("doi", "")):
        match = _ARXIV_DOI.match(_DOI_PREFIX.sub("", raw.strip()))
        if match:
            return match.group(1)
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())
