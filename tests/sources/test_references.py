"""Reference lists read as entries (sources/references.py), on real papers and on synthetic text, and matched to
held papers.

Entry counts below were checked against the PDFs' own text (PyMuPDF page.get_text()): the last label of numbered
lists, and for author-year lists the lines that start at the column's left edge (hanging indent) on the reference
pages.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from paperscope.parser import Paper, Paragraph, Section, SectionCategory
from paperscope.sources.references import (
    MAX_ENTRIES,
    MAX_ENTRY_CHARS,
    HeldPaper,
    Reference,
    ReferenceMatcher,
    match_reference,
    parse_references,
)

PAPERS = Path("/work/shared/papers")
DEVSET = Path("/work/shared/devset/pdfs")

# file -> (entries verified in the PDF, label of the first entry)
COUNTS = {
    "arxiv2302.07302v1_citesee.pdf": (65, "[1]"),  # numbered [n], ACM
    "acl2020_specter_2020.acl-main.207.pdf": (57, ""),  # ACL author-year, runs into an appendix
    "plosone2018_wheat_metabolomics.pdf": (59, "1."),  # "1." Vancouver with DOIs, entries joined by the parser
    "molecular_explanations_perspective.pdf": (149, "(1)"),  # "(1)" ACS style
    "emnlp2020_dense_passage_retrieval.pdf": (48, ""),  # ACL author-year
    "peerjcs2017_vespa_selective_pressure.pdf": (24, ""),  # "Family IJ, ... 2016." author-year with DOIs
    "bmchsr2014_quality_improvement_malawi.pdf": (31, "1."),  # "1." BMC, the whole list in a few paragraphs
}


def _path(name: str) -> Path:
    return PAPERS / name if (PAPERS / name).exists() else DEVSET / name


@pytest.fixture(scope="module")
def parsed() -> dict[str, Paper]:
    if not PAPERS.is_dir() or not DEVSET.is_dir():
        pytest.skip("the shared papers are not on this machine")
    from paperscope.parser import parse_pdf

    return {name: parse_pdf(_path(name)) for name in COUNTS}


@pytest.fixture(scope="module")
def refs(parsed: dict[str, Paper]) -> dict[str, list[Reference]]:
    return {name: parse_references(paper) for name, paper in parsed.items()}


def _by_title(parsed: dict[str, Paper], prefix: str) -> Paper:
    return next(p for p in parsed.values() if p.title.startswith(prefix))


# --- real papers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COUNTS))
def test_entry_counts_on_real_papers(refs: dict[str, list[Reference]], name: str) -> None:
    expected, first_label = COUNTS[name]
    entries = refs[name]
    assert abs(len(entries) - expected) <= 2, (name, len(entries))
    assert entries[0].label == first_label
    assert [r.n for r in entries] == list(range(1, len(entries) + 1))
    assert all(r.text and len(r.text) <= MAX_ENTRY_CHARS for r in entries)
    # Nearly every entry of these lists prints a year; a badly cut list loses them.
    assert sum(r.year is not None for r in entries) >= 0.9 * len(entries)


def test_citesee_cites_specter_and_nothing_else_matches_it(parsed: dict[str, Paper]) -> None:
    citesee = _by_title(parsed, "CiteSee")
    specter = _by_title(parsed, "SPECTER")
    held = HeldPaper(
        doc_id="specter", title=specter.title, doi=specter.doi, arxiv_id=specter.arxiv_id, year=specter.year
    )
    entries = parse_references(citesee)
    matched = [r for r in entries if match_reference(r, [held]) == "specter"]
    assert len(matched) == 1
    assert matched[0].label == "[17]"
    assert "SPECTER" in matched[0].title
    # With the arXiv id gone the title alone carries it ("Citationinformed" as printed vs "Citation-informed").
    assert matched[0].arxiv_id == "2004.07180"
    assert match_reference(matched[0].model_copy(update={"arxiv_id": None}), [held]) == "specter"


def test_no_wrong_matches_across_real_papers(parsed: dict[str, Paper], refs: dict[str, list[Reference]]) -> None:
    held = [HeldPaper(doc_id=n, title=p.title, doi=p.doi, arxiv_id=p.arxiv_id, year=p.year) for n, p in parsed.items()]
    matcher = ReferenceMatcher(held)
    found = {(name, matcher.match(r)) for name, entries in refs.items() for r in entries if matcher.match(r)}
    # The only citation among these papers: CiteSee's [17] is SPECTER (a paper's own title never appears either).
    assert found == {("arxiv2302.07302v1_citesee.pdf", "acl2020_specter_2020.acl-main.207.pdf")}


def test_fields_of_real_entries(refs: dict[str, list[Reference]]) -> None:
    citesee = refs["arxiv2302.07302v1_citesee.pdf"]
    assert citesee[1].authors == ["Badam", "Liu", "Elmqvist"]
    assert citesee[1].year == 2019
    assert citesee[1].title.startswith("Elastic Documents: Coupling Text and Tables")
    assert citesee[9].arxiv_id == "2104.08809"  # "arXiv preprint arXiv:2104.08809 (2021)"

    specter = refs["acl2020_specter_2020.acl-main.207.pdf"]
    bert = next(r for r in specter if r.text.startswith("Jacob Devlin"))
    assert bert.authors == ["Devlin", "Chang", "Lee", "Toutanova"]
    assert bert.title.startswith("BERT: Pre-training of deep bidirectional transformers")
    assert any(r.arxiv_id == "1412.6980" for r in specter)  # "ArXiv, abs/1412.6980"

    plos = refs["plosone2018_wheat_metabolomics.pdf"]
    assert plos[57].doi == "10.1104/pp.010320"  # printed "https:// doi.org/10.1104/pp.010320 PMID: ..."
    assert plos[57].authors == ["Larkindale", "Knight"]
    assert plos[57].title.startswith("Protection against heat stress-induced oxidative damage")
    assert sum(r.doi is not None for r in plos) >= 15

    peerj = refs["peerjcs2017_vespa_selective_pressure.pdf"]
    assert all(r.doi for r in peerj)  # every entry prints "DOI 10...."
    assert peerj[0].doi == "10.1093/nar/gkw343"
    assert peerj[0].authors[:3] == ["Afgan", "Baker", "van den Beek"]

    dpr = refs["emnlp2020_dense_passage_retrieval.pdf"]
    assert sum(r.arxiv_id is not None for r in dpr) >= 8


# --- synthetic text ----------------------------------------------------------------------------------------------


def _paper(*sections: tuple[str, list[str]]) -> Paper:
    secs, paras = [], []
    for i, (title, texts) in enumerate(sections):
        secs.append(Section(id=i, title=title, level=0, category=SectionCategory.OTHER, page=1))
        paras += [Paragraph(text=t, page=1, page_end=1, section_id=i) for t in texts]
    return Paper(title="T", sections=secs, paragraphs=paras)


def test_numbered_brackets_ieee_quotes() -> None:
    paper = _paper(
        ("6 Conclusion", ["We conclude [1]."]),
        (
            "References",
            [
                "[1] D. Scharstein and R. Szeliski, “A taxonomy and evaluation of dense two-frame stereo "
                "correspondence algorithms,” International Journal of Computer Vision, vol. 47, pp. 7–42, 2002. "
                "[2] K.-J. Yoon and I.-S. Kweon, “Locally adaptive support-weight approach for visual correspondence "
                "search,” in CVPR, 2005.",
                "[3] J. Devlin, M. Chang, K. Lee, and K. Toutanova. BERT: Pre-training of deep bidirectional",
                "transformers for language understanding. arXiv preprint arXiv:1810.04805v2, 2018.",
            ],
        ),
        ("A Appendix", ["[4] This is not a reference, it is in the appendix (Smith, 2020)."]),
    )
    entries = parse_references(paper)
    assert [r.label for r in entries] == ["[1]", "[2]", "[3]"]
    assert entries[0].title == "A taxonomy and evaluation of dense two-frame stereo correspondence algorithms"
    assert entries[0].authors == ["Scharstein", "Szeliski"]
    assert entries[0].year == 2002
    assert entries[1].title.startswith("Locally adaptive support-weight")
    assert entries[2].text.endswith("arXiv preprint arXiv:1810.04805v2, 2018.")  # the two paragraphs joined
    assert entries[2].arxiv_id == "1810.04805"
    assert entries[2].title == "BERT: Pre-training of deep bidirectional transformers for language understanding"


def test_numbered_dot_vancouver_with_doi_and_heading_numbered() -> None:
    paper = _paper(
        (
            "7. REFERENCES",
            [
                "1. Zimmermann MB, Hurrell RF. Nutritional iron deficiency. Lancet 2007;370:511-20. "
                "doi: 10.1016/S0140-6736(07)61235-5. 2. Asseng S. Rising temperatures reduce global wheat "
                "production. Nat Clim Change. 2015; 5: 143–147. https://doi.org/10.1038/NCLIMATE2470.",
                "3. Old physics. Phys. Rev. D 74 (1999) [hep-th/9901001].",
            ],
        )
    )
    entries = parse_references(paper)
    assert [r.label for r in entries] == ["1.", "2.", "3."]
    assert entries[0].doi == "10.1016/s0140-6736(07)61235-5"  # brackets kept, the final period dropped
    assert entries[0].authors == ["Zimmermann", "Hurrell"]
    assert entries[0].title == "Nutritional iron deficiency"
    assert entries[1].doi == "10.1038/nclimate2470"
    assert entries[1].year == 2015
    assert entries[2].arxiv_id == "hep-th/9901001"


def test_author_year_joined_into_one_paragraph() -> None:
    text = (
        "Anant K. Agarwal, Ivan Zaitsev, and Thorsten Joachims. 2019. Estimating position bias without intrusive "
        "interventions. In WSDM. Léon Bottou. 2004. Stochastic learning. In Olivier Bousquet, Ulrike von Luxburg, "
        "and Gunnar Rätsch, editors, Advanced Lectures on Machine Learning, pages 146–168. Springer, Berlin. "
        "Olivier Chapelle and S. Sathiya Keerthi. 2010. Efficient algorithms for ranking with SVMs. Information "
        "Retrieval Journal. Bosch, J.M., Von Gadow, K., 1990. Regulating afforestation for water conservation. "
        "Suid-Afrikaanse Bosboutydskrif 153, 41–54. Abbeel, P. and Ng, A. Y. Apprenticeship learning via inverse "
        "reinforcement learning. In Proceedings of ICML, 2004. Bates DM, DebRoy S (2003). “Converting a Large R "
        "Package to S4 Classes.” In Proceedings of DSC 2003. Iz Beltagy, Kyle Lo, and Arman Cohan. 2019. SciB- "
        "ERT: A Pretrained Language Model for Scientific Text. In EMNLP. DOI 10.18653/v1/D19-1371."
    )
    entries = parse_references(_paper(("Bibliography", [text])))
    assert [r.label for r in entries] == [""] * 7
    assert [r.authors[0] for r in entries] == ["Agarwal", "Bottou", "Chapelle", "Bosch", "Abbeel", "Bates", "Beltagy"]
    assert entries[2].text.endswith("Information Retrieval Journal.")  # a journal name is not an entry start
    assert entries[3].authors == ["Bosch", "Von Gadow"]
    assert entries[3].year == 1990
    assert entries[3].title == "Regulating afforestation for water conservation"
    assert entries[4].authors == ["Abbeel", "Ng"]
    assert entries[4].title == "Apprenticeship learning via inverse reinforcement learning"
    assert entries[4].year == 2004
    assert entries[5].title == "Converting a Large R Package to S4 Classes"
    assert entries[6].doi == "10.18653/v1/d19-1371"


def test_no_reference_section_gives_nothing_and_inline_heading_is_found() -> None:
    assert parse_references(_paper(("Introduction", ["Text [1] and (Smith, 2020)."]))) == []
    inline = _paper(
        (
            "V. CONCLUSION",
            ["We conclude.", "REFERENCES [1] A. B. Author, “A title of some length,” in Proc. X, 2001. [2] C. Other, "],
        ),
    )
    more = "“Second title here,” J. Y, 2002. [3] D. Third, “Third title here,” 2003."
    inline.paragraphs.append(Paragraph(text=more, page=1, page_end=1, section_id=0))
    entries = parse_references(inline)
    assert [r.title for r in entries] == ["A title of some length", "Second title here", "Third title here"]


def test_entry_bounds() -> None:
    many = " ".join(f"[{i}] A. Author. Title number {i}. Journal, 2001." for i in range(1, MAX_ENTRIES + 50))
    long = "[1] A. Author. " + "word " * 2000
    assert len(parse_references(_paper(("References", [many])))) == MAX_ENTRIES
    entries = parse_references(_paper(("References", [long, "[2] B. Other. A title. 2001.", "[3] C. D. E. 2002."])))
    assert len(entries[0].text) <= MAX_ENTRY_CHARS


# --- matching ----------------------------------------------------------------------------------------------------


def _ref(text: str, **fields: object) -> Reference:
    base = {"n": 1, "label": "", "text": text, "title": "", "authors": [], "year": None, "doi": None, "arxiv_id": None}
    base.update(fields)
    return Reference.model_validate(base)


def test_match_by_doi_and_arxiv() -> None:
    held = [
        HeldPaper(doc_id="a", title="Something else entirely here", doi="https://doi.org/10.1145/3544548.3580847"),
        HeldPaper(doc_id="b", title="Another unrelated held paper", arxiv_id="arXiv:2004.07180v3"),
    ]
    assert match_reference(_ref("X. 2023. T. In CHI.", doi="10.1145/3544548.3580847"), held) == "a"
    assert match_reference(_ref("X. 2020. T. ArXiv abs/2004.07180.", arxiv_id="2004.07180"), held) == "b"
    assert match_reference(_ref("X. 2020. T.", doi="10.1145/9999999.0000000", arxiv_id="2101.00001"), held) is None


def test_title_inside_a_longer_title_does_not_match() -> None:
    short = HeldPaper(doc_id="short", title="Dense Passage Retrieval", year=2020)
    full = HeldPaper(doc_id="full", title="Dense Passage Retrieval for Open-Domain Question Answering", year=2020)
    ref = _ref(
        "Vladimir Karpukhin, Barlas Oguz, and Wen-tau Yih. 2020. Dense passage retrieval for open-domain question "
        "answering. In EMNLP.",
        title="Dense passage retrieval for open-domain question answering",
        year=2020,
    )
    assert match_reference(ref, [short]) is None
    assert match_reference(ref, [short, full]) == "full"
    # Nor inside a longer title at its end ("Towards ...").
    towards = _ref("A. B. 2021. Towards dense passage retrieval. In ACL.", title="Towards dense passage retrieval")
    assert match_reference(towards, [short]) is None


def test_title_match_folds_case_hyphens_and_accents_and_checks_the_year() -> None:
    held = HeldPaper(
        doc_id="specter",
        title="SPECTER: Document-level Representation Learning using Citation-informed Transformers",
        year=2020,
    )
    text = (
        "Arman Cohan and Iz Beltagy. 2020. Specter: document level representation learning using citation- informed "
        "transformers. In ACL."
    )
    assert match_reference(_ref(text, year=2020), [held]) == "specter"
    assert match_reference(_ref(text, year=2021), [held]) == "specter"  # one year apart: preprint vs proceedings
    assert match_reference(_ref(text, year=2016), [held]) is None
    accents = HeldPaper(doc_id="acc", title="Élan vital: a théorie of naïve things")
    assert match_reference(_ref("A. B. 2001. Elan vital: a theorie of naive things. Nature."), [accents]) == "acc"


def test_token_overlap_with_parsed_title() -> None:
    held = HeldPaper(doc_id="h", title="Learning Transferable Visual Models From Natural Language Supervision")
    # A typo breaks the contiguous run, the parsed title still nearly equals the held one.
    ref = _ref(
        "A. Radford. 2021. Learning transferable visual models form natural language supervision. In ICML.",
        title="Learning transferable visual models form natural language supervision",
    )
    assert match_reference(ref, [held]) == "h"


def test_generic_short_titles_never_match() -> None:
    held = [
        HeldPaper(doc_id="intro", title="Introduction"),
        HeldPaper(doc_id="dl", title="Deep learning"),
        HeldPaper(doc_id="supp", title="Supplementary Material"),
    ]
    ref = _ref(
        "Y. LeCun, Y. Bengio, and G. Hinton. Deep learning. Nature, 2015. Introduction. Supplementary Material.",
        title="Deep learning",
    )
    assert match_reference(ref, held) is None


def test_matcher_is_fast_for_a_large_library() -> None:
    held = [
        HeldPaper(doc_id=str(i), title=f"Study number {i} of graph neural networks for molecule property {i % 7}")
        for i in range(1000)
    ]
    held.append(
        HeldPaper(doc_id="target", title="Neural Machine Translation by Jointly Learning to Align and Translate")
    )
    refs = [
        _ref(f"A. Author{i}. 2019. Some other paper about topic {i}. In NeurIPS.", title=f"Some other paper {i}")
        for i in range(99)
    ]
    refs.append(_ref("D. Bahdanau. 2015. Neural machine translation by jointly learning to align and translate. ICLR."))
    start = time.perf_counter()
    matcher = ReferenceMatcher(held)
    results = [matcher.match(r) for r in refs]
    elapsed = time.perf_counter() - start
    assert results[-1] == "target"
    assert results[:-1] == [None] * 99
    assert elapsed < 1.0
