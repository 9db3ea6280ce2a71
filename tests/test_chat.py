"""The terminal chat loop, driven through scripted input."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from rich.console import Console

from paperscope.agent.pipeline import Searcher
from paperscope.answer.model import Answer, Source, TraceStep
from paperscope.chat import Runner, WordStream, chat_loop
from paperscope.errors import StoreError
from paperscope.parser.models import SectionCategory
from paperscope.rag.route import Route
from paperscope.rag.store import PaperRecord, PaperStore, StoredChunk

ROUTE = Route(intent="SPECIFIC_PAPER", target_paper_keywords=[], target_section_category=[])
DOC = "a" * 64


class FakeStore:
    """Just enough of PaperStore for the loop: a name, a catalogue and context windows."""

    kb = "fake-kb"

    def list_papers(self) -> list[PaperRecord]:
        return [
            PaperRecord(doc_id=DOC, title="FlashRank: Fast Rerankers", year=2024, status="ready"),
            PaperRecord(doc_id="b" * 64, title="Half Ingested", year=2023, status="ingesting"),
        ]

    def get_context_window(self, doc_id: str, center_chunk_index: int, window_size: int = 1) -> list[StoredChunk]:
        return [
            StoredChunk(
                id=i,
                doc_id=doc_id,
                title="FlashRank: Fast Rerankers",
                year=2024,
                chunk_index=i,
                text=f"text of chunk {i}",
                index_text=f"text of chunk {i}",
                section_title="Method",
                parent_section="",
                section_category=SectionCategory.METHOD,
                hierarchy_level=1,
                page_number=3,
            )
            for i in range(max(0, center_chunk_index - window_size), center_chunk_index + window_size + 1)
        ]


def source(n: int = 1, doc_id: str = DOC, chunk_index: int = 5, title: str = "FlashRank: Fast Rerankers") -> Source:
    return Source(
        n=n,
        citation=f"{doc_id}:{chunk_index}",
        doc_id=doc_id,
        title=title,
        year=2024,
        section_title="Method",
        section_category="METHOD",
        chunk_index=chunk_index,
        chunk_range=(chunk_index - 1, chunk_index + 1),
        page=3,
        pages=(3, 4),
        score=0.8,
        text="the evidence as the answer saw it",
    )


def answer(text: str, query: str = "q", **fields: Any) -> Answer:
    fields.setdefault("sources", [source()])
    return Answer(query=query, answer=text, track="A", route=ROUTE, **fields)


class FakeRunner:
    """Returns canned answers (or raises canned exceptions) in order and records what it was given."""

    def __init__(self, replies: Sequence[Answer | BaseException], store: Any = None, stream: bool = False) -> None:
        self.store: PaperStore = store if store is not None else FakeStore()
        self.replies = list(replies)
        self.stream = stream
        self.queries: list[str] = []
        self.history_lengths: list[int] = []

    def run(
        self,
        query: str,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        self.queries.append(query)
        self.history_lengths.append(len(history or []))
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if self.stream and on_token is not None:
            text = reply.answer
            for i in range(0, len(text), 4):
                on_token(text[i : i + 4])
        return reply


class Script:
    """A fake `input`: pops scripted lines, then raises EOFError (or a given exception)."""

    def __init__(self, *lines: str, end: BaseException | None = None) -> None:
        self.lines = list(lines)
        self.end = end or EOFError()
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.lines:
            raise self.end
        line = self.lines.pop(0)
        if line == "^C":
            raise KeyboardInterrupt
        return line


def chat(runner: Runner, *lines: str, mode: str = "single-shot, no LLM", end: BaseException | None = None) -> str:
    """Run the loop over scripted lines; the console text."""
    console = Console(record=True, width=120)
    chat_loop(runner, console, Script(*lines, end=end), mode=mode)
    return console.export_text()


def test_banner_names_the_kb_ready_papers_mode_and_help() -> None:
    out = chat(FakeRunner([]), mode="agent with qwen2.5")
    first = out.splitlines()[0]
    assert "'fake-kb'" in first and "1 papers" in first and "agent with qwen2.5" in first
    assert "/help for commands" in out
    assert out.rstrip().endswith("bye")


def test_a_question_is_answered_with_its_sources_and_history_grows() -> None:
    runner = FakeRunner([answer("FlashRank uses **1.2 million** queries [1]."), answer("Follow-up answer [1].")])
    console = Console(record=True, width=120)
    script = Script("", "How many queries?", "   ", "And then?")
    answers = chat_loop(runner, console, script)
    out = console.export_text()
    assert runner.queries == ["How many queries?", "And then?"]
    assert runner.history_lengths == [0, 1]
    assert [a.answer for a in answers] == ["FlashRank uses **1.2 million** queries [1].", "Follow-up answer [1]."]
    assert "FlashRank uses 1.2 million queries [1]." in out  # rendered as Markdown
    # Wrapped at a word boundary at 120 columns: the citation id, whole, starts the source's second line.
    assert f"[1] FlashRank: Fast Rerankers · Method (METHOD) · p. 3-4 · {DOC}:5" in " ".join(out.split())
    assert f"\n    {DOC}:5" in out
    assert script.prompts == ["you> "] * 5


def test_answers_and_streamed_text_reach_the_terminal_without_links_or_controls() -> None:
    text = "See the [card](https://evil.example/card) \x1b[2J\x1b]8;;https://x.example\x1b\\here [/i] [1]."
    runner = FakeRunner([answer(text), answer(text)], stream=False)
    out = chat(runner, "first", "/sources 1")
    assert "card (https://evil.example/card)" in out and "\\x1b[2J\\x1b]8;;https://x.example" in out
    assert "[/i]" in out and "\x1b" not in out
    streamed = chat(FakeRunner([answer(text)], stream=True), "streamed")
    assert "\x1b" not in streamed and "[/i]" in streamed and "\\x1b]8;;" in streamed


def test_streamed_tokens_are_printed_once() -> None:
    text = "FlashRank distils a cross-encoder [1]."
    runner = FakeRunner([answer(text)], stream=True)
    out = chat(runner, "What does FlashRank do?")
    assert out.count(text) == 1
    assert "[1] FlashRank: Fast Rerankers" in out


def test_sources_shows_the_full_context_from_the_store(sample_kb: PaperStore, sample_doc_ids: dict[str, str]) -> None:
    doc_id = sample_doc_ids["flashrank"]
    window = sample_kb.get_context_window(doc_id, 5, window_size=2)
    cited = next(c for c in window if c.chunk_index == 5)
    src = source(doc_id=doc_id, chunk_index=5, title=cited.title).model_copy(
        update={
            "section_title": cited.section_title,
            "section_category": cited.section_category.name,
            "pages": (window[0].page_number, window[-1].page_number),
        }
    )
    runner = FakeRunner([answer("About FlashRank [1].", sources=[src])], store=sample_kb)
    out = chat(runner, "What is FlashRank?", "/sources 1")
    flat = " ".join(out.split())
    assert f"[1] {cited.title} (2024)" in out
    assert f"chunks 4-6 · cited chunk 5 · {doc_id}:5" in flat
    for c in window:
        assert f"chunk {c.chunk_index} · {c.section_title} ({c.section_category.name}) · p. {c.page_number}" in flat
        assert " ".join(c.text.split()) in flat
    assert "▶ cited chunk 5" in out
    assert out.count("▶ cited") == 1


def test_sources_hints_on_bad_numbers() -> None:
    out = chat(FakeRunner([answer("An answer [1].")]), "/sources 1", "q", "/sources 9", "/sources x", "/sources")
    assert "no answer yet" in out
    assert "no source 9 in the last answer" in out
    assert out.count("usage: /sources N with N from 1 to 1") == 3


def test_trace_prints_tool_calls_timings_and_usage() -> None:
    trace = [
        TraceStep(tool="search_papers", args={"query": "FlashRank", "k": 3}, observation="x " * 200, seconds=0.25),
        TraceStep(tool="read_section", args={"doc_id": "nope"}, observation="unknown doc_id", error=True),
    ]
    reply = answer(
        "Agent answer [1].",
        trace=trace,
        timings={"tools": 0.25, "total": 1.5},
        usage={"input_tokens": 812},
        mode="agent",
        turns=3,
    )
    out = chat(FakeRunner([reply]), "/trace", "q", "/trace", mode="agent with qwen")
    assert "no answer yet" in out
    # Which way the answer came, turns as a count, the agent's own track; no turns among the seconds.
    assert "agent: 3 turns, 2 tool calls · Track A (one paper), decided by the agent" in out
    assert "Track A · one paper · agent" in out and "single-shot" not in out
    assert "tools 0.25 s · total 1.50 s" in out and "turns 3" not in out
    assert "search_papers" in out and '{"query":"FlashRank","k":3}' in out and "0.25" in out
    assert "read_section" in out and "error" in out and "unknown doc_id" in out
    assert "…" in out and "x " * 60 not in out  # the observation is shortened
    assert "total 1.50 s" in out and "input_tokens 812" in out


def test_trace_of_a_single_shot_answer() -> None:
    out = chat(FakeRunner([answer("Extracted [1].", timings={"route": 0.01, "total": 0.2})]), "q", "/trace")
    assert "single-shot · Track A (one paper), routed by the rules" in out
    assert "no tool calls (single-shot answer)" in out
    assert "route 0.01 s · total 0.20 s" in out


def test_trace_of_a_fallback_shows_the_agent_turns_and_why() -> None:
    trace = [TraceStep(tool="search_abstracts", args={"query": "x"}, observation="P1 | ...", turn=1, from_text=True)]
    reply = answer(
        "From retrieval [1].",
        trace=trace,
        mode="fallback",
        turns=2,
        extractive=True,
        notes=["The model failed (no reply within 60 s); the answer is extracted from single-shot retrieval."],
        llm_error="model m at http://x/v1 failed: no reply within 60 s",
        timings={"total": 61.0},
    )
    out = chat(FakeRunner([reply]), "q", "/trace")
    flat = " ".join(out.split())
    assert "warning: model m at http://x/v1 failed: no reply within 60 s" in flat
    assert "Track A · one paper · single-shot fallback, extracted · 61.00 s" in flat
    assert (
        "single-shot fallback after the agent (2 turns, 1 tool call, 1 written as text): The model failed (no reply "
        "within 60 s)" in flat
    )
    assert "search_abstracts (text)" in flat and "no tool calls" not in flat


def test_papers_lists_ready_papers_help_and_unknown_commands() -> None:
    out = chat(FakeRunner([]), "/papers", "/help", "/frobnicate")
    assert "aaaaaaaa" in out and "2024" in out and "FlashRank: Fast Rerankers" in out
    assert "Half Ingested" not in out and DOC not in out
    for cmd in ("/sources N", "/trace", "/papers", "/help", "/quit"):
        assert cmd in out
    assert "unknown command /frobnicate" in out


def test_an_error_from_the_runner_keeps_the_loop_going() -> None:
    runner = FakeRunner([StoreError("knowledge base 'x': search failed"), ValueError("bad"), answer("Fine [1].")])
    console = Console(record=True, width=120)
    answers = chat_loop(runner, console, Script("one", "two", "three"))
    out = console.export_text()
    assert "error: knowledge base 'x': search failed" in out and "error: bad" in out
    assert [a.answer for a in answers] == ["Fine [1]."]
    assert runner.history_lengths == [0, 0, 0]


@pytest.mark.parametrize("command", ["/quit", "/exit", "/QUIT"])
def test_quit_stops_before_later_lines(command: str) -> None:
    runner = FakeRunner([answer("never")])
    script = Script(command, "a question")
    chat_loop(runner, Console(record=True, width=120), script)
    assert runner.queries == [] and script.lines == ["a question"]


def test_ctrl_c_while_reading_ends_cleanly() -> None:
    runner = FakeRunner([answer("never")])
    script = Script("^C", "a question")
    console = Console(record=True, width=120)
    assert chat_loop(runner, console, script) == []
    assert runner.queries == [] and console.export_text().rstrip().endswith("bye")


def test_ctrl_c_while_answering_ends_cleanly() -> None:
    runner = FakeRunner([answer("First [1]."), KeyboardInterrupt()])
    console = Console(record=True, width=120)
    answers = chat_loop(runner, console, Script("one", "two", "three"))
    assert [a.answer for a in answers] == ["First [1]."] and runner.queries == ["one", "two"]
    assert console.export_text().rstrip().endswith("bye")


def test_eof_ends_cleanly() -> None:
    console = Console(record=True, width=120)
    assert chat_loop(FakeRunner([]), console, Script(end=EOFError())) == []
    assert console.export_text().rstrip().endswith("bye")


class SearcherRunner:
    """The single-shot Searcher as a Runner (its own `run` when it has one)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.store = searcher.store

    def run(
        self,
        query: str,
        history: Sequence[Answer] | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> Answer:
        run = getattr(self.searcher, "run", None)
        if run is not None:
            result: Answer = run(query, history=history, on_token=on_token)
            return result
        return self.searcher.answer(query, history=history)


def test_the_single_shot_searcher_follows_up_on_the_same_paper(
    sample_kb: PaperStore, sample_doc_ids: dict[str, str]
) -> None:
    console = Console(record=True, width=120)
    questions = Script("How many queries was FlashRank trained on?", "What about its evaluation results?")
    first, follow = chat_loop(SearcherRunner(Searcher(sample_kb)), console, questions, mode="single-shot, no LLM")
    out = console.export_text()
    assert first.sources and first.sources[0].doc_id == sample_doc_ids["flashrank"]
    assert follow.sources and {s.doc_id for s in follow.sources} == {first.sources[0].doc_id}
    assert "12 papers" in out.splitlines()[0]
    assert f"[1] {first.sources[0].title}" in out


# --- wrapping -------------------------------------------------------------------------------------------

LONG_TITLE = "Structure-Aware Retrieval over Scientific Papers with Hierarchical Section Graphs and Citations"


def _split_words(out: str, text: str) -> list[str]:
    """The words of `text` that do not appear whole among the printed words of `out`."""
    printed = set(out.split())
    return [word for word in text.split() if word not in printed]


def test_sources_wrap_at_word_boundaries_at_80_columns() -> None:
    """A source line longer than the terminal wraps between words (the terminal cut "(METHO" / "D)"), its next
    lines starting under its title, the citation id whole."""
    sources = [
        source(n=1, title=LONG_TITLE).model_copy(update={"section_title": "Hierarchical Evidence Aggregation"}),
        source(n=2, doc_id="b" * 64, chunk_index=17, title="FlashRank: Fast Rerankers for Question Answering"),
    ]
    console = Console(record=True, width=80)
    chat_loop(FakeRunner([answer("Two papers say so [1][2].", sources=sources)]), console, Script("q"))
    out = console.export_text()
    assert all(len(line.rstrip()) <= 80 for line in out.splitlines()), out
    for s in sources:
        line = f"[{s.n}] {s.title} · {s.section_title} ({s.section_category}) · p. 3-4 · {s.citation}"
        assert not _split_words(out, line), (_split_words(out, line), out)
        assert line in " ".join(out.split())
    first = out.index("[1] Structure-Aware")
    continued = out[first:].splitlines()[1]
    assert continued.startswith("    ") and not continued.startswith("     ")  # under the title, after "[1] "
    assert "(METHOD)" in out.split() and f"{'b' * 64}:17" in out.split()


def test_a_streamed_answer_wraps_at_word_boundaries_at_80_columns() -> None:
    text = (
        "FlashRank distils a cross-encoder into a smaller reranker (METHOD) trained on 1.2 million queries; "
        "its ablation removes the listwise objective and loses 3.1 points of nDCG@10 on BEIR, while "
        "the hierarchical-section-graph retriever keeps its accuracy. [1]\nA second paragraph follows here."
    )
    console = Console(record=True, width=80)
    chat_loop(FakeRunner([answer(text)], stream=True), console, Script("q"))
    out = console.export_text()
    assert all(len(line.rstrip()) <= 80 for line in out.splitlines()), out
    assert not _split_words(out, text), (_split_words(out, text), out)
    assert "\nA second paragraph follows here." in out  # the answer's own line break kept


def test_streamed_pieces_are_held_until_their_word_ends() -> None:
    console = Console(record=True, width=20)
    stream = WordStream(console)
    for piece in ["alpha be", "ta gam", "ma delta epsi", "lon zeta"]:
        stream.write(piece)
    stream.end()
    stream.write("\n  - an indented item that wraps")
    stream.end()
    lines = console.export_text().splitlines()
    assert lines == ["alpha beta gamma", "delta epsilon zeta", "  - an indented item", "that wraps"], lines
