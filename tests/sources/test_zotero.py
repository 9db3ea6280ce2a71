"""Reading a Zotero data directory (paperscope.sources.zotero) built with Zotero's own schema."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.errors import SourceError
from paperscope.sources.models import LibraryItem
from paperscope.sources.zotero import ZoteroLibrary, default_zotero_dir, read_zotero
from tests.sources.zotero_library import ZoteroLibraryBuilder, make_pdf, zotero_date


@pytest.fixture
def builder(tmp_path: Path) -> Iterator[ZoteroLibraryBuilder]:
    with ZoteroLibraryBuilder(tmp_path / "Zotero") as zotero:
        yield zotero


def read(builder: ZoteroLibraryBuilder, **kwargs: Path) -> ZoteroLibrary:
    builder.close()  # Zotero's own connection would be closed or holding a lock; tests of the lock make their own
    return read_zotero(builder.data_dir, **kwargs)


def by_key(library: ZoteroLibrary) -> dict[str, LibraryItem]:
    return {item.meta.item_key: item for item in library.items}


def snapshot(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file under `directory`: its sha256 and mtime."""
    return {
        str(path.relative_to(directory)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


# --- attachments ---


def test_stored_pdf_is_found_in_storage_under_the_attachment_key(builder: ZoteroLibraryBuilder) -> None:
    item = builder.journal_article("Stored paper", authors=["Ada Lovelace"])
    attachment = builder.add_stored_pdf(item, "Lovelace - 1843 - Notes.pdf")
    library = read(builder)
    assert [i.meta.item_key for i in library.items] == [item.key]
    found = library.items[0]
    assert found.pdf == builder.data_dir / "storage" / attachment.key / "Lovelace - 1843 - Notes.pdf"
    assert found.pdf is not None and found.pdf.read_bytes().startswith(b"%PDF")
    assert found.problem == ""
    assert library.data_dir == builder.data_dir


def test_linked_pdf_with_an_absolute_path(builder: ZoteroLibraryBuilder, tmp_path: Path) -> None:
    item = builder.journal_article("Linked paper")
    outside = tmp_path / "Papers elsewhere" / "linked.pdf"
    builder.add_linked_pdf(item, outside)
    (found,) = read(builder).items
    assert found.pdf == outside
    assert found.problem == ""


def test_linked_pdf_relative_to_the_base_directory(builder: ZoteroLibraryBuilder, tmp_path: Path) -> None:
    base = tmp_path / "Base"
    given = builder.journal_article("Relative to a given base")
    builder.add_linked_pdf(given, base / "Sub" / "a.pdf", stored_path="attachments:Sub/a.pdf")
    assumed = builder.journal_article("Relative to the assumed base")
    builder.add_linked_pdf(assumed, tmp_path / "Sub" / "b.pdf", stored_path="attachments:Sub/b.pdf")
    missing = builder.journal_article("Relative and missing")
    builder.add_linked_pdf(missing, tmp_path / "c.pdf", stored_path="attachments:Gone/c.pdf", create_file=False)
    builder.close()

    with_base = by_key(read_zotero(builder.data_dir, base_dir=base))
    assert with_base[given.key].pdf == base / "Sub" / "a.pdf"

    # Without the base directory (a preference of Zotero's profile), the data directory's parent is assumed.
    without = by_key(read_zotero(builder.data_dir))
    assert without[assumed.key].pdf == tmp_path / "Sub" / "b.pdf"
    assert without[missing.key].pdf is None
    assert str(tmp_path / "Gone" / "c.pdf") in without[missing.key].problem
    assert f"assumed {tmp_path}" in without[missing.key].problem


def test_first_pdf_by_attachment_id_is_taken_and_a_missing_one_passed_over(builder: ZoteroLibraryBuilder) -> None:
    two = builder.journal_article("Two PDFs")
    first = builder.add_stored_pdf(two, "first.pdf")
    builder.add_stored_pdf(two, "second.pdf")
    gap = builder.journal_article("First PDF missing")
    builder.add_stored_pdf(gap, "gone.pdf", create_file=False)
    present = builder.add_stored_pdf(gap, "here.pdf")
    found = by_key(read(builder))
    assert found[two.key].pdf == first.file
    assert found[gap.key].pdf == present.file
    assert found[gap.key].problem == ""


def test_missing_attachment_file_is_named_and_the_rest_is_read(builder: ZoteroLibraryBuilder) -> None:
    good = builder.journal_article("Readable paper")
    builder.add_stored_pdf(good)
    lost = builder.conference_paper("Lost paper")
    attachment = builder.add_stored_pdf(lost, "lost.pdf", create_file=False)
    library = read(builder)
    found = by_key(library)
    assert set(found) == {good.key, lost.key}
    assert found[good.key].pdf is not None and found[good.key].problem == ""
    problem = found[lost.key].problem
    assert found[lost.key].pdf is None
    assert "Lost paper" in problem and lost.key in problem and str(attachment.file) in problem
    assert "\n" not in problem
    assert found[lost.key].meta.title == "Lost paper"  # its metadata is read all the same


def test_items_without_a_pdf_are_counted_not_listed(builder: ZoteroLibraryBuilder) -> None:
    bare = builder.journal_article("No attachment at all")
    snapshot_only = builder.journal_article("Only a web snapshot")
    builder.add_stored_file(snapshot_only, "page.html", "text/html", b"<html></html>")
    link_only = builder.journal_article("Only a link to a PDF on the web")
    builder.add_linked_url(link_only, "https://example.org/paper.pdf")  # linked URLs are not files
    noted = builder.journal_article("Only a note")
    builder.add_note(noted, "my thoughts")
    builder.add_note(None, "a standalone note")
    with_pdf = builder.journal_article("With a PDF")
    builder.add_stored_pdf(with_pdf)
    library = read(builder)
    assert [i.meta.item_key for i in library.items] == [with_pdf.key]
    assert library.skipped_no_pdf == 4
    assert library.skipped_trash == 0
    assert bare.key not in by_key(library)


def test_pdf_recognised_by_file_name_when_the_content_type_is_missing(
    builder: ZoteroLibraryBuilder, tmp_path: Path
) -> None:
    item = builder.journal_article("No content type")
    builder.add_linked_pdf(item, tmp_path / "typeless.PDF", content_type="")
    (found,) = read(builder).items
    assert found.pdf == tmp_path / "typeless.PDF"


def test_trashed_items_are_skipped_and_counted(builder: ZoteroLibraryBuilder) -> None:
    trashed = builder.journal_article("Thrown away")
    builder.add_stored_pdf(trashed)
    builder.trash(trashed)
    pdf_trashed = builder.journal_article("Its only PDF thrown away")
    builder.trash(builder.add_stored_pdf(pdf_trashed))
    one_left = builder.journal_article("One PDF thrown away, one kept")
    builder.trash(builder.add_stored_pdf(one_left, "old.pdf"))
    kept = builder.add_stored_pdf(one_left, "new.pdf")
    library = read(builder)
    assert [i.meta.item_key for i in library.items] == [one_left.key]
    assert library.items[0].pdf == kept.file
    assert library.skipped_trash == 2
    assert library.skipped_no_pdf == 0


# --- metadata ---


def test_metadata_of_a_journal_article(builder: ZoteroLibraryBuilder) -> None:
    item = builder.journal_article(
        "  Attention Is All You Need ",
        authors=["Ashish Vaswani", "Noam Shazeer"],
        journal="Journal of Things",
        date=zotero_date("2017-06-12", "June 12, 2017"),
        url="https://example.org/attention",
    )
    builder.add_stored_pdf(item)
    (found,) = read(builder).items
    meta = found.meta
    assert meta.title == "Attention Is All You Need"
    assert meta.authors == ["Ashish Vaswani", "Noam Shazeer"]
    assert meta.year == 2017
    assert meta.venue == "Journal of Things"
    assert meta.url == "https://example.org/attention"
    assert meta.item_key == item.key
    assert meta.origin == "zotero"
    assert meta.library == str(builder.data_dir.resolve())


def test_creators_in_order_authors_only(builder: ZoteroLibraryBuilder) -> None:
    # Creator rows made in another order than the item lists them: the order comes from orderIndex.
    other = builder.journal_article("Other", authors=["Zoe Last"])
    builder.add_stored_pdf(other)
    item = builder.add_item("bookSection", {"title": "A chapter", "bookTitle": "The Book"})
    builder.add_creator(item, "Zoe", "Last", order_index=3)
    builder.add_creator(item, "Ed", "Itor", "editor", order_index=0)
    builder.add_creator(item, "Ada", "First", order_index=1)
    builder.add_creator(item, "", "The Collective", single_field=True, order_index=2)
    builder.add_stored_pdf(item)
    found = by_key(read(builder))[item.key].meta
    assert found.authors == ["Ada First", "The Collective", "Zoe Last"]
    assert found.venue == "The Book"


def test_all_creators_when_none_is_an_author(builder: ZoteroLibraryBuilder) -> None:
    book = builder.add_item("book", {"title": "Edited volume"})
    builder.add_creator(book, "Second", "Editor", "editor", order_index=1)
    builder.add_creator(book, "First", "Editor", "editor", order_index=0)
    builder.add_stored_pdf(book)
    (found,) = read(builder).items
    assert found.meta.authors == ["First Editor", "Second Editor"]


@pytest.mark.parametrize(
    ("date", "year"),
    [
        (zotero_date("2020-04-15", "15/04/2020"), 2020),
        (zotero_date("2019-00-00", "Spring 2019"), 2019),
        (zotero_date("0000-00-00", "n.d."), None),
    ],
)
def test_year_from_the_date_field(builder: ZoteroLibraryBuilder, date: str, year: int | None) -> None:
    item = builder.journal_article("Dated", date=date)
    builder.add_stored_pdf(item)
    assert read(builder).items[0].meta.year == year


def test_venues_of_conference_papers_and_preprints(builder: ZoteroLibraryBuilder) -> None:
    paper = builder.conference_paper("In proceedings", proceedings="Proceedings of ACL 2020")
    builder.add_stored_pdf(paper)
    named = builder.conference_paper("Only the conference named", conferenceName="NeurIPS 2021")
    builder.add_stored_pdf(named)
    preprint = builder.preprint("On arXiv", repository="arXiv")
    builder.add_stored_pdf(preprint)
    found = by_key(read(builder))
    assert found[paper.key].meta.venue == "Proceedings of ACL 2020"
    assert found[named.key].meta.venue == "NeurIPS 2021"
    assert found[preprint.key].meta.venue == "arXiv"


def test_doi_from_the_field_or_extra(builder: ZoteroLibraryBuilder) -> None:
    field = builder.journal_article("DOI field", DOI="https://doi.org/10.1145/ABC.123")
    builder.add_stored_pdf(field)
    extra = builder.add_item("book", {"title": "DOI in Extra", "extra": "Some note\nDOI: 10.5555/XYZ\n"})
    builder.add_stored_pdf(extra)
    none = builder.journal_article("No DOI", DOI="not a doi")
    builder.add_stored_pdf(none)
    found = by_key(read(builder))
    assert found[field.key].meta.doi == "10.1145/abc.123"
    assert found[extra.key].meta.doi == "10.5555/xyz"
    assert found[none.key].meta.doi is None


def test_arxiv_id_from_extra_archive_id_url_or_doi(builder: ZoteroLibraryBuilder) -> None:
    extra = builder.journal_article("arXiv in Extra", extra="arXiv: 2004.07180v2")
    archive = builder.preprint("arXiv archive id", archiveID="arXiv:1706.03762")
    url = builder.journal_article("arXiv URL", url="https://arxiv.org/abs/hep-th/9901001v3")
    doi = builder.preprint("arXiv DOI", DOI="10.48550/arXiv.2301.00001")
    neither = builder.journal_article("Not on arXiv", url="https://example.org/2004.07180")
    for item in (extra, archive, url, doi, neither):
        builder.add_stored_pdf(item)
    found = by_key(read(builder))
    assert found[extra.key].meta.arxiv_id == "2004.07180"
    assert found[archive.key].meta.arxiv_id == "1706.03762"
    assert found[url.key].meta.arxiv_id == "hep-th/9901001"
    assert found[doi.key].meta.arxiv_id == "2301.00001"
    assert found[neither.key].meta.arxiv_id is None


def test_citation_key_from_extra_or_the_field(builder: ZoteroLibraryBuilder) -> None:
    extra = builder.journal_article("Better BibTeX", extra="tex.foo: bar\nCitation Key: vaswani2017attention")
    field = builder.journal_article("Zotero 7 field", citationKey="lovelace1843")
    none = builder.journal_article("No key")
    for item in (extra, field, none):
        builder.add_stored_pdf(item)
    found = by_key(read(builder))
    assert found[extra.key].meta.citation_key == "vaswani2017attention"
    assert found[field.key].meta.citation_key == "lovelace1843"
    assert found[none.key].meta.citation_key == ""


def test_collections_as_paths(builder: ZoteroLibraryBuilder) -> None:
    thesis = builder.add_collection("Thesis")
    chapter = builder.add_collection("Chapter 2", thesis)
    section = builder.add_collection("Related work", chapter)
    reading = builder.add_collection("Reading")
    old = builder.add_collection("Old")
    builder.trash_collection(old)
    item = builder.journal_article("Filed")
    builder.add_stored_pdf(item)
    for collection in (section, reading, old):
        builder.file_in(item, collection)
    (found,) = read(builder).items
    assert found.meta.collections == ["Reading", "Thesis/Chapter 2/Related work"]


def test_tags(builder: ZoteroLibraryBuilder) -> None:
    item = builder.journal_article("Tagged")
    builder.add_stored_pdf(item)
    builder.add_tag(item, "transformers")
    builder.add_tag(item, "Attention", automatic=True)
    untagged = builder.journal_article("Untagged")
    builder.add_stored_pdf(untagged)
    found = by_key(read(builder))
    assert found[item.key].meta.tags == ["Attention", "transformers"]
    assert found[untagged.key].meta.tags == []


# --- opening the database ---


def test_read_while_another_connection_holds_an_exclusive_lock(builder: ZoteroLibraryBuilder) -> None:
    item = builder.journal_article("Read under lock")
    builder.add_stored_pdf(item)
    builder.close()
    zotero = sqlite3.connect(builder.db_path, isolation_level=None)  # Zotero keeps this lock while it runs
    try:
        zotero.execute("BEGIN EXCLUSIVE")
        plain = sqlite3.connect(f"file:{builder.db_path}?mode=ro", uri=True, timeout=0.1)
        with pytest.raises(sqlite3.OperationalError, match="locked"):  # the lock does keep plain readers out
            plain.execute("SELECT COUNT(*) FROM items").fetchone()
        plain.close()
        library = read_zotero(builder.data_dir)
    finally:
        zotero.execute("ROLLBACK")
        zotero.close()
    assert [i.meta.item_key for i in library.items] == [item.key]


def test_reading_changes_nothing_in_the_data_directory(builder: ZoteroLibraryBuilder) -> None:
    item = builder.journal_article("Untouched")
    builder.add_stored_pdf(item)
    builder.close()
    before = snapshot(builder.data_dir)
    read_zotero(builder.data_dir)
    assert snapshot(builder.data_dir) == before


def test_reading_a_wal_database_leaves_no_wal_files(builder: ZoteroLibraryBuilder) -> None:
    # Recent Zotero versions keep the database in WAL mode; a plain read-only connection would create -wal and -shm.
    builder.conn.execute("PRAGMA journal_mode=WAL")
    item = builder.journal_article("In WAL mode")
    builder.add_stored_pdf(item)
    builder.close()
    before = snapshot(builder.data_dir)
    library = read_zotero(builder.data_dir)
    assert [i.meta.item_key for i in library.items] == [item.key]
    assert snapshot(builder.data_dir) == before


def test_data_directory_with_unusual_characters_in_its_path(tmp_path: Path) -> None:
    with ZoteroLibraryBuilder(tmp_path / "My Zotero #1 ?mode=rw 100%") as zotero:
        item = zotero.journal_article("Odd path")
        zotero.add_stored_pdf(item)
    library = read_zotero(zotero.data_dir)
    assert [i.meta.item_key for i in library.items] == [item.key]


# --- errors ---


def test_missing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no such dir"
    with pytest.raises(SourceError) as caught:
        read_zotero(missing)
    assert str(missing) in str(caught.value) and "\n" not in str(caught.value)


def test_directory_without_a_database(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        read_zotero(tmp_path)
    assert str(tmp_path / "zotero.sqlite") in str(caught.value) and "\n" not in str(caught.value)


def test_sqlite_file_that_is_not_a_zotero_database(tmp_path: Path) -> None:
    db = tmp_path / "zotero.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.close()
    with pytest.raises(SourceError) as caught:
        read_zotero(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{db}: ") and "not a Zotero database" in message and "\n" not in message


def test_file_that_is_not_a_database_at_all(tmp_path: Path) -> None:
    db = tmp_path / "zotero.sqlite"
    db.write_bytes(b"this is not sqlite\n" * 100)
    with pytest.raises(SourceError) as caught:
        read_zotero(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{db}: ") and "\n" not in message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


def test_pdf_helper_makes_real_pdfs(tmp_path: Path) -> None:
    import pymupdf

    pdf = make_pdf(tmp_path / "a.pdf", "hello zotero")
    with pymupdf.open(pdf) as doc:
        assert "hello zotero" in doc[0].get_text()


def test_default_zotero_dir_is_in_the_home_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_zotero_dir() == tmp_path / "Zotero"
