"""A conversation sent over HTTP (`[{"role", "content"}]`) as the earlier Answers the agent and single-shot read.

What a follow-up needs of an earlier answer is its question, its text and the papers it cited ("what about its
ablation?" stays on the paper the last answer was about). An assistant message names its sources by citation id
(`<doc_id>:<chunk_index>`): in its `sources` field, or in its text, as the answers of /v1/chat/completions list
them, so any OpenAI client that sends the conversation back keeps follow-ups on their paper. Citations of papers
the knowledge base does not hold are ignored; system messages are not part of the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..answer.citation_forms import FULL_ID_IN_TEXT
from ..answer.model import Answer, Source
from ..rag.retrieval import track_of
from ..rag.route import Route
from ..rag.store import PaperStore, StoredChunk

MAX_TURNS = 10  # earlier answers kept (the newest); older ones say little about the next question
MAX_SOURCES = 10  # citations read per earlier answer


class HistoryMessage(BaseModel):
    """One earlier message of the conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str = Field(max_length=100_000)
    sources: list[str] | None = Field(
        None, max_length=50, description="An assistant message's citation ids `<doc_id>:<chunk_index>`."
    )


def citations(message: HistoryMessage) -> list[tuple[str, int]]:
    """(doc_id, chunk_index) of the sources an assistant message names, first mention first."""
    found: list[tuple[str, int]] = []
    for text in [*(message.sources or []), message.content]:
        for doc_id, index in FULL_ID_IN_TEXT.findall(text):
            if (doc_id, int(index)) not in found:
                found.append((doc_id, int(index)))
    return found[:MAX_SOURCES]


def history_answers(store: PaperStore, messages: Sequence[HistoryMessage]) -> list[Answer]:
    """The earlier answers of a conversation (each assistant message with the user message before it)."""
    turns: list[tuple[str, HistoryMessage]] = []
    question = ""
    for message in messages:
        if message.role == "user":
            question = message.content
        elif message.role == "assistant":
            turns.append((question, message))
            question = ""
    turns = turns[-MAX_TURNS:]
    wanted = {cid for _, m in turns for cid in citations(m)}
    chunks = _chunks(store, wanted)
    out: list[Answer] = []
    for question, message in turns:
        cited = [chunks[c] for c in citations(message) if c in chunks]
        sources = [Source.from_chunk(n, chunk) for n, chunk in enumerate(cited, start=1)]
        papers = list(dict.fromkeys(s.doc_id for s in sources))
        track = track_of(papers)
        route = Route(intent="SPECIFIC_PAPER" if track == "A" else "TOPIC_SURVEY", doc_ids=papers[:1])
        out.append(
            Answer(
                query=question,
                answer=message.content,
                track=track,
                route=route,
                sources=sources,
                supported=bool(sources),
            )
        )
    return out


def _chunks(store: PaperStore, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], StoredChunk]:
    """The stored chunks of these citations, by paper (one read each), for ready papers only."""
    ready = {p.doc_id for p in store.list_papers(brief=True) if p.ready} if wanted else set()
    by_paper: dict[str, list[int]] = {}
    for doc_id, index in wanted:
        if doc_id in ready:
            by_paper.setdefault(doc_id, []).append(index)
    out: dict[tuple[str, int], StoredChunk] = {}
    for doc_id, indexes in by_paper.items():
        for chunk in store.get_body_chunks(doc_id, sorted(indexes)):
            out[(doc_id, chunk.chunk_index)] = chunk
    return out
