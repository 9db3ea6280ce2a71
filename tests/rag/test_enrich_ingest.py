"""Enrichment end to end: the real OpenAI client against the scripted server, real Milvus Lite, real embeddings.

The scripted model answers each prompt with text carrying a marker word; it must reach what is indexed
(`index_text`) and never what answers quote (`text`) of the rows that stand for the paper's own words.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from paperscope.llm.client import make_chat_model
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.engine import Engine
from paperscope.rag.enrich import make_enricher
from paperscope.rag.filters import SearchFilter
from paperscope.rag.ingest import IngestReport, doc_id_for, file_sha256, ingest, plan_enrichment
from paperscope.rag.registry import names
from paperscope.rag.store import PaperStore
from tests.markdown_papers import markdown
from tests.openai_server import Drop, EmptyBody, Reply, ScriptedOpenAIServer, Text

MARK = "zqxmark"
ORIGINAL_ROWS = ("chunk", "question", "summary")  # rows whose text is the paper's own


def prompt_of(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def answer(request: dict[str, Any]) -> Reply:
    """A reply for each enrichment prompt, every one carrying the marker."""
    prompt = prompt_of(request)
    if "questions that this passage answers" in prompt:
        topic = "zebrafish" if "0.003" in prompt else "tuning"
        return Text(f"1. Which {MARK} {topic} setting does it use?\n2. How was the {MARK} model trained?\n3. Why?")
    if "descriptive header" in prompt:
        return Text(f"## {MARK} header of the passage")
    if "situate this passage" in prompt:
        return Text(f"Here is the context: {MARK} context of the passage in the paper.")
    if "previous summary" in prompt:
        return Text(f"{MARK} running summary of the passage.")
    if "Summarise one section" in prompt:
        return Text(f"{MARK} section summary words.")
    if "Summarise a research paper" in prompt:
        return Text(f"{MARK} whole paper summary about okapi herding.")
    if "related parts of this paper" in prompt:
        return Text(f"{MARK} raptor summary about narwhal migration.")
    return Text("unexpected prompt")


def paper_source(folder: Path, name: str, topic: str, n: int = 3) -> Path:
    """A small Markdown paper: an abstract and two sections of `n` paragraphs each."""
    para = [f"In experiment {i} we measured {topic} with {10 * i + 7} samples and a threshold of 0.{i}5. " * 4
            for i in range(2 * n)]  # fmt: skip
    if topic == "lamprey":  # a fact in the results, away from the abstract
        para[n + 1] = "The lamprey study used a learning rate of 0.003 over 40 epochs on eight accelerators. " * 3
    sections = [
        ("## Abstract", [f"We study {topic} and report what we measured about {topic}."]),
        ("## 1 Method", para[:n]),
        ("## 2 Results", para[n:]),
    ]
    path = folder / f"{name}.md"
    path.write_text(markdown(f"{topic.title()} Studies", 2024, sections))
    return path


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer([answer] * 2000) as s:
        yield s


def settings_for(home: Path, server: ScriptedOpenAIServer, strategies: list[str], **enrichment: Any) -> Settings:
    llm = {"model": "scripted-model", "base_url": server.base_url, "api_key": "test", "retries": 0, "timeout": 10}
    return Settings(home=home, llm=llm, enrichment={"strategies": strategies, **enrichment})


def run(paths: list[Path], settings: Settings, store: PaperStore, force: bool = False) -> IngestReport:
    enricher = make_enricher(make_chat_model(settings.llm), settings)
    assert enricher is not None
    plan = plan_enrichment(paths, settings, enricher, store.embedder, store, force=force)
    return ingest(paths, settings, store, force=force, enricher=enricher, plan=plan)


@pytest.mark.parametrize("strategy", names("enricher"))
def test_each_strategy_indexes_what_the_model_wrote_and_keeps_the_text(
    tmp_path: Path, server: ScriptedOpenAIServer, local_embedder: CachedEmbedder, strategy: str
) -> None:
    source = paper_source(tmp_path, "p", "lamprey")
    settings = settings_for(tmp_path / "home", server, [strategy])
    with PaperStore.open(settings, local_embedder) as store:
        report = run([source], settings, store)
        [done] = report.files
        assert done.status == "ingested" and done.enrichments == [strategy] and done.calls == len(server.requests) > 0
        [paper] = store.list_papers()
        assert paper.enrichments == [strategy] and paper.ready
        rows = store.get_chunks(paper.doc_id, kind=None)
        assert any(MARK in r.index_text for r in rows), strategy
        assert not any(MARK in r.text for r in rows if r.kind in ORIGINAL_ROWS)
        body = [r for r in rows if r.kind == "chunk"]
        assert [r.chunk_index for r in body] == list(range(paper.n_chunks))
        assert all(r.index_text.endswith(r.text) for r in body)  # the chunk's own text is still indexed
        asked = "What learning rate did the lamprey study use?"
        found = Engine(store, settings).retrieve(asked, SearchFilter(doc_ids=[paper.doc_id]))
        assert any("0.003" in h.text for h in found.hits) and {h.kind for h in found.hits} == {"chunk"}
        assert MARK not in " ".join(h.text for h in found.hits)


def test_a_repeated_or_forced_ingest_makes_no_model_call(
    tmp_path: Path, server: ScriptedOpenAIServer, local_embedder: CachedEmbedder
) -> None:
    source = paper_source(tmp_path, "p", "otters")
    settings = settings_for(tmp_path / "home", server, ["contextual", "questions", "raptor", "summaries"])
    with PaperStore.open(settings, local_embedder) as store:
        first = run([source], settings, store)
        asked = len(server.requests)
        assert first.files[0].calls == asked > 0
        assert first.cost is not None and first.cost.calls == asked and first.cost.cached == 0
        assert run([source], settings, store).files[0].status == "unchanged"
        forced = run([source], settings, store, force=True)
        assert forced.files[0].status == "ingested" and forced.files[0].calls == 0
        assert forced.cost is not None and (forced.cost.calls, forced.cost.cached) == (0, asked)
        assert len(server.requests) == asked  # nothing was asked again
        with_headers = settings_for(tmp_path / "home", server, ["contextual", "headers"])
        warned = run([source], with_headers, store).files[0]
        assert warned.status == "unchanged"
        assert "`ingest --force` indexes it with contextual, headers" in warned.warnings[0]
        assert run([source], with_headers, store, force=True).files[0].calls > 0  # new enrichments re-index
        assert store.list_papers()[0].enrichments == ["contextual", "headers"]


def junk(request: dict[str, Any]) -> Reply:
    """Replies a small model or a broken endpoint gives: empty, markup, preambles with no question."""
    prompt = prompt_of(request)
    if "questions that this passage answers" in prompt:
        return Text("Sure! The passage is about measurements.")
    if "descriptive header" in prompt:
        return Text("")
    if "situate this passage" in prompt:
        return Text('<tool_call>{"name": "search_abstracts", "arguments": {}}</tool_call>')
    return Text("{}")


def test_junk_and_empty_replies_leave_the_index_as_it_was(tmp_path: Path, local_embedder: CachedEmbedder) -> None:
    source = paper_source(tmp_path, "p", "walrus")
    with ScriptedOpenAIServer([junk] * 500) as server:
        settings = settings_for(tmp_path / "home", server, ["contextual", "headers", "questions", "summaries"])
        with PaperStore.open(settings, local_embedder) as store:
            [done] = run([source], settings, store).files
            assert done.status == "ingested" and done.warnings
            assert "held nothing usable (empty or markup) and were left out" in done.warnings[0]
            [paper] = store.list_papers()
            rows = store.get_chunks(paper.doc_id, kind=None)
            assert {r.kind for r in rows} == {"chunk"} and paper.summary == ""
            assert all(r.index_text.split("\n") == [r.index_text.split("\n")[0], r.text] for r in rows)
            # Empty replies (the headers) are not cached: the next run asks for them again; the others are.
            assert run([source], settings, store, force=True).files[0].calls == len(rows)


def test_an_endpoint_that_dies_mid_paper_fails_that_paper_alone_and_the_next_run_resumes(
    tmp_path: Path, local_embedder: CachedEmbedder
) -> None:
    topics = (("a", "beavers"), ("b", "ferrets"), ("c", "moles"))
    sources = [paper_source(tmp_path, name, topic) for name, topic in topics]
    lock = threading.Lock()
    ferret_calls: list[str] = []
    alive = {"ferrets": 3}  # the endpoint answers three of the second paper's calls, then drops every connection

    def dying(request: dict[str, Any]) -> Reply:
        prompt = prompt_of(request)
        if "Ferrets Studies" in prompt:
            with lock:
                ferret_calls.append(prompt)
                if len(ferret_calls) > alive["ferrets"]:
                    return Drop()
        return answer(request)

    with ScriptedOpenAIServer([dying] * 2000) as server:
        settings = settings_for(tmp_path / "home", server, ["headers", "questions"], concurrency=1)
        with PaperStore.open(settings, local_embedder) as store:
            report = run(sources, settings, store)
            status = {Path(f.path).stem: f.status for f in report.files}
            assert status == {"a": "ingested", "b": "failed", "c": "ingested"}
            failed = report.failed[0]
            assert failed.error and failed.error.startswith("b.md: enrichment call (enrich_")
            assert "model scripted-model at http://127.0.0.1" in failed.error
            ferrets = doc_id_for(file_sha256(sources[1]))
            assert store.get_paper(ferrets) is None and store.count_chunks(ferrets, kind=None) == 0  # nothing of it
            assert len(ferret_calls) == 4  # three answered, one dropped, none after it
            answered = ferret_calls[:3]
            alive["ferrets"] = 10_000  # the endpoint is back
            ferret_calls.clear()
            again = run(sources, settings, store)
            assert [f.status for f in again.files] == ["unchanged", "ingested", "unchanged"]
            assert not set(answered) & set(ferret_calls)  # resumed from the cache: nothing answered is asked again
            assert again.files[1].calls == len(ferret_calls) > 0
            stored = store.get_paper(ferrets)
            assert stored is not None and stored.enrichments == ["headers", "questions"]


def test_question_rows_map_back_to_their_chunk(
    tmp_path: Path, server: ScriptedOpenAIServer, local_embedder: CachedEmbedder
) -> None:
    source = paper_source(tmp_path, "p", "lamprey")
    settings = settings_for(tmp_path / "home", server, ["questions"])
    with PaperStore.open(settings, local_embedder) as store:
        run([source], settings, store)
        [paper] = store.list_papers()
        engine = Engine(store, settings)
        # Only the questions written for the chunk with the learning rate hold "zebrafish": a hit on one returns it.
        found = engine.search("zebrafish", SearchFilter(doc_ids=[paper.doc_id]), k=3)
        chunk = next(c for c in store.get_chunks(paper.doc_id) if "0.003" in c.text)
        assert found.hits[0].citation == f"{paper.doc_id}:{chunk.chunk_index}" and found.hits[0].kind == "chunk"
        assert found.hits[0].text == chunk.text
        assert len({h.citation for h in found.hits}) == len(found.hits)  # each chunk once
        retrieved = engine.retrieve("Which zebrafish setting is used?", SearchFilter(doc_ids=[paper.doc_id]))
        assert retrieved.track == "A" and retrieved.hits[0].citation == found.hits[0].citation
        assert next(o for o in retrieved.operators if o.kind == "retriever").detail["kinds"] == ["chunk", "question"]


def test_summaries_locate_papers_and_the_agent_reads_them(
    tmp_path: Path, server: ScriptedOpenAIServer, local_embedder: CachedEmbedder
) -> None:
    from paperscope.agent.tools import AgentTools, RunState

    sources = [paper_source(tmp_path, "a", "beavers"), paper_source(tmp_path, "b", "ferrets")]
    settings = settings_for(tmp_path / "home", server, ["summaries"])
    with PaperStore.open(settings, local_embedder) as store:
        run(sources[:1], settings, store)
        ingest(sources[1:], settings, store)  # the other paper plain
        beavers = doc_id_for(file_sha256(sources[0]))
        engine = Engine(store, settings)
        assert engine.summary(beavers).startswith(f"{MARK} whole paper summary")
        rows = store.get_chunks(beavers, kind="summary")
        assert [r.metadata["scope"] for r in rows] == ["document", "section", "section"]
        assert all(r.text == store.get_chunks(beavers)[r.metadata["chunk_index"]].text for r in rows)
        found = engine.find_papers("okapi herding", k=2)  # words of the summary only
        assert found[0][0].doc_id == beavers and found[0][0].kind == "chunk"
        assert [p.doc_id for p in store.search_papers_bm25("okapi herding")] == [beavers]
        tools, state = AgentTools(engine), RunState()
        tools.search_abstracts(state, "beavers", 2)
        intro, _ = tools.get_paper_introduction(state, "P1" if state.labels.doc_id("P1") == beavers else "P2")
        assert intro.startswith("Summary of Beavers Studies (written at ingest") and "okapi herding" in intro


def test_raptor_builds_a_tree_and_both_retrievers_walk_it(
    tmp_path: Path, server: ScriptedOpenAIServer, local_embedder: CachedEmbedder
) -> None:
    source = paper_source(tmp_path, "p", "badgers", n=6)
    settings = settings_for(tmp_path / "home", server, ["raptor"], raptor_cluster_size=3)
    with PaperStore.open(settings, local_embedder) as store:
        run([source], settings, store)
        [paper] = store.list_papers()
        nodes = store.get_chunks(paper.doc_id, kind="raptor")
        body = store.get_chunks(paper.doc_id)
        assert nodes and all(n.text.startswith(MARK) for n in nodes)
        levels = {n.metadata["level"] for n in nodes}
        assert min(levels) == 1 and max(levels) >= 2
        roots = {n.chunk_index for n in nodes if n.metadata["root"]}
        children = {c for n in nodes for c in n.metadata["children"]}
        assert roots and roots == {n.chunk_index for n in nodes} - children  # the nodes that are nobody's child
        covered = sorted(i for n in nodes if n.metadata["level"] == 1 for i in n.metadata["leaves"])
        assert set(covered) <= {c.chunk_index for c in body}
        by_ordinal = {n.chunk_index: n for n in nodes}
        for n in nodes:  # every child is recorded and covers part of its parent
            for child in n.metadata["children"]:
                assert set(by_ordinal[child].metadata["leaves"]) <= set(n.metadata["leaves"])
            assert set(n.metadata["child_chunks"]) <= set(n.metadata["leaves"])
        assert nodes[0].citation == f"{paper.doc_id}:raptor:{nodes[0].metadata['level']}.{nodes[0].metadata['node']}"

        question = "narwhal migration"  # words of the summaries only
        collapsed = Engine(store, settings.with_overrides(retrieval={"retriever": "raptor"}))
        hits = collapsed.search(question, SearchFilter(doc_ids=[paper.doc_id]), k=3).hits
        assert hits[0].kind == "raptor" and ":raptor:" in hits[0].citation
        tree = Engine(store, settings.with_overrides(retrieval={"retriever": "raptor:tree"}))
        walked = tree.search(question, SearchFilter(doc_ids=[paper.doc_id]), k=8)
        kinds = [h.kind for h in walked.hits]
        assert "raptor" in kinds and "chunk" in kinds  # down from the roots to the chunks
        assert walked.models.retriever == "raptor:tree:bm25"
        _, evidence = tree.context(walked)
        node = next(e for e in evidence if e.is_summary)
        assert node.citation.startswith(f"{paper.doc_id}:raptor:") and node.text.startswith(MARK)
        assert node.chunk_range == tuple(node.chunks[0].metadata["span"])


def cli_ingest(args: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return CliRunner().invoke(app, ["ingest", *args])


def test_the_cli_prints_the_cost_first_and_a_dry_run_calls_nothing(
    tmp_path: Path, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = paper_source(tmp_path, "p", "herons")
    home = tmp_path / "home"
    monkeypatch.delenv("MILVUS_URI", raising=False)
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    monkeypatch.delenv("PAPERSCOPE_LLM_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    runner = CliRunner()

    result = runner.invoke(app, ["ingest", str(source), "--enrich", "questions"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: enrichment (questions) needs a chat model")
    assert not home.exists()  # nothing written

    env = {"PAPERSCOPE_LLM_MODEL": "scripted-model", "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
    result = cli_ingest([str(source), "--enrich", "questions,headers", "--dry-run", "--json"], env, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["cost"]["calls"] > 0 and server.requests == []
    assert "model calls (0 cached)" in result.stderr and "dry run: no model called" in result.stderr
    result = runner.invoke(app, ["papers", "--json"])
    assert result.exit_code == 1  # the dry run made no knowledge base

    result = runner.invoke(app, ["ingest", str(source), "--enrich", "questions,headers"])
    assert result.exit_code == 0, result.stderr
    assert "enrich (headers, questions): 1 papers" in result.stderr and "1 ingested" in result.stdout
    [listed] = json.loads(runner.invoke(app, ["papers", "--json"]).stdout)
    assert listed["enrichments"] == ["headers", "questions"]

    result = runner.invoke(app, ["ingest", str(source), "--enrich", "questions,headers", "--force", "--dry-run"])
    assert result.exit_code == 0 and "0 model calls (" in result.stderr  # all cached
    result = runner.invoke(app, ["config", "--kb", "papers", "--set", "enrichment.strategies=headers,summaries"])
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(app, ["ingest", str(source), "--force", "--dry-run"])  # the knowledge base's own choice
    assert result.exit_code == 0 and "enrich (summaries, headers): 1 papers" in result.stderr
    result = runner.invoke(app, ["ingest", str(source), "--enrich", "questionz"])
    assert result.exit_code == 1 and "unknown enricher 'questionz'; did you mean 'questions'" in result.stderr


def test_an_endpoint_failure_is_exit_code_1_in_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = paper_source(tmp_path, "p", "voles")
    with ScriptedOpenAIServer([EmptyBody()] * 50) as server:
        env = {
            "PAPERSCOPE_HOME": str(tmp_path / "home"),
            "PAPERSCOPE_LLM_MODEL": "scripted-model",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "x",
            "PAPERSCOPE_LLM__RETRIES": "0",
            "PAPERSCOPE_ENRICHMENT__CONCURRENCY": "1",
        }
        monkeypatch.delenv("MILVUS_URI", raising=False)
        result = cli_ingest([str(source), "--enrich", "headers", "--json"], env, monkeypatch)
        assert result.exit_code == 1
        [failed] = json.loads(result.stdout)["files"]
        assert failed["status"] == "failed" and "scripted-model" in failed["error"]
        assert len(server.requests) == 1  # the first failure stopped the paper
