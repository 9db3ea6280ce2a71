"""Zotero data directories for tests, built with Zotero's own schema (see zotero_schema/README.md).

`ZoteroLibraryBuilder(tmp_path / "Zotero")` creates `zotero.sqlite` the way Zotero creates a new database: the
tables of userdata.sql, then the item types, fields and creator types of the global schema numbered as
`_updateGlobalSchema` (chrome/content/zotero/xpcom/schema.js) numbers them in an empty database, then the
"Combined" tables Zotero fills at startup. Its helpers add items, creators, attachments with real (small) PDFs,
collections, tags, notes and the trash as Zotero stores them.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import pymupdf

SCHEMA_DIR = Path(__file__).parent / "zotero_schema"
USERDATA_SQL = SCHEMA_DIR / "userdata.sql"
GLOBAL_SCHEMA = SCHEMA_DIR / "global_schema_item_types.json"

USER_LIBRARY_ID = 1
KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's object keys: 8 of these (no 0, 1, O)
LINK_MODE_IMPORTED_FILE = 0
LINK_MODE_IMPORTED_URL = 1
LINK_MODE_LINKED_FILE = 2
LINK_MODE_LINKED_URL = 3


@dataclass(frozen=True)
class Item:
    """An item added to the library."""

    item_id: int
    key: str
    item_type: str


@dataclass(frozen=True)
class Attachment:
    """An attachment added to an item; `file` is where its file is (or would be)."""

    item_id: int
    key: str
    file: Path | None


def make_pdf(path: Path, text: str) -> Path:
    """A one-page PDF at `path` saying `text`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    doc.save(str(path))
    doc.close()
    return path


def zotero_date(iso: str, original: str | None = None) -> str:
    """A date as Zotero stores it: "YYYY-MM-DD originalText" (missing parts are 00)."""
    return f"{iso} {original if original is not None else iso}"


def create_database(path: Path) -> sqlite3.Connection:
    """A new, empty Zotero database at `path` with the user library, as Zotero's _initializeSchema makes it."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a test database need not survive a power cut; not kept in the file
    conn.executescript(USERDATA_SQL.read_text(encoding="utf-8"))
    schema = json.loads(GLOBAL_SCHEMA.read_text(encoding="utf-8"))
    conn.execute("BEGIN")
    apply_global_schema(conn, schema)
    fill_combined_tables(conn)
    conn.execute("INSERT INTO version VALUES ('userdata', ?)", (userdata_version(),))
    conn.execute("INSERT INTO version VALUES ('globalSchema', ?)", (schema["version"],))
    conn.execute(
        "INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (?, 'user', 1, 1)", (USER_LIBRARY_ID,)
    )
    conn.execute("COMMIT")
    return conn


def userdata_version() -> int:
    """The schema version userdata.sql declares on its first line ("-- 129")."""
    return int(USERDATA_SQL.read_text(encoding="utf-8").splitlines()[0].removeprefix("--").strip())


def apply_global_schema(conn: sqlite3.Connection, schema: Mapping[str, Any]) -> None:
    """What `_updateGlobalSchema` does to an empty database: ids from 1 in the order the schema names things.

    Fields are numbered in order of first mention (a field, then its base field), creator types likewise, item types
    in schema order; each item type's fields get orderIndex 0, 1, ... and its creator types their `primary` flag.
    """
    field_ids: dict[str, int] = {}
    creator_type_ids: dict[str, int] = {}
    for item_type in schema["itemTypes"]:
        for entry in item_type["fields"]:
            for name in (entry["field"], entry.get("baseField")):
                if name and name not in field_ids:
                    field_ids[name] = len(field_ids) + 1
        for entry in item_type["creatorTypes"]:
            creator_type_ids.setdefault(entry["creatorType"], len(creator_type_ids) + 1)
    conn.executemany("INSERT INTO fields VALUES (?, ?, NULL)", [(i, name) for name, i in field_ids.items()])
    conn.executemany("INSERT INTO creatorTypes VALUES (?, ?)", [(i, name) for name, i in creator_type_ids.items()])
    for type_id, item_type in enumerate(schema["itemTypes"], start=1):
        conn.execute("INSERT INTO itemTypes VALUES (?, ?, NULL, 1)", (type_id, item_type["itemType"]))
        for index, entry in enumerate(item_type["fields"]):
            field_id = field_ids[entry["field"]]
            conn.execute("INSERT INTO itemTypeFields VALUES (?, ?, 0, ?)", (type_id, field_id, index))
            if entry.get("baseField"):
                conn.execute(
                    "INSERT INTO baseFieldMappings VALUES (?, ?, ?)", (type_id, field_ids[entry["baseField"]], field_id)
                )
        for entry in item_type["creatorTypes"]:
            conn.execute(
                "INSERT INTO itemTypeCreatorTypes VALUES (?, ?, ?)",
                (type_id, creator_type_ids[entry["creatorType"]], 1 if entry.get("primary") else 0),
            )


def fill_combined_tables(conn: sqlite3.Connection) -> None:
    """What `_updateCustomTables` does at startup when there are no custom types or fields (there never are)."""
    conn.execute("INSERT INTO itemTypesCombined SELECT itemTypeID, typeName, display, 0 FROM itemTypes")
    conn.execute("INSERT INTO fieldsCombined SELECT fieldID, fieldName, NULL, fieldFormatID, 0 FROM fields")
    conn.execute("INSERT INTO itemTypeFieldsCombined SELECT itemTypeID, fieldID, hide, orderIndex FROM itemTypeFields")
    conn.execute("INSERT INTO baseFieldMappingsCombined SELECT itemTypeID, baseFieldID, fieldID FROM baseFieldMappings")


class ZoteroLibraryBuilder:
    """A Zotero data directory being filled; close it (or use `with`) before reading it."""

    def __init__(self, data_dir: Path, *, seed: int = 0) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir
        self.db_path = data_dir / "zotero.sqlite"
        self.conn = create_database(self.db_path)
        self._random = random.Random(seed)
        self._keys: set[str] = set()

    def __enter__(self) -> ZoteroLibraryBuilder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # --- items ---

    def add_item(self, item_type: str, fields: Mapping[str, str] | None = None) -> Item:
        """A top-level item of `item_type` with `fields`, each checked to be a field of that type (as Zotero does)."""
        type_id = self._type_id(item_type)
        key = self._new_key()
        cursor = self.conn.execute(
            "INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, ?, ?)", (type_id, USER_LIBRARY_ID, key)
        )
        assert cursor.lastrowid is not None
        item = Item(cursor.lastrowid, key, item_type)
        for name, value in (fields or {}).items():
            self.set_field(item, name, value)
        return item

    def set_field(self, item: Item, name: str, value: str) -> None:
        row = self.conn.execute(
            "SELECT fieldID FROM itemTypeFields JOIN fields USING (fieldID) WHERE itemTypeID = ? AND fieldName = ?",
            (self._type_id(item.item_type), name),
        ).fetchone()
        if row is None:
            raise ValueError(f"{item.item_type} has no field {name!r} in Zotero's schema")
        self.conn.execute("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?)", (value,))
        (value_id,) = self.conn.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()
        self.conn.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item.item_id, row[0], value_id))

    def journal_article(
        self, title: str, *, authors: Iterable[str] = (), journal: str = "", date: str = "", **fields: str
    ) -> Item:
        """A journalArticle; `authors` as "Given Family"; more fields by their Zotero names (DOI=..., extra=...)."""
        return self._paper("journalArticle", title, authors, {"publicationTitle": journal, "date": date, **fields})

    def conference_paper(
        self, title: str, *, authors: Iterable[str] = (), proceedings: str = "", date: str = "", **fields: str
    ) -> Item:
        return self._paper("conferencePaper", title, authors, {"proceedingsTitle": proceedings, "date": date, **fields})

    def preprint(
        self, title: str, *, authors: Iterable[str] = (), repository: str = "arXiv", date: str = "", **fields: str
    ) -> Item:
        return self._paper("preprint", title, authors, {"repository": repository, "date": date, **fields})

    def _paper(self, item_type: str, title: str, authors: Iterable[str], fields: Mapping[str, str]) -> Item:
        item = self.add_item(item_type, {"title": title, **{k: v for k, v in fields.items() if v}})
        for name in authors:
            given, _, family = name.rpartition(" ")
            self.add_creator(item, given, family)
        return item

    # --- creators ---

    def add_creator(
        self,
        item: Item,
        first: str,
        last: str,
        role: str = "author",
        *,
        single_field: bool = False,
        order_index: int | None = None,
    ) -> None:
        """A creator of `item` with `role` (a creator type of its item type), after the ones it has by default."""
        role_id = self.conn.execute(
            "SELECT creatorTypeID FROM itemTypeCreatorTypes JOIN creatorTypes USING (creatorTypeID) "
            "WHERE itemTypeID = ? AND creatorType = ?",
            (self._type_id(item.item_type), role),
        ).fetchone()
        if role_id is None:
            raise ValueError(f"{item.item_type} has no creator type {role!r} in Zotero's schema")
        mode = 1 if single_field else 0
        first = "" if single_field else first
        self.conn.execute(
            "INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?, ?, ?)", (first, last, mode)
        )
        (creator_id,) = self.conn.execute(
            "SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ? AND fieldMode = ?", (first, last, mode)
        ).fetchone()
        if order_index is None:
            (order_index,) = self.conn.execute(
                "SELECT COALESCE(MAX(orderIndex) + 1, 0) FROM itemCreators WHERE itemID = ?", (item.item_id,)
            ).fetchone()
        self.conn.execute(
            "INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item.item_id, creator_id, role_id[0], order_index)
        )

    # --- attachments and notes ---

    def add_stored_pdf(
        self, parent: Item, filename: str = "paper.pdf", *, text: str = "", create_file: bool = True
    ) -> Attachment:
        """A PDF imported into Zotero's storage: storage/<attachment key>/<filename>, path "storage:<filename>"."""
        child = self._attachment_item(parent, "Full Text PDF")
        file = self.data_dir / "storage" / child.key / filename
        if create_file:
            make_pdf(file, text or f"stored PDF of item {parent.key}")
        self._attachment_row(child, parent, LINK_MODE_IMPORTED_URL, "application/pdf", f"storage:{filename}")
        return Attachment(child.item_id, child.key, file)

    def add_linked_pdf(
        self,
        parent: Item,
        file: Path,
        *,
        stored_path: str | None = None,
        content_type: str = "application/pdf",
        create_file: bool = True,
    ) -> Attachment:
        """A linked file: Zotero keeps only its path (`stored_path`: as written, e.g. "attachments:Papers/a.pdf")."""
        child = self._attachment_item(parent, file.name)
        if create_file:
            make_pdf(file, f"linked PDF of item {parent.key}")
        path = stored_path if stored_path is not None else str(file)
        self._attachment_row(child, parent, LINK_MODE_LINKED_FILE, content_type, path)
        return Attachment(child.item_id, child.key, file)

    def add_linked_url(self, parent: Item, url: str, content_type: str = "application/pdf") -> Attachment:
        """A link to a web page or file: no file, the URL in the attachment's url field."""
        child = self._attachment_item(parent, "Link")
        self.set_field(child, "url", url)
        self._attachment_row(child, parent, LINK_MODE_LINKED_URL, content_type, None)
        return Attachment(child.item_id, child.key, None)

    def add_stored_file(self, parent: Item, filename: str, content_type: str, content: bytes) -> Attachment:
        """A stored attachment that is not a PDF (an HTML snapshot, say)."""
        child = self._attachment_item(parent, "Snapshot")
        file = self.data_dir / "storage" / child.key / filename
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content)
        self._attachment_row(child, parent, LINK_MODE_IMPORTED_URL, content_type, f"storage:{filename}")
        return Attachment(child.item_id, child.key, file)

    def add_note(self, parent: Item | None, html: str) -> Item:
        note = self.add_item("note")
        title = html.split("<", 1)[0][:80]
        self.conn.execute(
            "INSERT INTO itemNotes VALUES (?, ?, ?, ?)",
            (note.item_id, parent.item_id if parent else None, f"<div>{html}</div>", title),
        )
        return note

    def _attachment_item(self, parent: Item, title: str) -> Item:
        del parent  # the link to the parent is the attachment row's parentItemID
        return self.add_item("attachment", {"title": title})

    def _attachment_row(
        self, child: Item, parent: Item, link_mode: int, content_type: str | None, path: str | None
    ) -> None:
        self.conn.execute(
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, ?, ?, ?)",
            (child.item_id, parent.item_id, link_mode, content_type, path),
        )

    # --- collections, tags, trash ---

    def add_collection(self, name: str, parent: int | None = None) -> int:
        cursor = self.conn.execute(
            "INSERT INTO collections (collectionName, parentCollectionID, libraryID, key) VALUES (?, ?, ?, ?)",
            (name, parent, USER_LIBRARY_ID, self._new_key()),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def file_in(self, item: Item, collection: int) -> None:
        self.conn.execute(
            "INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)", (collection, item.item_id)
        )

    def add_tag(self, item: Item, name: str, *, automatic: bool = False) -> None:
        self.conn.execute("INSERT OR IGNORE INTO tags (name) VALUES (?)", (name,))
        (tag_id,) = self.conn.execute("SELECT tagID FROM tags WHERE name = ?", (name,)).fetchone()
        self.conn.execute("INSERT INTO itemTags VALUES (?, ?, ?)", (item.item_id, tag_id, 1 if automatic else 0))

    def trash(self, item: Item | Attachment) -> None:
        self.conn.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item.item_id,))

    def trash_collection(self, collection: int) -> None:
        self.conn.execute("INSERT INTO deletedCollections (collectionID) VALUES (?)", (collection,))

    # --- ids ---

    def _type_id(self, item_type: str) -> int:
        row = self.conn.execute("SELECT itemTypeID FROM itemTypes WHERE typeName = ?", (item_type,)).fetchone()
        if row is None:
            raise ValueError(f"no item type {item_type!r} in Zotero's schema")
        return int(row[0])

    def _new_key(self) -> str:
        while True:
            key = "".join(self._random.choice(KEY_CHARS) for _ in range(8))
            if key not in self._keys:
                self._keys.add(key)
                return key
