"""The engine, one door for every driver: the agent's tools, the single-shot plan and `paperscope retrieve` read the
same evidence, and every operator works from the command line on real (rendered) papers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paperscope.agent.labels import PaperLabels
from paperscope.agent.pipeline import Searcher
from paperscope.agent.tools import AgentTools, RunState
from paperscope.cli import app
from paperscope.rag.engine import Engine
from paperscope.rag.filters import SearchFilter
from paperscope.rag.registry import names
from paperscope.rag.store import PaperStore
from tests.rag.test_rerank import RerankServer, by_keyword, tiny_cross_encoder  # noqa: F401  (a fixture)

QUESTION = "How many queries was FlashRank trained on?"
RETRIEVERS = ["bm25", "dense", "hybrid", "hybrid:weighted", "ensemble:bm25=0.6,dense=0.4"]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, sample_kb: PaperStore) -> CliRunner:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    for name in ("OPENAI_BASE_URL", "PAPERSCOPE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def retrieve(cli: CliRunner, *args: str) -> dict[str, Any]:
    result = cli.invoke(app, ["retrieve", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_the_agents_search_the_single_shot_plan_and_retrieve_read_the_same_evidence(
    cli: CliRunner, sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    doc = sample_doc_ids["flashrank"]
    _, from_tool = AgentTools(Engine(sample_kb)).search_by_section(RunState(PaperLabels()), QUESTION, doc_id=doc, k=4)
    from_plan = [c.citation for c in Searcher(sample_kb).plan(QUESTION, doc_ids=[doc], k=4).chunks]
    from_cli = [h["citation"] for h in retrieve(cli, QUESTION, "--paper", doc[:8], "--k", "4")["hits"]]
    assert len(from_tool) == 4 and from_tool == from_plan == from_cli
    # The agent's search follows the single-shot policy: reference lists out, neighbours give way.
    assert len({int(c.split(":")[1]) // 2 for c in from_tool}) >= 3


def test_retrieve_json_has_hits_models_and_operators(cli: CliRunner, sample_doc_ids: dict[str, str]) -> None:
    data = retrieve(cli, QUESTION, "--k", "3")
    assert data["query"] == QUESTION and data["track"] == "A" and len(data["hits"]) == 3
    hit = data["hits"][0]
    assert set(hit) >= {"citation", "doc_id", "title", "chunk_index", "section_title", "section_category", "page"}
    assert hit["citation"] == f"{hit['doc_id']}:{hit['chunk_index']}" and hit["doc_id"] == sample_doc_ids["flashrank"]
    assert data["models"] == {
        "embedding_provider": "local",
        "embedding_model": "all-MiniLM-L6-v2",
        "llm_provider": None,
        "llm_model": None,
        "rerank_provider": None,
        "rerank_model": None,
        "retriever": "bm25",
    }
    ran = [(o["kind"], o["name"]) for o in data["operators"]]
    assert ran[:2] == [("transform", "glossary"), ("router", "rules")]
    assert ("retriever", "bm25") in ran and ("postprocessor", "references") in ran and ("postprocessor", "mmr") in ran
    assert all(o["seconds"] >= 0 for o in data["operators"])


@pytest.mark.parametrize("spec", RETRIEVERS)
def test_each_retriever_from_the_command_line(cli: CliRunner, sample_doc_ids: dict[str, str], spec: str) -> None:
    data = retrieve(cli, "distilling a listwise cross-encoder teacher into a small reranker", "--retriever", spec)
    assert data["models"]["retriever"] == ("hybrid:rrf" if spec == "hybrid" else spec)
    assert data["hits"] and data["hits"][0]["doc_id"] == sample_doc_ids["flashrank"]
    assert ("retriever", data["models"]["retriever"]) in [(o["kind"], o["name"]) for o in data["operators"]]


def test_a_bad_retriever_spec_is_one_line(cli: CliRunner) -> None:
    for spec, says in [
        ("bm52", "unknown retriever 'bm52'; did you mean 'bm25'?"),
        ("ensemble:bm25=x", "weight 'x' of 'bm25' is not a number"),
        ("hybrid:sum", "the fusion is 'rrf' or 'weighted'"),
    ]:
        result = cli.invoke(app, ["retrieve", QUESTION, "--retriever", spec])
        assert result.exit_code == 1 and says in result.stderr and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("name", names("retriever"))
def test_every_listed_retriever_runs_as_itself_or_says_what_it_needs(cli: CliRunner, name: str) -> None:
    listed = {
        o["name"]: o for o in json.loads(cli.invoke(app, ["operators", "--json"]).stdout) if o["kind"] == "retriever"
    }
    assert name in listed
    result = cli.invoke(app, ["retrieve", QUESTION, "--retriever", name, "--json"])
    if result.exit_code == 0:
        data = json.loads(result.stdout)
        assert data["models"]["retriever"].startswith(name) and data["hits"]
    else:  # one line, saying what it needs: what `operators` lists it as needing
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
        assert listed[name]["needs"] and any(w in result.stderr for w in ("parent", "raptor")), result.stderr


def test_parent_document_needs_a_parent_child_knowledge_base(cli: CliRunner) -> None:
    result = cli.invoke(app, ["retrieve", QUESTION, "--retriever", "parent_document"])
    assert result.exit_code == 1
    assert "has no parent chunks" in result.stderr and "--strategy parent_child" in result.stderr


def test_parent_document_returns_parents_with_the_children_that_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample_pdfs: dict[str, Path]
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    cli = CliRunner()
    made = cli.invoke(app, ["ingest", str(sample_pdfs["marten"]), "--kb", "pc", "--strategy", "parent_child"])
    assert made.exit_code == 0, made.stderr
    question = "How many GPUs were used to pretrain Marten-1B, and for how long?"
    children = retrieve(cli, question, "--kb", "pc")
    parents = retrieve(cli, question, "--kb", "pc", "--retriever", "parent_document")
    # The other retrievers search the children: parents are context, never hits of their own.
    assert all(h["kind"] == "chunk" and not h["matched"] for h in children["hits"])
    assert parents["models"]["retriever"] == "parent_document:bm25"
    top = parents["hits"][0]
    assert top["matched"] and all(m.startswith(top["doc_id"] + ":") for m in top["matched"])
    assert len(top["text"]) > max(len(h["text"]) for h in children["hits"])  # the parent's text
    assert "256" in " ".join(h["text"] for h in parents["hits"])


@pytest.fixture
def rerank_endpoint() -> Iterator[RerankServer]:
    with RerankServer(by_keyword) as server:
        yield server


def test_rerank_with_an_endpoint_orders_by_its_scores(cli: CliRunner, rerank_endpoint: RerankServer) -> None:
    data = retrieve(cli, QUESTION, "--k", "3", "--rerank", f"{rerank_endpoint.url}#tiny-reranker")
    # The model asked for is sent; the model reported is the one the reply says scored ("m").
    assert data["models"]["rerank_provider"] == "http" and data["models"]["rerank_model"] == "m"
    assert ("postprocessor", "rerank") in [(o["kind"], o["name"]) for o in data["operators"]]
    request = rerank_endpoint.requests[0]
    assert request["model"] == "tiny-reranker" and len(request["documents"]) >= 3
    assert all(0.0 <= h["score"] <= 1.0 + 1e-5 for h in data["hits"])  # the reranker's scores, scaled


def last_first(request: dict[str, Any]) -> tuple[int, bytes]:
    """A reranker that puts the documents in reverse order (the opposite of the retriever's), naming its model."""
    n = len(request["documents"])
    results = [{"index": i, "relevance_score": float(i)} for i in range(n)]
    return 200, json.dumps({"model": "bge-reranker-v2-m3", "results": results}).encode()


@pytest.mark.parametrize(
    ("question", "track"),
    [(QUESTION, "A"), ("Which papers distil a cross-encoder into a smaller ranking model?", "B")],
)
def test_a_rerankers_order_is_final(cli: CliRunner, question: str, track: str) -> None:
    """Whatever runs after the reranker keeps its order: the passages come out in the order of its scores, on one
    paper and across papers, and the postprocessors run in their declared order."""
    from paperscope.rag.passages import POSTPROCESSORS

    with RerankServer(last_first) as server:
        data = retrieve(cli, question, "--k", "4", "--rerank", server.url)
    assert data["track"] == track and len(data["hits"]) >= 2
    [request] = server.requests  # the fused pool is scored once
    sent = request["documents"]
    places = [next(i for i, doc in enumerate(sent) if h["text"] in doc) for h in data["hits"]]
    assert places == sorted(places, reverse=True), places  # best first by the reranker: the last sent first
    assert data["models"]["rerank_model"] == "bge-reranker-v2-m3"  # named by the endpoint's reply
    ran = [o["name"] for o in data["operators"] if o["kind"] == "postprocessor" and o["name"] in POSTPROCESSORS]
    assert ran == sorted(ran, key=POSTPROCESSORS.index) and "rerank" in ran
    assert "sections" not in ran and "mmr" not in ran  # they would reorder the reranker's ranking


def test_rerank_with_a_local_cross_encoder(cli: CliRunner, tiny_cross_encoder: Path) -> None:  # noqa: F811
    data = retrieve(cli, QUESTION, "--k", "2", "--rerank", f"cross-encoder:{tiny_cross_encoder}")
    assert data["models"]["rerank_provider"] == "cross-encoder" and len(data["hits"]) == 2


def test_rerank_spec_errors_are_one_line(cli: CliRunner, tmp_path: Path) -> None:
    for spec, says in [
        ("llm", "--rerank llm needs a chat model"),
        ("nonsense", "cross-encoder:"),
        (f"cross-encoder:{tmp_path / 'nowhere'}", "does not exist"),
    ]:
        result = cli.invoke(app, ["retrieve", QUESTION, "--rerank", spec])
        assert result.exit_code == 1 and says in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_operators_lists_every_kind_with_what_it_needs(cli: CliRunner) -> None:
    result = cli.invoke(app, ["operators", "--json"])
    assert result.exit_code == 0
    ops = {(o["kind"], o["name"]): o for o in json.loads(result.stdout)}
    for kind, name in [
        ("chunker", "recursive"),
        ("chunker", "semantic"),
        ("router", "rules"),
        ("retriever", "ensemble"),
        ("postprocessor", "rerank"),
        ("postprocessor", "window"),
    ]:
        assert (kind, name) in ops and ops[(kind, name)]["summary"]
    assert ops[("retriever", "parent_document")]["needs"] == ["parent_child knowledge base"]
    assert ops[("router", "llm")]["needs"] == ["llm"]


def test_a_scope_is_a_hard_limit_of_the_engine(sample_kb: PaperStore, sample_doc_ids: dict[str, str]) -> None:
    engine = Engine(sample_kb)
    doc = sample_doc_ids["tokenprune"]
    found = engine.search("what does it compress", SearchFilter(doc_ids=[doc], categories=["EVALUATION"]), 4)
    assert found.chunks and {(c.doc_id, c.section_category.name) for c in found.chunks} == {(doc, "EVALUATION")}
