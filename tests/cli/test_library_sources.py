"""Bringing a library: a Zotero data directory (built with Zotero's own schema) and .bib files ingested from the
command line with their metadata, synced, kept to a collection, found by their names, and answers exported with
the papers they cite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import bibtexparser
import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from tests.sources.zotero_library import ZoteroLibraryBuilder

FLASHRANK = "FlashRank: Cheap Listwise Reranking with Distilled Cross-Encoders"
MARTEN = "Marten-1B: Pretraining a Compact Language Model on 600 Billion Curated Tokens"
HYDRA = "HyDRA: Hypothetical Document Retrieval Augmentation for Zero-Shot Dense Retrieval"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    return tmp_path / "home"


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.stdout + result.stderr
    return result.stdout


def _papers() -> dict[str, dict]:
    return {p["title"]: p for p in json.loads(_run("papers", "--json"))}


def _copy(pdf: Path, to: Path | None) -> None:
    assert to is not None
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pdf, to)


def test_a_zotero_library_is_ingested_with_its_metadata_synced_and_kept_to_a_collection(
    home: Path, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    data = tmp_path / "Zotero"
    with ZoteroLibraryBuilder(data) as zotero:
        flash = zotero.conference_paper(
            FLASHRANK,
            authors=["Mira Okafor", "Tomas Lindqvist", "Wen Zhao"],
            proceedings="Proceedings of SIGIR 2024",
            date="2024-07-14",
            DOI="https://doi.org/10.1145/3626772.1234567",
            extra="Citation Key: okafor2024flashrank",
        )
        _copy(sample_pdfs["flashrank"], zotero.add_stored_pdf(flash, "FlashRank.pdf", create_file=False).file)
        marten = zotero.preprint(MARTEN, authors=["Oskar Nilsson", "Fatima Haddad"], date="2024-05-02")
        linked = tmp_path / "Papers" / "marten.pdf"
        _copy(sample_pdfs["marten"], linked)
        zotero.add_linked_pdf(marten, linked, create_file=False)
        zotero.journal_article("Notes Without a PDF", authors=["Ada Lovelace"])
        trashed = zotero.journal_article("A Paper in the Trash", authors=["Ada Lovelace"])
        _copy(sample_pdfs["quantkv"], zotero.add_stored_pdf(trashed, "trash.pdf", create_file=False).file)
        zotero.trash(trashed)
        lost = zotero.journal_article("A Lost Paper", authors=["Ada Lovelace"])
        zotero.add_stored_pdf(lost, "lost.pdf", create_file=False)
        thesis = zotero.add_collection("Thesis")
        zotero.file_in(flash, zotero.add_collection("Chapter 2", parent=thesis))
        zotero.file_in(marten, zotero.add_collection("Reading"))
        zotero.add_tag(flash, "reranking")

        report = json.loads(_run("ingest", "--zotero", str(data), "--json", code=1))  # the lost file fails alone
        statuses = sorted(f["status"] for f in report["files"])
        assert statuses == ["failed", "ingested", "ingested"]
        [failed] = [f for f in report["files"] if f["status"] == "failed"]
        assert "A Lost Paper" in failed["error"] and "lost.pdf" in failed["error"] and "\n" not in failed["error"]
        assert any("1 in the trash" in n and "1 without a PDF" in n for n in report["notes"])

        papers = _papers()
        assert set(papers) == {FLASHRANK, MARTEN}  # the library's titles, not what the PDFs print
        row = papers[FLASHRANK]
        assert row["authors"] == ["Mira Okafor", "Tomas Lindqvist", "Wen Zhao"]
        assert (row["year"], row["venue"], row["doi"]) == (2024, "Proceedings of SIGIR 2024", "10.1145/3626772.1234567")
        assert (row["citation_key"], row["collections"], row["tags"]) == (
            "okafor2024flashrank",
            ["Thesis/Chapter 2"],
            ["reranking"],
        )
        assert row["library"] == "zotero" and papers[MARTEN]["authors"] == ["Oskar Nilsson", "Fatima Haddad"]

        # Kept to a collection (and those below it): only that paper's passages.
        found = json.loads(_run("retrieve", "how is the model trained", "--collection", "Thesis", "--json"))
        assert {h["doc_id"] for h in found["hits"]} == {row["doc_id"]}
        _run("ask", "how is the model trained", "--collection", "Nowhere", code=1)

        # The library's names find the paper: its first author, its citation key, its DOI.
        for named in (
            "What do Okafor et al. propose?",
            "What does okafor2024flashrank propose?",
            "What does doi 10.1145/3626772.1234567 propose?",
        ):
            routed = json.loads(_run("ask", named, "--json"))
            assert (routed["track"], routed["route"]["doc_ids"]) == ("A", [row["doc_id"]]), named

        # Sync: a tag added (the catalogue alone changes), an item trashed (its paper goes), a new item (it comes in).
        zotero.add_tag(flash, "to read")
        zotero.trash(marten)
        hydra = zotero.journal_article(HYDRA, authors=["Priya Raman", "Jonas Becker"], date="2024")
        _copy(sample_pdfs["hydra"], zotero.add_stored_pdf(hydra, "hydra.pdf", create_file=False).file)
        again = json.loads(_run("ingest", "--zotero", str(data), "--json", code=1))
        by_title = {f["title"]: f["status"] for f in again["files"] if f["title"]}
        assert by_title == {FLASHRANK: "updated", MARTEN: "removed", HYDRA: "ingested"}
        papers = _papers()
        assert set(papers) == {FLASHRANK, HYDRA}
        assert papers[FLASHRANK]["tags"] == ["reranking", "to read"]
        assert papers[FLASHRANK]["doc_id"] == row["doc_id"]  # updated in place, not ingested again


def test_a_bib_file_is_ingested_with_its_keys_and_answers_export_their_bibliography(
    home: Path, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    zotero_pdf = tmp_path / "storage" / "ABCD1234" / "FlashRank.pdf"
    _copy(sample_pdfs["flashrank"], zotero_pdf)
    _copy(sample_pdfs["marten"], tmp_path / "library" / "papers" / "marten.pdf")
    bib = tmp_path / "library" / "refs.bib"
    bib.write_text(
        "@inproceedings{okafor2024flashrank,\n"
        f"  title = {{{{FlashRank}}: Cheap Listwise Reranking with Distilled Cross-Encoders}},\n"
        "  author = {Okafor, Mira and Lindqvist, Tomas and Zhao, Wen},\n"
        "  booktitle = {Proceedings of SIGIR},\n  year = {2024},\n  doi = {10.1145/3626772.1234567},\n"
        f"  file = {{Full Text PDF:{zotero_pdf}:application/pdf}}\n}}\n\n"
        "@article{nilsson2024marten,\n"
        f"  title = {{{MARTEN}}},\n"
        "  author = {Nilsson, Oskar and Haddad, Fatima},\n"
        "  journal = {Transactions on Machine Learning Research},\n  year = {2024},\n"
        "  file = {:papers/marten.pdf:PDF}\n}\n\n"
        "@misc{nofile2023,\n  title = {An Entry Without a File},\n  author = {Lovelace, Ada},\n  year = {2023}\n}\n",
        encoding="utf-8",
    )
    report = json.loads(_run("ingest", str(bib), "--json"))
    assert sorted(f["status"] for f in report["files"]) == ["ingested", "ingested"]
    assert any("without a PDF" in n for n in report["notes"])
    papers = _papers()
    assert papers[FLASHRANK]["citation_key"] == "okafor2024flashrank"
    assert papers[MARTEN]["venue"] == "Transactions on Machine Learning Research"

    answer = json.loads(_run("ask", "How many tokens was Marten-1B pretrained on?", "--json"))
    [work] = [w for w in answer["bibliography"] if w["title"] == MARTEN]
    assert work["citation_key"] == "nilsson2024marten" and work["authors"] == ["Oskar Nilsson", "Fatima Haddad"]
    markdown = _run("ask", "How many tokens was Marten-1B pretrained on?", "--format", "markdown")
    assert "## References" in markdown
    assert f"Oskar Nilsson, Fatima Haddad (2024). {MARTEN}. *Transactions on Machine Learning Research*." in markdown
    exported = _run("ask", "How many tokens was Marten-1B pretrained on?", "--format", "bibtex")
    entries = {e.key: e for e in bibtexparser.parse_string(exported).entries}
    assert "nilsson2024marten" in entries
    assert entries["nilsson2024marten"].fields_dict["title"].value.strip("{}") == MARTEN


def test_libraries_and_downloads_are_refused_through_a_server_before_it_is_called(home: Path) -> None:
    for args in (["--zotero"], ["refs.bib"], ["arXiv:2004.07180"], ["doi:10.1/x", "paper.pdf"]):
        result = CliRunner().invoke(app, ["ingest", *args, "--server", "http://127.0.0.1:9"])
        said = result.stdout + result.stderr
        assert result.exit_code == 1 and "cannot go through --server" in said, said
        assert "cannot reach" not in said  # refused here, not after trying the server
    nothing = CliRunner().invoke(app, ["ingest"])
    assert nothing.exit_code == 1 and "name files, folders" in nothing.stdout + nothing.stderr
