"""Finding the paper and the passage on real papers (../shared/devset), single-shot, no LLM.

A few dev papers are ingested into a real Milvus Lite knowledge base; each class of question that used to fail
is pinned: a paper named by its short title, by a name it introduces, by its authors or by a description; an
answer in the abstract of a question whose words point at the method; surveys; Chinese questions about
English papers; papers that are not there; a paper without headings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from paperscope.agent.pipeline import Searcher
from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.ingest import ingest
from paperscope.rag.store import PaperStore

DEVSET = Path(__file__).resolve().parents[3] / "shared" / "devset"
PDFS = [
    "acl2007_sparse_information_extraction.pdf",  # REALM
    "acl2022_tableformer_table_text.pdf",  # TableFormer
    "emnlp2011_open_ie_relations.pdf",  # ReVerb, open IE (a survey partner of REALM)
    "emnlp2020_dense_passage_retrieval.pdf",  # DPR
    "frontiers2013_catch_trials_motor_memory.pdf",  # Focke et al., answer in the abstract
    "icml2011_noisy_matrix_decomposition.pdf",  # Agarwal, Negahban and Wainwright
    "jhydrol2005_flow_duration_afforestation.pdf",  # described, not named
    "osdi2006_bigtable.pdf",  # Bigtable
]


def _flat_pdf(path: Path) -> Path:
    """A paper in which nothing stands out as a heading: its text must stay findable."""
    doc = pymupdf.open()
    text = (
        "Abstract: We measure how quickly seagrass meadows recover after marine heatwaves along the Adriatic "
        "coast, surveying 42 transects over six years. "
    ) * 3
    body = "Recovery of the seagrass canopy took 31 months on average across the surveyed transects. " * 6
    page, y = doc.new_page(), 72.0
    for block in [text, *([body] * 6)]:
        y += 300 - page.insert_textbox(pymupdf.Rect(72, y, 523, y + 300), block, fontsize=10) + 9
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory, local_embedder: CachedEmbedder) -> Iterator[Searcher]:
    if not (DEVSET / "pdfs").is_dir():
        pytest.skip(f"the development set {DEVSET} is absent (it sits beside the repository)")
    home = tmp_path_factory.mktemp("dev-kb")
    settings = Settings(home=home)
    files = [DEVSET / "pdfs" / name for name in PDFS] + [_flat_pdf(home / "seagrass.pdf")]
    with PaperStore.open(settings, local_embedder) as store:
        report = ingest(files, settings, store)
        assert not report.failed, report.failed
        yield Searcher(store, settings)


def _title(answer_title: str) -> str:
    return re.sub(r"[^a-z]", "", answer_title.lower())[:30]


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("What limitations of TableFormer do its authors report?", "TableFormer"),  # short title
        ("By how much does REALM reduce extraction error compared with previous work?", "Sparse Information"),
        ("To which two robust-PCA settings do Agarwal, Negahban and Wainwright specialize their result?", "Noisy"),
        (
            "How many catchments were used in the study of how flow duration curves respond to afforestation?",
            "The response of flow duration",
        ),
        ("What share of ReVerb's extractions reach a precision of 0.8 or higher?", "Identifying Relations"),
    ],
)
def test_a_paper_is_found_by_what_people_call_it(searcher: Searcher, query: str, title: str) -> None:
    answer = searcher.answer(query)
    assert answer.track == "A", answer.notes
    assert answer.sources and all(_title(s.title).startswith(_title(title)) for s in answer.sources)


@pytest.mark.parametrize(
    ("query", "evidence"),
    [
        # "how many subjects" points at the method; the number is in the abstract
        ("How many subjects took part in Focke et al.'s study of catch trials?", "A total of 46 subjects"),
        ("By how much does REALM reduce extraction error?", "reduces extraction error by 39%"),
        ("How many catchments were used in the study of flow duration curves and afforestation?", "catchments"),
    ],
)
def test_the_abstract_competes_with_the_routed_sections(searcher: Searcher, query: str, evidence: str) -> None:
    answer = searcher.answer(query, k=5)
    assert any(evidence in " ".join(s.text.split()) for s in answer.sources), [s.section_title for s in answer.sources]


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("DPR（稠密段落检索）在 top-20 段落检索准确率上比 BM25 高出多少？", "Dense Passage Retrieval"),
        ("Bigtable 论文里，一个 tablet 默认有多大？", "Bigtable"),
        ("在 TableFormer 这篇论文中，作者报告了哪些局限？", "TableFormer"),
    ],
)
def test_chinese_questions_about_one_paper_stay_on_it(searcher: Searcher, query: str, title: str) -> None:
    answer = searcher.answer(query)
    assert answer.track == "A"
    assert _title(answer.sources[0].title).startswith(_title(title))


def test_a_survey_reaches_every_paper_on_the_topic(searcher: Searcher) -> None:
    answer = searcher.answer("Which papers tackle open information extraction, and how do they assess extractions?")
    assert answer.track == "B"
    titles = [s.title for s in answer.sources]
    assert any(t.startswith("Identifying Relations") for t in titles), titles
    assert any(t.startswith("Sparse Information") for t in titles), titles


@pytest.mark.parametrize(
    "query",
    [
        "What average GLUE score does the BERT paper by Devlin et al. report for BERT-Large?",  # a paper that uses BERT
        "In Google's Spanner paper, how does TrueTime bound clock uncertainty?",
        "What coral bleaching rates are reported in the paper on climate change and coral reef ecosystems?",
        "What top-5 error does the ResNet paper report on ImageNet?",
    ],
)
def test_a_paper_that_is_not_there_is_said_to_be_absent(searcher: Searcher, query: str) -> None:
    answer = searcher.answer(query)
    assert answer.track == "NONE" and not answer.supported
    assert answer.answer.startswith("No paper in the knowledge base")
    assert answer.sources  # the closest passages are still shown


def test_a_paper_without_headings_is_still_found(searcher: Searcher) -> None:
    answer = searcher.answer("How long did the seagrass canopy take to recover after marine heatwaves?")
    assert answer.sources and "seagrass" in answer.sources[0].text
    assert "31 months" in " ".join(s.text for s in answer.sources)


def test_reference_lists_are_not_evidence_unless_citations_are_asked_for(searcher: Searcher) -> None:
    """A cited title matches the question's words but says nothing of the paper that cites it."""
    plan = searcher.plan("What is known about data placement in Bubba?", k=5)
    assert plan.hits and not [h.section_title for h in plan.hits if h.section_title.lower() == "references"]
    cited = searcher.plan("Which paper cites the work on data placement in Bubba?", k=5)
    assert any(h.section_title.lower() == "references" and "Bubba" in h.text for h in cited.hits)
