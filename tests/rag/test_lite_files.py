"""The papers listing kept beside a Milvus Lite store: valid while the store's files and the settings are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from paperscope.rag.lite_files import lite_path, read_listing, signature, write_listing
from paperscope.rag.store import PaperStore
from tests.markdown_papers import markdown


def _paper(folder: Path, name: str, title: str) -> Path:
    source = folder / f"{name}.md"
    source.write_text(markdown(title, 2021, [("## Abstract", [f"We study {name} in {title.lower()}."])]))
    return source


def test_reads_leave_the_signature_alone_and_every_write_changes_it(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    settings = Settings(home=tmp_path)
    data = lite_path(settings)
    assert data == (tmp_path / "milvus.db").resolve() and signature(data) is None  # nothing stored yet
    with PaperStore.open(settings, local_embedder, create=True) as store:
        assert not ingest([_paper(tmp_path, "kelp", "Kelp Forests")], settings, store).failed
    # Milvus Lite may still seal what was written after the writes return (it flushes in the background, and on
    # close): the files settle once the writer has closed, and no reader can open the store before that.
    written = signature(data)
    with PaperStore.open(settings, local_embedder) as store:
        store.list_papers()
        store.search_bm25("kelp", None, 3)
        store.search_dense("kelp forests", None, 3)
        assert signature(data) == written  # opening, reading
    assert signature(data) == written  # and closing
    with PaperStore.open(settings, local_embedder) as store:
        assert not ingest([_paper(tmp_path, "moss", "Moss Mats")], settings, store).failed
    added = signature(data)
    assert added != written
    with PaperStore.open(settings, local_embedder) as store:
        store.delete_paper(store.list_papers(brief=True)[0].doc_id)
    assert signature(data) not in (added, written)


def test_a_listing_holds_until_the_store_or_the_settings_change(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    settings = Settings(home=tmp_path)
    rows = [{"doc_id": "x", "title": "Kelp Forests"}]
    write_listing(settings, rows)  # no store yet: nothing to sign, nothing kept
    assert read_listing(settings) is None
    with PaperStore.open(settings, local_embedder, create=True) as store:
        assert not ingest([_paper(tmp_path, "kelp", "Kelp Forests")], settings, store).failed
    with PaperStore.open(settings, local_embedder):  # as `papers` does: the store open, nothing written
        write_listing(settings, rows)
    assert read_listing(settings) == rows
    other_kb = settings.model_copy(update={"store": settings.store.model_copy(update={"kb": "other"})})
    assert read_listing(other_kb) is None
    changed = settings.model_copy(update={"retrieval": settings.retrieval.model_copy(update={"k": 9})})
    assert read_listing(changed) is None  # other settings: read the store again (it may refuse them)

    with PaperStore.open(settings, local_embedder) as store:
        assert not ingest([_paper(tmp_path, "moss", "Moss Mats")], settings, store).failed
    assert read_listing(settings) is None  # written behind the listing's back: stale

    with PaperStore.open(settings, local_embedder) as store:
        write_listing(settings, rows)
    listing = next((tmp_path / "listings").glob("*.json"))
    assert json.loads(listing.read_text())["rows"] == rows
    listing.write_text("{half a listing")
    assert read_listing(settings) is None  # unreadable: the store is read instead
    assert not list((tmp_path / "listings").glob("*.partial"))


def test_a_server_store_has_no_listing(tmp_path: Path) -> None:
    for uri in ("http://127.0.0.1:19530", "tcp://db:19530", "unix:/tmp/milvus.sock", "ftp://example"):
        settings = Settings(home=tmp_path, store={"uri": uri})
        assert lite_path(settings) is None and read_listing(settings) is None
    assert lite_path(Settings(home=tmp_path, store={"uri": str(tmp_path / "x.db")})) == (tmp_path / "x.db").resolve()
