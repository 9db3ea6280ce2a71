"""The single-shot path on the sample corpus in a real Milvus Lite store, with and without a (scripted) model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from paperscope.agent.pipeline import Searcher
from paperscope.answer.extractive import HEADER, SUPPORT, strip_references
from paperscope.answer.model import Answer
from paperscope.answer.sentences import split_sentences
from paperscope.config import Settings
from paperscope.errors import ConfigError
from paperscope.rag.adapters import PaperscopeRetriever
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.filters import SearchFilter
from paperscope.rag.registry import names
from paperscope.rag.retrievers import make_retriever
from paperscope.rag.store import PaperStore, StoredChunk
from tests.scripted_model import ScriptedChatModel, final


@pytest.fixture(scope="module")
def searcher(sample_kb: PaperStore) -> Searcher:
    return Searcher(sample_kb)


def assert_sources_were_retrieved(searcher: Searcher, answer: Answer) -> None:
    """Every source is a chunk the store holds, and its text is that chunk's text (plus its window)."""
    for s in answer.sources:
        [chunk] = searcher.store.get_context_window(s.doc_id, s.chunk_index, 0)
        assert chunk.text in s.text
        lo, hi = s.chunk_range
        assert lo <= s.chunk_index <= hi
        assert s.citation == f"{s.doc_id}:{s.chunk_index}"


def assert_extracts_are_cited(answer: Answer) -> None:
    """Each extracted line quotes a sentence of the source its [n] names."""
    lines = answer.answer.splitlines()[1:]
    assert lines
    by_n = {s.n: s for s in answer.sources}
    for line in lines:
        if line == SUPPORT:
            continue
        m = re.fullmatch(r"- (.+) \[(\d+)\]", line)
        assert m, line
        # The paper's own reference numbers ("[12]") are stripped from what is quoted; "…" marks formula debris cut off.
        assert m.group(1).removesuffix(" …") in strip_references(" ".join(by_n[int(m.group(2))].text.split()))


def test_a_question_naming_a_paper_stays_inside_it(searcher: Searcher, sample_doc_ids: dict[str, str]) -> None:
    answer = searcher.answer("How many queries was FlashRank trained on?")
    assert answer.track == "A"
    assert answer.route.doc_ids[:1] == [sample_doc_ids["flashrank"]]
    assert answer.sources and {s.doc_id for s in answer.sources} == {sample_doc_ids["flashrank"]}
    assert answer.extractive and answer.answer.startswith(HEADER)
    # The count is in the abstract ("1.2 million queries") and in Section 3.1 ("1,200,000 queries").
    assert any("1.2 million queries" in s.text or "1,200,000 queries" in s.text for s in answer.sources)
    assert "1.2 million queries" in answer.answer or "1,200,000 queries" in answer.answer
    assert_extracts_are_cited(answer)
    assert_sources_were_retrieved(searcher, answer)
    assert set(answer.timings) >= {"route", "retrieve", "assemble", "generate", "total"}
    assert answer.models.embedding_model == "all-MiniLM-L6-v2" and answer.models.llm_model is None


def test_a_method_question_is_not_answered_from_related_work(
    searcher: Searcher, sample_doc_ids: dict[str, str]
) -> None:
    answer = searcher.answer("How does BlendIR compute its fusion weights?")
    assert answer.track == "A" and "METHOD" in answer.route.target_section_category
    assert {s.doc_id for s in answer.sources} == {sample_doc_ids["blendir"]}
    categories = {s.section_category for s in answer.sources}
    assert "RELATED_WORK" not in categories and "METHOD" in categories


def test_a_survey_question_draws_on_several_papers(searcher: Searcher) -> None:
    answer = searcher.answer("What methods improve the accuracy of retrieval-augmented generation?")
    assert answer.track == "B"
    assert len({s.doc_id for s in answer.sources}) >= 2
    per_paper = [s.doc_id for s in answer.sources]
    assert max(per_paper.count(d) for d in set(per_paper)) <= searcher.settings.retrieval.per_paper
    assert_extracts_are_cited(answer)
    assert_sources_were_retrieved(searcher, answer)


def test_chinese_cues_route_to_the_right_sections(searcher: Searcher, sample_doc_ids: dict[str, str]) -> None:
    answer = searcher.answer("QuantKV 的实验结果如何？")
    assert answer.track == "A" and answer.route.target_section_category == ["EVALUATION"]
    assert {s.doc_id for s in answer.sources} == {sample_doc_ids["quantkv"]}
    assert "EVALUATION" in {s.section_category for s in answer.sources}


def test_a_paper_that_is_not_there_is_said_to_be_missing(searcher: Searcher) -> None:
    answer = searcher.answer("What learning rate did the ResNet paper use?")
    assert answer.route.intent == "SPECIFIC_PAPER" and not answer.route.doc_ids
    assert answer.route.not_found == ["ResNet"]
    assert answer.track == "NONE" and not answer.supported
    assert answer.answer.startswith("No paper in the knowledge base matches ResNet")
    assert answer.sources  # the closest passages are still listed


def test_explicit_paper_and_sections_override_the_route(searcher: Searcher, sample_doc_ids: dict[str, str]) -> None:
    doc = sample_doc_ids["tokenprune"]
    hits = searcher.retrieve("what does it compress", doc_ids=[doc], categories=["EVALUATION"], k=4)
    assert 0 < len(hits) <= 4
    assert {h.doc_id for h in hits} == {doc} and {h.section_category.name for h in hits} == {"EVALUATION"}
    with pytest.raises(ValueError, match="invalid doc_id"):
        searcher.retrieve("anything", doc_ids=['x" or doc_id != "'])
    with pytest.raises(ValueError, match="unknown section category"):
        searcher.retrieve("anything", categories=["RESULTS_PLEASE"])


def test_a_follow_up_stays_on_the_paper(searcher: Searcher, sample_doc_ids: dict[str, str]) -> None:
    first = searcher.answer("What does ScholarNav do?")
    assert first.track == "A"
    follow = searcher.answer("What about its evaluation results?", history=[first])
    assert follow.track == "A" and {s.doc_id for s in follow.sources} == {sample_doc_ids["scholarnav"]}


def test_mmr_keeps_the_evidence_varied(searcher: Searcher) -> None:
    hits = searcher.retrieve("How does FlashRank distil a listwise teacher?", k=5)
    texts = [h.text for h in hits]
    assert len(set(texts)) == len(texts)
    assert len({h.chunk_index for h in hits}) == len(hits)


def test_llm_answers_cite_the_evidence_they_were_given(sample_kb: PaperStore, sample_doc_ids: dict[str, str]) -> None:
    model = ScriptedChatModel([final("FlashRank labels 1.2 million queries [1].")])
    searcher = Searcher(sample_kb, sample_kb.settings.with_overrides(llm={"use_for_routing": False}), model)
    answer = searcher.answer("How many queries was FlashRank trained on?")
    assert not answer.extractive and answer.answer == "FlashRank labels 1.2 million queries [1]."
    assert [s.n for s in answer.sources] == [1] and answer.sources[0].doc_id == sample_doc_ids["flashrank"]
    [[prompt]] = model.calls
    assert isinstance(prompt, HumanMessage)
    text = str(prompt.content)
    assert "[Paper: FlashRank" in text and "Evidence [1]" in text and "Context (Introduction):" in text
    assert "neighbouring text" in text and text.rstrip().endswith("Answer:")
    assert "Question: How many queries was FlashRank trained on?" in text


def test_an_llm_answer_without_citations_keeps_every_source(sample_kb: PaperStore) -> None:
    model = ScriptedChatModel([final("It used a lot of queries.")])
    settings = sample_kb.settings.with_overrides(llm={"use_for_routing": False})
    answer = Searcher(sample_kb, settings, chat_model=model).answer("How many queries was FlashRank trained on?")
    assert len(answer.sources) > 1 and any("cited none" in n for n in answer.notes)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (final("[1][2]"), "it wrote no answer"),
        (final(""), "it wrote no answer"),
        (final('<tool_call>{"name": "search", "arguments": {}}</tool_call>'), "a tool call instead of an answer"),
        (ValueError("endpoint exploded"), "ValueError: endpoint exploded"),
    ],
    ids=["citations-only", "empty", "tool-call", "model-raises"],
)
def test_a_model_that_gives_no_answer_gives_way_to_extracted_sentences(
    sample_kb: PaperStore, reply: object, reason: str
) -> None:
    settings = sample_kb.settings.with_overrides(llm={"use_for_routing": False})
    model = ScriptedChatModel([reply])  # type: ignore[list-item]
    answer = Searcher(sample_kb, settings, chat_model=model).answer("How many queries was FlashRank trained on?")
    assert answer.extractive and answer.mode == "single-shot" and answer.sources
    assert reason in (answer.llm_error or "") and answer.notes[-1].startswith("The model failed (")
    assert "Extracted from the retrieved papers (without the language model;" in answer.answer
    assert "<tool_call>" not in answer.answer


def test_an_empty_knowledge_base_says_so(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    with PaperStore.open(Settings(home=tmp_path), local_embedder) as store:
        answer = Searcher(store).answer("What is retrieval?")
    assert not answer.sources and not answer.supported and "knowledge base is empty" in answer.answer


@pytest.mark.parametrize("question", ["?!", "...", " — ", "？！", ""])
def test_a_question_without_words_is_refused(searcher: Searcher, question: str) -> None:
    with pytest.raises(ValueError, match=r"the question (has no words|is empty)"):
        searcher.answer(question)


# parent_document and raptor need a knowledge base built for them (parents, summary trees): they fail here.
@pytest.mark.parametrize(
    "name", [n for n in names("retriever") if n not in ("parent_document", "raptor", "raptor:tree")]
)
def test_each_retriever_honours_the_filter(sample_kb: PaperStore, sample_doc_ids: dict[str, str], name: str) -> None:
    doc = sample_doc_ids["hydra"]
    hits = make_retriever(name).search(sample_kb, "hypothetical documents", SearchFilter(doc_ids=[doc]), 3)
    assert len(hits) == 3 and all(isinstance(h, StoredChunk) and h.doc_id == doc for h in hits)


@pytest.mark.parametrize("spec", ["raptor", "raptor:tree:dense"])
def test_raptor_without_summary_trees_says_what_it_needs(sample_kb: PaperStore, spec: str) -> None:
    with pytest.raises(ConfigError, match=r"needs papers enriched with raptor \(`paperscope ingest --enrich raptor`\)"):
        make_retriever(spec).search(sample_kb, "hypothetical documents", None, 3)


def test_unknown_retriever() -> None:
    with pytest.raises(ConfigError, match="unknown retriever 'nope'"):
        make_retriever("nope")


def test_langchain_retriever_adapter(sample_kb: PaperStore, sample_doc_ids: dict[str, str]) -> None:
    retriever = PaperscopeRetriever(
        store=sample_kb, k=3, search_filter=SearchFilter(doc_ids=[sample_doc_ids["marten"]])
    )
    docs = retriever.invoke("How many tokens was Marten-1B pretrained on?")
    assert len(docs) == 3
    assert all(d.metadata["doc_id"] == sample_doc_ids["marten"] for d in docs)
    assert {"citation", "title", "chunk_index", "section_title", "section_category", "page_number"} <= set(
        docs[0].metadata
    )


def test_sentences_keep_decimals_and_abbreviations() -> None:
    text = "We use BM25 (e.g. Lucene) and reach 36.1 MRR on the dev set. As Fig. 3 shows, it wins by a margin."
    assert split_sentences(text) == [
        "We use BM25 (e.g. Lucene) and reach 36.1 MRR on the dev set.",
        "As Fig. 3 shows, it wins by a margin.",
    ]
