"""sources/bibtex.py: .bib files as Zotero, Better BibTeX, JabRef and Mendeley write them, read into LibraryItems;
BibTeX written for papers and read back by bibtexparser."""

from __future__ import annotations

import random
from pathlib import Path

import bibtexparser
import pymupdf
import pytest
from bibtexparser.middlewares import LatexDecodingMiddleware, SeparateCoAuthors, SplitNameParts

from paperscope.errors import SourceError
from paperscope.sources import bibtex
from paperscope.sources.bibtex import BibLibrary, read_bibtex, write_bibtex
from paperscope.sources.models import LibraryItem, PaperMeta


def make_pdf(path: Path, text: str = "A paper") -> Path:
    """A small real PDF at path (folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    doc.save(path)
    doc.close()
    return path


def write_bib(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def by_key(library: BibLibrary) -> dict[str, LibraryItem]:
    return {item.meta.citation_key: item for item in library.items}


# --- the file field as each tool writes it ---------------------------------------------------------------------


def test_zotero_export_takes_the_first_pdf_of_its_attachments(tmp_path: Path) -> None:
    storage = tmp_path / "home" / "Zotero" / "storage"
    pdf = make_pdf(storage / "ABCD1234" / "Vaswani et al. - 2017 - Attention is all you need.pdf")
    second = make_pdf(storage / "EFGH5678" / "supplement.pdf")
    snapshot = storage / "WXYZ0000" / "arxiv.html"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_text("<html></html>")
    # Zotero's BibTeX export: Title:path:mime-type, joined by ";" (the snapshot first, so order matters).
    attachments = ";".join(
        [
            f"arXiv.org Snapshot:{snapshot}:text/html",
            f"Full Text PDF:{pdf}:application/pdf",
            f"Supplement:{second}:application/pdf",
        ]
    )
    bib = write_bib(
        tmp_path / "export" / "My Library.bib",
        f"""
@misc{{vaswani_attention_2017,
\ttitle = {{Attention {{Is}} {{All}} {{You}} {{Need}}}},
\turl = {{http://arxiv.org/abs/1706.03762}},
\tdoi = {{10.48550/arXiv.1706.03762}},
\turldate = {{2024-01-02}},
\tpublisher = {{arXiv}},
\tauthor = {{Vaswani, Ashish and Shazeer, Noam and Parmar, Niki}},
\tmonth = dec,
\tyear = {{2017}},
\tnote = {{arXiv:1706.03762 [cs]}},
\tkeywords = {{Computer Science - Computation and Language, Computer Science - Machine Learning}},
\tfile = {{{attachments}}},
}}
""",
    )
    library = read_bibtex(bib)
    assert library.failed_blocks == []
    assert library.without_pdf == 0
    [item] = library.items
    assert item.pdf == pdf.resolve()
    assert item.problem == ""
    meta = item.meta
    assert meta.title == "Attention Is All You Need"
    assert meta.authors == ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"]
    assert meta.year == 2017
    assert meta.venue == "arXiv"  # Zotero writes an arXiv preprint as @misc with publisher = {arXiv}
    assert meta.doi == "10.48550/arxiv.1706.03762"
    assert meta.arxiv_id == "1706.03762"
    assert meta.url == "http://arxiv.org/abs/1706.03762"
    assert meta.citation_key == "vaswani_attention_2017"
    assert meta.tags == ["Computer Science - Computation and Language", "Computer Science - Machine Learning"]
    assert meta.origin == "bibtex"
    assert meta.library == str(bib.resolve())


def test_zotero_escapes_in_windows_paths_are_undone(tmp_path: Path) -> None:
    # Zotero escapes \ : ; $ in a path with a backslash; the PDF is not on this machine, so the problem names it.
    bib = write_bib(
        tmp_path / "lib.bib",
        r"""@article{win2020,
  title = {On Windows},
  file = {Full Text PDF:C\:\\Users\\Ann\\Zotero\\storage\\AB12CD34\\a\;b.pdf:application/pdf},
}

@article{winbare,
  title = {A bare Windows path, its colon unescaped},
  file = {D:\Papers\Lee2015.pdf},
}
""",
    )
    items = by_key(read_bibtex(bib))
    assert items["win2020"].pdf is None
    assert items["win2020"].problem.startswith("win2020:")
    assert r"C:\Users\Ann\Zotero\storage\AB12CD34\a;b.pdf" in items["win2020"].problem
    assert items["winbare"].pdf is None
    assert r"D:\Papers\Lee2015.pdf" in items["winbare"].problem


def test_better_bibtex_escaped_colon_and_semicolon_and_plain_paths(tmp_path: Path) -> None:
    storage = tmp_path / "Zotero" / "storage"
    odd = make_pdf(storage / "K1" / "Smith; Jones - 2020 - A: study.pdf")
    plain = make_pdf(storage / "K2" / "plain.pdf")
    escaped_odd = str(odd).replace(":", r"\:").replace(";", r"\;")
    bib = write_bib(
        tmp_path / "bbt.bib",
        f"""@article{{smithStudy2020,
  title = {{A: Study}},
  author = {{Smith, Ann and Jones, Bob}},
  date = {{2020-05-04}},
  journaltitle = {{Journal of Studies}},
  file = {{Full Text:{escaped_odd}:application/pdf}},
}}

@online{{plainPaper2021,
  title = {{Plain}},
  date = {{2021}},
  eprinttype = {{arxiv}},
  eprint = {{2101.00001v3}},
  file = {{{plain}}},
}}
""",
    )
    items = by_key(read_bibtex(bib))
    assert items["smithStudy2020"].pdf == odd.resolve()
    assert items["smithStudy2020"].meta.year == 2020  # from biblatex's date
    assert items["smithStudy2020"].meta.venue == "Journal of Studies"  # journaltitle
    assert items["plainPaper2021"].pdf == plain.resolve()
    assert items["plainPaper2021"].meta.arxiv_id == "2101.00001"  # version dropped
    assert items["plainPaper2021"].meta.venue == "arXiv"  # eprinttype = arxiv


def test_jabref_paths_relative_to_the_bib_folder(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "papers" / "Doe2019.pdf")
    bib = write_bib(
        tmp_path / "refs.bib",
        """% Encoding: UTF-8

@Article{Doe2019,
  author    = {Doe, Jane},
  title     = {Relative Paths},
  journal   = {J. Rel.},
  year      = {2019},
  file      = {:papers/Doe2019.pdf:PDF},
  groups    = {Thesis, Chapter 2},
}

@Comment{jabref-meta: databaseType:bibtex;}
""",
    )
    [item] = read_bibtex(bib).items
    assert item.pdf == pdf.resolve()
    assert item.meta.collections == ["Thesis", "Chapter 2"]


def test_jabref_file_directory_comment(tmp_path: Path) -> None:
    # The PDF lies only in the folder the fileDirectory comment names, not beside the .bib.
    pdf = make_pdf(tmp_path / "library" / "sub" / "Roe2018.pdf")
    bib = write_bib(
        tmp_path / "refs.bib",
        """@Article{Roe2018,
  author = {Roe, Richard},
  title  = {Stored Elsewhere},
  year   = {2018},
  file   = {Main text:sub/Roe2018.pdf:PDF},
}

@Comment{jabref-meta: databaseType:bibtex;}

@Comment{jabref-meta: fileDirectory:library;}
""",
    )
    [item] = read_bibtex(bib).items
    assert item.pdf == pdf.resolve()


def test_jabref_user_specific_file_directory(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "mine" / "Poe2017.pdf")
    bib = write_bib(
        tmp_path / "bib" / "refs.bib",
        f"""@Article{{Poe2017,
  title = {{User Directory}},
  file  = {{:Poe2017.pdf:PDF}},
}}

@Comment{{jabref-meta: fileDirectory-ann-laptop:{tmp_path / "mine"};}}
""",
    )
    [item] = read_bibtex(bib).items
    assert item.pdf == pdf.resolve()


def test_mendeley_windows_form_and_lost_leading_slash(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "Mendeley Desktop" / "Lee_2015_Deep learning.pdf")
    lost_slash = str(pdf.parent)[1:]  # Mendeley writes "home/u/..." for "/home/u/..."
    bib = write_bib(
        tmp_path / "mendeley.bib",
        f"""@article{{Lee2015,
author = {{Lee, Kim}},
title = {{{{Deep learning}}}},
year = {{2015}},
file = {{:{lost_slash}/Lee{{\\_}}2015{{\\_}}Deep learning.pdf:pdf}},
}}
@article{{Yu2009,
author = {{Yu, Hengyong}},
title = {{{{On Windows}}}},
file = {{:C$\\backslash$:/Users/z002/Desktop/supplemental.pdf:pdf}},
}}
""",
    )
    items = by_key(read_bibtex(bib))
    assert items["Lee2015"].pdf == pdf.resolve()
    assert items["Lee2015"].meta.title == "Deep learning"
    assert items["Yu2009"].pdf is None
    assert "C:/Users/z002/Desktop/supplemental.pdf" in items["Yu2009"].problem


def test_bare_path_pdf_field_and_local_url(tmp_path: Path) -> None:
    bare = make_pdf(tmp_path / "pdfs" / "bare.pdf")
    in_pdf_field = make_pdf(tmp_path / "pdfs" / "field.pdf")
    bibdesk = make_pdf(tmp_path / "pdfs" / "bib desk.pdf")
    bib = write_bib(
        tmp_path / "misc.bib",
        f"""@article{{bare, title = {{Bare}}, file = {{pdfs/bare.pdf}}}}
@article{{pdffield, title = {{Field}}, pdf = {{{in_pdf_field}}}}}
@article{{localurl, title = {{BibDesk}}, local-url = {{file://localhost{str(bibdesk).replace(" ", "%20")}}}}}
""",
    )
    items = by_key(read_bibtex(bib))
    assert items["bare"].pdf == bare.resolve()
    assert items["pdffield"].pdf == in_pdf_field.resolve()
    assert items["localurl"].pdf == bibdesk.resolve()


def test_pdf_recognised_by_type_or_upper_case_suffix(tmp_path: Path) -> None:
    upper = make_pdf(tmp_path / "UPPER.PDF")
    typed = make_pdf(tmp_path / "noext")
    bib = write_bib(
        tmp_path / "t.bib",
        f"""@article{{upper, file = {{Text:{upper}:}}}}
@article{{typed, file = {{Text:{typed}:application/pdf}}}}
@article{{notpdf, file = {{Text:{tmp_path / "page.html"}:text/html}}}}
""",
    )
    library = read_bibtex(bib)
    items = by_key(library)
    assert items["upper"].pdf == upper.resolve()
    assert items["typed"].pdf == typed.resolve()
    assert "notpdf" not in items
    assert library.without_pdf == 1


# --- metadata --------------------------------------------------------------------------------------------------


def test_metadata_fields(tmp_path: Path) -> None:
    make_pdf(tmp_path / "a.pdf")
    bib = write_bib(
        tmp_path / "meta.bib",
        r"""@string{naacl = {Proceedings of NAACL}}

@inproceedings{devlin-etal-2019-bert,
  title = "{BERT}: Pre-training of Deep Bidirectional Transformers",
  author = {Devlin, Jacob and M{\"u}ller, J{\"o}rg and van der Berg, Jan and Ming-Wei Chang and {OpenAI} and others},
  booktitle = naacl,
  year = 2019,
  doi = {https://doi.org/10.18653/V1/N19-1423},
  url = {https://aclanthology.org/N19-1423},
  keywords = {nlp; transformers, pre-training},
  file = {:a.pdf:PDF},
}

@article{arxivOnly,
  title = {Something on arXiv},
  author = {Le, Quoc},
  journal = {arXiv preprint arXiv:1901.00001},
  url = {https://arxiv.org/abs/1901.00002v2},
  year = {2019},
  file = {:a.pdf:PDF},
}

@misc{eprint,
  title = {Old Style},
  eprint = {hep-th/9901001v1},
  archiveprefix = {arXiv},
  file = {:a.pdf:PDF},
}

@misc{bydoi,
  title = {By DOI},
  doi = {doi:10.48550/arXiv.2004.07180v4},
  file = {:a.pdf:PDF},
}
""",
    )
    items = by_key(read_bibtex(bib))
    bert = items["devlin-etal-2019-bert"].meta
    assert bert.title == "BERT: Pre-training of Deep Bidirectional Transformers"
    assert bert.authors == ["Jacob Devlin", "Jörg Müller", "Jan van der Berg", "Ming-Wei Chang", "OpenAI"]
    assert bert.year == 2019
    assert bert.venue == "Proceedings of NAACL"  # booktitle, through a @string
    assert bert.doi == "10.18653/v1/n19-1423"
    assert bert.arxiv_id is None
    assert bert.url == "https://aclanthology.org/N19-1423"
    assert bert.tags == ["nlp", "transformers", "pre-training"]
    assert bert.collections == []
    assert items["arxivOnly"].meta.arxiv_id == "1901.00002"  # the URL's id wins over the journal's text
    assert items["arxivOnly"].meta.venue == "arXiv preprint arXiv:1901.00001"
    assert items["eprint"].meta.arxiv_id == "hep-th/9901001"
    assert items["eprint"].meta.venue == "arXiv"
    assert items["bydoi"].meta.doi == "10.48550/arxiv.2004.07180v4"
    assert items["bydoi"].meta.arxiv_id == "2004.07180"


def test_legacy_encoding_named_by_jabref_header(tmp_path: Path) -> None:
    make_pdf(tmp_path / "a.pdf")
    bib = tmp_path / "latin.bib"
    bib.write_bytes(
        "% Encoding: ISO-8859-1\n@article{x, author = {Müller, Jörg}, file = {:a.pdf:PDF}}\n".encode("latin-1")
    )
    [item] = read_bibtex(bib).items
    assert item.meta.authors == ["Jörg Müller"]


# --- what cannot be read ---------------------------------------------------------------------------------------


def test_entries_without_pdf_counted_and_missing_pdf_named(tmp_path: Path) -> None:
    present = make_pdf(tmp_path / "present.pdf")
    bib = write_bib(
        tmp_path / "mixed.bib",
        f"""@article{{nofile, title = {{No File}}}}
@article{{onlyhtml, title = {{Snapshot}}, file = {{Snapshot:{tmp_path / "x.html"}:text/html}}}}
@article{{present, title = {{Present}}, file = {{:{present}:PDF}}}}
@article{{gone, title = {{Gone}}, file = {{:papers/gone.pdf:PDF}}}}
""",
    )
    library = read_bibtex(bib)
    assert library.without_pdf == 2
    items = by_key(library)
    assert set(items) == {"present", "gone"}
    assert items["present"].pdf == present.resolve()
    gone = items["gone"]
    assert gone.pdf is None
    assert gone.meta.title == "Gone"
    assert "gone" in gone.problem and str(tmp_path / "papers" / "gone.pdf") in gone.problem
    assert "\n" not in gone.problem


def test_broken_entry_reported_by_line_others_read(tmp_path: Path) -> None:
    make_pdf(tmp_path / "a.pdf")
    text = """@article{first, title = {First}, file = {:a.pdf:PDF}}

@article{broken,
  title = {Never closed,
  author = {Nobody}

@article{second, title = {Second}, file = {:a.pdf:PDF}}

@article{first, title = {Duplicate}, file = {:a.pdf:PDF}}
"""
    bib = write_bib(tmp_path / "broken.bib", text)
    library = read_bibtex(bib)
    assert set(by_key(library)) == {"first", "second"}
    assert by_key(library)["first"].meta.title == "First"
    broken_line = text.splitlines().index("@article{broken,") + 1
    duplicate_line = text.splitlines().index("@article{first, title = {Duplicate}, file = {:a.pdf:PDF}}") + 1
    assert len(library.failed_blocks) == 2
    assert library.failed_blocks[0].startswith(f"line {broken_line}: @article{{broken}}")
    assert library.failed_blocks[1].startswith(f"line {duplicate_line}: @article{{first}}")
    assert "duplicate" in library.failed_blocks[1]
    assert all("\n" not in message for message in library.failed_blocks)


def test_missing_bib_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.bib"
    with pytest.raises(SourceError) as caught:
        read_bibtex(missing)
    message = str(caught.value)
    assert str(missing) in message and "\n" not in message
    assert isinstance(caught.value.__cause__, OSError)


def test_binary_file_is_not_text(tmp_path: Path) -> None:
    binary = tmp_path / "library.bib"
    binary.write_bytes(random.Random(7).randbytes(4096))
    with pytest.raises(SourceError) as caught:
        read_bibtex(binary)
    message = str(caught.value)
    assert str(binary) in message and "not text" in message and "\n" not in message
    assert caught.value.__cause__ is not None


def test_too_large_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit lowered so the test need not write 50 MB; the check is the same.
    monkeypatch.setattr(bibtex, "MAX_BIB_BYTES", 1000)
    big = write_bib(tmp_path / "big.bib", "@misc{x, title = {x}}\n" * 100)
    with pytest.raises(SourceError) as caught:
        read_bibtex(big)
    assert str(big) in str(caught.value) and "too large" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_size_limit_is_50_mb() -> None:
    assert bibtex.MAX_BIB_BYTES == 50 * 1024 * 1024


# --- writing ---------------------------------------------------------------------------------------------------


def parse_back(text: str) -> bibtexparser.Library:
    """The text as bibtexparser reads it: LaTeX decoded, then authors split into name parts."""
    library = bibtexparser.parse_string(
        text, append_middleware=[LatexDecodingMiddleware(), SeparateCoAuthors(), SplitNameParts()]
    )
    assert library.failed_blocks == []
    return library


def test_write_bibtex_round_trip_of_keys_titles_authors() -> None:
    papers = [
        PaperMeta(
            title="Tables & Chairs: 50% of {Sets} with x_1 cost $5 -- or more",
            authors=["Hans Müller", "Seán O'Neil", "Ludwig van Beethoven", "Martin Luther King Jr.", "OpenAI"],
            year=2021,
            venue="Journal of Furniture",
            doi="10.1000/a_b",
            citation_key="muller2021tables",
        ),
        PaperMeta(
            title="Naïve Bayes in Zürich: a Study",
            authors=["Zoë Çelik", "Łukasz Kaiser"],
            year=2019,
            venue="Proceedings of the 36th International Conference on Machine Learning",
        ),
        PaperMeta(title="Attention Is All You Need", authors=["Ashish Vaswani"], year=2017, arxiv_id="1706.03762"),
        PaperMeta(title="Attention Is All You Need", authors=["Ashish Vaswani"], year=2017, url="https://x.org/a"),
        PaperMeta(title="Untitled Note"),
    ]
    text = write_bibtex(papers)
    library = parse_back(text)
    entries = library.entries
    assert len(entries) == len(papers)
    keys = [e.key for e in entries]
    assert keys[0] == "muller2021tables"
    assert keys[2] == "vaswani2017attention"
    assert len({k.lower() for k in keys}) == len(keys)
    for paper, entry in zip(papers, entries, strict=True):
        assert entry["title"] == paper.title
        authors = [n.merge_first_name_first for n in entry["author"]] if "author" in entry else []
        assert authors == paper.authors
    assert [e.entry_type for e in entries] == ["article", "inproceedings", "misc", "misc", "misc"]
    assert entries[0]["journal"] == "Journal of Furniture"
    assert entries[1]["booktitle"].startswith("Proceedings of the 36th")
    assert entries[2]["eprint"] == "1706.03762" and entries[2]["archiveprefix"] == "arXiv"
    assert entries[0]["doi"] == "10.1000/a_b" and entries[0]["year"] == "2021"


def test_written_bibtex_read_back_by_read_bibtex(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "a.pdf")
    papers = [
        PaperMeta(
            title="{BERT} & Friends: 100% Pre-training",
            authors=["Jörg Müller", "Anne O'Neil"],
            year=2019,
            venue="Transactions of the ACL",
            doi="10.1162/tacl_a_00001",
            url="https://example.org/a_b?x=1&y=2",
        ),
        PaperMeta(title="On arXiv", authors=["Quoc Le"], year=2020, venue="arXiv", arxiv_id="2001.00001"),
    ]
    text = write_bibtex(papers).replace("\n}", f",\n  file = {{:{pdf}:PDF}}\n}}")
    items = read_bibtex(write_bib(tmp_path / "out.bib", text)).items
    assert len(items) == 2
    for paper, item in zip(papers, items, strict=True):
        meta = item.meta
        assert (meta.title, meta.authors, meta.year, meta.venue) == (
            paper.title,
            paper.authors,
            paper.year,
            paper.venue,
        )
        assert (meta.doi, meta.arxiv_id, meta.url) == (paper.doi, paper.arxiv_id, paper.url)


def test_generated_keys_are_unique_ascii_lowercase() -> None:
    papers = [
        PaperMeta(title="The Attention Mechanism", authors=["Ashish Vaswani"], year=2017),
        PaperMeta(title="Attention, again", authors=["Ashish Vaswani"], year=2017),
        PaperMeta(title="Attention thrice", authors=["Ashish Vaswani"], year=2017),
        PaperMeta(title="Über Graphen", authors=["Paul Erdős"], year=1959),
        # A paper whose own key equals a key that would be generated keeps it; the generated one moves aside.
        PaperMeta(title="Claimed", citation_key="vaswani2017attention"),
        PaperMeta(title="Repeated own key", citation_key="vaswani2017attention"),
    ]
    keys = [e.key for e in parse_back(write_bibtex(papers)).entries]
    assert keys == [
        "vaswani2017attentiona",
        "vaswani2017attentionb",
        "vaswani2017attentionc",
        "erdos1959uber",
        "vaswani2017attention",
        "vaswani2017attentiond",
    ]
    assert all(k.isascii() and k == k.lower() for k in keys)
