"""The parser on real published PDFs (../shared/papers): title, main headings, clean text."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperscope.parser import Paper, SectionCategory, parse_pdf
from paperscope.rag.chunking import chunk_paper
from paperscope.rag.tokens import local_token_counter

Cat = SectionCategory

# file -> (title, [(heading, category)] that must be found, running header/footer text that must not leak)
CASES: dict[str, tuple[str, list[tuple[str, Cat]], str]] = {
    "osdi2004_mapreduce.pdf": (
        "MapReduce: Simplified Data Processing on Large Clusters",
        [
            ("Abstract", Cat.ABSTRACT),
            ("1 Introduction", Cat.INTRODUCTION),
            ("2 Programming Model", Cat.METHOD),
            ("3 Implementation", Cat.METHOD),
            ("5 Performance", Cat.EVALUATION),
            ("7 Related Work", Cat.RELATED_WORK),
            ("8 Conclusions", Cat.CONCLUSION),
            ("References", Cat.OTHER),
        ],
        "To appear in OSDI 2004",
    ),
    "acl2020_specter_2020.acl-main.207.pdf": (
        "SPECTER: Document-level Representation Learning using Citation-informed Transformers",
        [
            ("Abstract", Cat.ABSTRACT),
            ("1 Introduction", Cat.INTRODUCTION),
            ("2 Model", Cat.METHOD),
            ("2.3 Citation-Based Pretraining Objective", Cat.METHOD),
            ("4 Experiments", Cat.EVALUATION),
            ("5 Results", Cat.EVALUATION),
            ("7 Related Work", Cat.RELATED_WORK),
            ("8 Conclusions and Future Work", Cat.CONCLUSION),
        ],
        "Proceedings of the 58th Annual Meeting",
    ),
    "arxiv2501.10120v1_pasa.pdf": (
        "PaSa: An LLM Agent for Comprehensive Academic Paper Search",
        [
            ("Abstract", Cat.ABSTRACT),
            ("1 Introduction", Cat.INTRODUCTION),
            ("2 Related Work", Cat.RELATED_WORK),
            ("4 Methodology", Cat.METHOD),
            ("5 Experiments", Cat.EVALUATION),
            ("5.4 Ablation study", Cat.EVALUATION),
            ("6 Conclusion", Cat.CONCLUSION),
        ],
        "arXiv:2501.10120",
    ),
    "arxiv2302.07302v1_citesee.pdf": (
        "CiteSee: Augmenting Citations in Scientific Papers with Persistent and Personalized Historical Context",
        [
            ("1 INTRODUCTION", Cat.INTRODUCTION),
            ("2 RELATED WORK", Cat.RELATED_WORK),
            ("4 SYSTEM DESIGN", Cat.METHOD),
            ("8 CONCLUSION", Cat.CONCLUSION),
            ("REFERENCES", Cat.OTHER),
        ],
        "CHI '23, April 23",
    ),
    "arxiv2203.00130v1_paperplain.pdf": (
        "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers with Natural Language "
        "Processing",
        [
            ("1 INTRODUCTION", Cat.INTRODUCTION),
            ("2 BACKGROUND AND RELATED WORK", Cat.RELATED_WORK),
            ("7 RESULTS", Cat.EVALUATION),
            ("9 CONCLUSION", Cat.CONCLUSION),
        ],
        "Paper Plain: Making Medical Research Papers Approachable",
    ),
    "jpcs2188_012011_iop.pdf": (
        "SemEAGAT: A Novel Approach by Incorporating Semantic Dependency Graph in Event Detection",
        [
            ("1. Introduction", Cat.INTRODUCTION),
            ("2. Related work", Cat.RELATED_WORK),
            ("3. The proposed method", Cat.METHOD),
            ("4. Experiments", Cat.EVALUATION),
            ("5. Conclusion", Cat.CONCLUSION),
        ],
        "Journal of Physics: Conference Series",
    ),
    "molecular_explanations_perspective.pdf": (
        "A Perspective on Explanations of Molecular Prediction Models",
        [("Abstract", Cat.ABSTRACT), ("Introduction", Cat.INTRODUCTION), ("Discussion", Cat.CONCLUSION)],
        "",
    ),
    "plosone2018_wheat_metabolomics.pdf": (
        "Comparative physiological and metabolomics analysis of wheat (Triticum aestivum L.) following "
        "post-anthesis heat stress",
        [
            ("Abstract", Cat.ABSTRACT),
            ("Introduction", Cat.INTRODUCTION),
            ("Materials and methods", Cat.METHOD),
            ("Results", Cat.EVALUATION),
            ("Discussion", Cat.CONCLUSION),
            ("References", Cat.OTHER),
        ],
        "PLOS ONE | https://doi.org",
    ),
}


@pytest.fixture(scope="module")
def papers(shared_papers: Path) -> dict[str, Paper]:
    return {name: parse_pdf(shared_papers / name) for name in CASES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_title_and_headings(papers: dict[str, Paper], name: str) -> None:
    title, headings, _ = CASES[name]
    paper = papers[name]
    assert paper.title == title
    found = {(s.title, s.category) for s in paper.sections}
    missing = [h for h in headings if h not in found]
    assert not missing, f"{name}: missing or mis-categorised {missing}"
    assert paper.abstract, f"{name}: no abstract"


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_running_header_in_text(papers: dict[str, Paper], name: str) -> None:
    header = CASES[name][2]
    if not header:
        return
    leaked = [p.text[:80] for p in papers[name].paragraphs if header in p.text]
    assert not leaked, f"{name}: running header/footer in body text: {leaked[:2]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_chunk_index_continuity(papers: dict[str, Paper], name: str) -> None:
    chunks = chunk_paper(papers[name], local_token_counter())
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert len(chunks) > 20


def test_ligatures_normalised(papers: dict[str, Paper]) -> None:
    text = " ".join(p.text for p in papers["osdi2004_mapreduce.pdf"].paragraphs)
    assert "\ufb01" not in text
    assert "find the system easy to use" in text


def test_a_publishers_side_box_stays_out_of_the_abstract(papers: dict[str, Paper]) -> None:
    """PLOS ONE prints a box of citation, editor, dates and copyright down the left of page 1, beside the abstract:
    it is read as its own block, never woven line by line into the abstract."""
    abstract = papers["plosone2018_wheat_metabolomics.pdf"].abstract
    assert "relationships with different traits. The objective" in abstract
    for line in ("OPEN ACCESS", "Citation:", "Editor:", "Received:", "Copyright:", "PLoS ONE 13(6)"):
        assert line not in abstract, line


def test_a_side_box_continued_on_the_next_page_stays_out_of_the_text(papers: dict[str, Paper]) -> None:
    """The box's tail on page 2 (competing interests, in smaller type) is its own block, and the paragraph page 1
    began reads on into page 2 without it."""
    paragraphs = papers["plosone2018_wheat_metabolomics.pdf"].paragraphs
    text = next(p.text for p in paragraphs if "decline by 6%" in p.text)
    assert "increased temperatures on wheat yield and production have led to research" in text
    assert "Competing interests" not in text and "IROA" not in text
    box = [p.text for p in paragraphs if p.text.startswith("Competing interests:")]
    assert box == [
        "Competing interests: The authors have read the journal’s policy and have the following conflicts: Dr."
    ]


def test_degree_signs_read_as_printed(papers: dict[str, Paper]) -> None:
    # PLOS sets "0.08˚C" with a spacing ring before the C: a degree sign, not a ring over the C ("C̊").
    abstract = papers["plosone2018_wheat_metabolomics.pdf"].abstract
    assert "(35:28 ± 0.08°C)" in abstract and "\u030a" not in abstract


def test_the_authors_are_the_bylines_not_a_sidebar_beside_it(papers: dict[str, Paper]) -> None:
    # The PLOS box beside the abstract cites the paper as "Thomason K, Babar MA, ...": no authors of their own.
    assert papers["plosone2018_wheat_metabolomics.pdf"].authors == [
        "Kayla Thomason",
        "Md Ali Babar",
        "John E. Erickson",
        "Michael Mulvaney",
        "Chris Beecher",
        "Greg MacDonald",
    ]


def test_authors_printed_in_small_capitals_read_in_their_natural_case(papers: dict[str, Paper]) -> None:
    assert papers["arxiv2203.00130v1_paperplain.pdf"].authors[:2] == ["Tal August", "Lucy Lu Wang"]
