"""The one place that writes and builds an Answer, for the agent, the single-shot path and the fallback alike.

- `from_retrieval`: the single-shot answer (and the agent's fallback): the engine's evidence (windows,
  Introductions, numbered [1], [2], ...), then the chat model writing from it, its citations grounded
  (citations.py), or, without a model or when it fails, the sentences that answer extracted and cited;
- `from_agent`: the agent's own answer, already grounded on the passages it read.
Every answer a model writes also goes through the grounding check (grounding.py): the numbers, quoted names and
author citations it states must occur in the evidence read; sentences with others are marked, and when the
figures the question asks for are among them the answer is not `supported` and the extracted sentences are
given beside the model's.
Both end in `_answer`, which fills what every answer reports: the models, the operators that ran, the timings,
what the query transforms generated.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..answer import grounding
from ..answer.bibliography import cited_works
from ..answer.citations import CitationStream, Grounded, Resolver, ground, grounding_notes
from ..answer.claims import Claim, Reading, placed, renumbered
from ..answer.extractive import HEADER, HEADER_WITHOUT_MODEL, extracted
from ..answer.grounding import GroundingReport
from ..answer.model import Answer, Source, TraceStep
from ..errors import LLMError
from ..llm.client import as_llm_error, model_error, model_name
from ..prompts import load_prompt
from ..rag.context import Evidence
from ..rag.engine import Engine
from ..rag.registry import OperatorRun
from ..rag.retrieval import Models, Retrieval, Track, track_of
from ..rag.route import Route
from ..rag.store import StoredChunk
from .textcalls import looks_like_a_call

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

Mode = Literal["agent", "single-shot", "fallback"]
# Heads the extracted sentences given beside a model's answer whose key figures are not in the sources.
BESIDE = "What the sources say (extracted sentences, best first):"
GENERATED = ("generated_queries", "hyde_queries", "semantic_query", "parsed_filters")


class AnswerWriter:
    """Writes answers over one engine, with the chat model (or none)."""

    def __init__(self, engine: Engine, chat_model: BaseChatModel | None = None) -> None:
        self.engine = engine
        self.chat_model = chat_model

    def models(self, used: BaseChatModel | None) -> Models:
        """The models behind an answer: the engine's, plus the chat model when one wrote or routed it."""
        models = self.engine.models()
        name = model_name(used)
        if name is not None:
            endpoint = str(getattr(used, "endpoint", "") or getattr(used, "openai_api_base", "") or "")
            provider = "openai" if not endpoint or "api.openai.com" in endpoint else "openai-compatible"
            models = models.model_copy(update={"llm_provider": provider, "llm_model": name})
        return models

    # --- single-shot and fallback ------------------------------------------------------------------------------

    def from_retrieval(
        self,
        query: str,
        retrieval: Retrieval,
        *,
        mode: Mode = "single-shot",
        use_model: bool = True,
        on_token: Callable[[str], None] | None = None,
        started: float | None = None,
        **run: Any,
    ) -> Answer:
        """The answer from a retrieval's evidence: the model writes it (grounded), else it is extracted.

        `on_token` receives the text as it is written. `run`: what an agent run adds (trace, usage, turns,
        llm_error). A model that fails or writes no answer gives way to the extracted sentences, with a note
        and `llm_error` saying so.
        """
        t0 = time.perf_counter() if started is None else started
        agent_error = run.pop("llm_error", None)  # the agent's model failure, when this is its fallback
        begun = time.perf_counter()
        routing = sum(o.seconds for o in retrieval.operators if o.kind == "router")
        timings = {"route": routing, "retrieve": sum(o.seconds for o in retrieval.operators) - routing}
        model = self.chat_model if use_model else None
        # Only a model reads the papers' Introductions. An extracted answer about one paper also reads its Abstract,
        # where the paper states its headline figures ("outperforms BM25 by 9%-19%"), which a search for the
        # question's words may miss.
        extractive = model is None  # and after a model fails (below)
        context_text, evidence = self.engine.context(
            retrieval, introductions=not extractive, abstract=extractive and retrieval.track == "A"
        )
        timings["assemble"] = time.perf_counter() - begun
        sources = [Source.from_evidence(n, ev) for n, ev in enumerate(evidence, start=1)]
        begun = time.perf_counter()
        # Not in the knowledge base: the closest passages are listed, but they do not support an answer.
        supported = bool(sources) and retrieval.track != "NONE"
        notes = list(retrieval.notes)
        llm_error: str | None = None
        report: GroundingReport | None = None
        claims: list[Claim] = []
        header = HEADER if self.chat_model is None else HEADER_WITHOUT_MODEL
        if not retrieval.n_papers:
            text, supported = self._nothing_ready(), False
        elif not sources:
            text = "No passage in the knowledge base answers this question."
        elif model is None:
            ex = extracted(query, evidence, header=header, spread=retrieval.track != "A")
            text, claims = ex.text, ex.claims
        else:
            emitted: list[str] = []
            resolve = Resolver.of_sources(sources)
            stream = CitationStream(resolve, on_token) if on_token is not None else None

            def emit(piece: str) -> None:
                emitted.append(piece)
                if stream is not None:
                    stream.feed(piece)

            try:
                raw, cut = self._generate(model, query, context_text, emit if on_token is not None else None)
                grounded = ground(raw, resolve)
                if cut and not grounded.supported:
                    # A reply that ran to max_tokens citing nothing is a model rambling, not an answer.
                    raise model_error(model, "bad_response", "it wrote up to max_tokens citing nothing")
            except LLMError as exc:
                llm_error, extractive = str(exc), True
                notes.append(f"The model failed ({exc.reason}); the answer is extracted from the sources without it.")
                ex = extracted(query, evidence, header=header, spread=retrieval.track != "A")
                text, claims = ex.text, ex.claims
            else:
                if stream is not None:
                    stream.close()
                text, sources, supported, report, claims = self._grounded(
                    query, grounded, sources, evidence, context_text, supported, notes, on_token
                )
                if cut:
                    notes.append("The model's answer was cut at llm.max_tokens.")
            if extractive and emitted and on_token is not None:
                on_token("\n\n" + "\n".join([*notes, "", text]))  # the stream broke off: the reader gets the rest
        if notes and (extractive or not sources):
            text = "\n".join([*notes, "", text])
        timings["generate"] = time.perf_counter() - begun
        return self._answer(
            query,
            text,
            track=retrieval.track,
            route=retrieval.route or Route(intent="TOPIC_SURVEY"),
            sources=sources,
            claims=claims,
            mode=mode,
            extractive=extractive,
            supported=supported,
            notes=notes,
            timings=timings,
            started=t0,
            models=self.models(model if not extractive else None),
            operators=retrieval.operators,
            llm_error=llm_error or agent_error,
            grounding=report,
            **{key: value for key, value in retrieval.generated.items() if key in GENERATED},
            **run,
        )

    def _grounded(
        self,
        query: str,
        grounded: Grounded,
        sources: list[Source],
        evidence: list[Evidence],
        context: str,
        supported: bool,
        notes: list[str],
        on_token: Callable[[str], None] | None,
    ) -> tuple[str, list[Source], bool, GroundingReport, list[Claim]]:
        """The model's text with its citations and figures checked: the sources it cites, renumbered (or all of
        them, marked as not supporting it), unsupported figures marked, and the extracted sentences beside it
        when the figures asked for are not in the context the model read; and the claims of all of it."""
        notes += grounding_notes(grounded)
        report = grounding.check(grounded.text, [context], query)
        text = grounding.mark(grounded.text, report)
        notes += grounding.notes(report)
        streamed = [f"\n\n({line})" for line in grounding.notes(report)]  # the marks cannot be streamed inline
        resolve = Resolver.of_sources(sources)
        numbering = {key: n for n, key in enumerate(grounded.order, start=1)}
        added: list[str] = []
        besides: list[Claim] = []
        if not grounded.supported:
            # The sources below are what the model was given; none of them backs what it wrote.
            added.append(f"\n\n({grounding_notes(grounded)[-1]})")
        if report.key_unsupported and evidence:
            ex = extracted(query, evidence, header=BESIDE)
            beside = ground(ex.text, resolve, numbering=numbering)
            added.append("\n\n" + beside.text)
            supported = False

            def number(n: int) -> int | None:
                key = resolve(str(n))
                return numbering.get(key) if key is not None else None

            besides = renumbered(ex.claims, number)
        if on_token is not None:
            for piece in streamed + added:
                on_token(piece)
        # The claims of the model's own sentences, as it wrote them (the marks are the answer's, not theirs).
        chunks_of = {s.n: ev.chunks for s, ev in zip(sources, evidence, strict=True)}
        read = [c for ev in evidence for c in ev.chunks]
        if not grounded.supported:
            claims = Reading(list(chunks_of.items()), query, read).claims(grounded.text, report)
            return text + "".join(added), sources, False, report, claims + besides
        by_n = {str(s.n): s for s in sources}
        order = sorted(numbering, key=lambda key: numbering[key])
        cited = [by_n[key].model_copy(update={"n": n}) for n, key in enumerate(order, start=1)]
        reading = Reading([(n, chunks_of[int(key)]) for n, key in enumerate(order, start=1)], query, read)
        return text + "".join(added), cited, supported, report, reading.claims(grounded.text, report) + besides

    def _generate(
        self, model: BaseChatModel, query: str, context: str, on_token: Callable[[str], None] | None = None
    ) -> tuple[str, bool]:
        """The model's answer from the context, and whether it was cut at max_tokens; an LLMError when the model
        fails or writes no answer."""
        from langchain_core.messages import HumanMessage

        messages = [HumanMessage(content=load_prompt("answer").format(context=context, question=query))]
        try:
            if on_token is None:
                reply = model.invoke(messages)
                text, metadata = str(reply.text).strip(), reply.response_metadata
            else:
                pieces: list[str] = []
                metadata = {}
                for chunk in model.stream(messages):
                    metadata = {**metadata, **chunk.response_metadata}
                    piece = str(chunk.text)
                    if piece:
                        pieces.append(piece)
                        on_token(piece)
                text = "".join(pieces).strip()
        except Exception as exc:  # whatever the endpoint does, the question still gets the extracted answer
            raise as_llm_error(exc, model) from exc
        if not ground(text, lambda ref: None).text.strip(" .,;:\n") or looks_like_a_call(text):
            what = "no answer" if not looks_like_a_call(text) else "a tool call instead of an answer"
            raise model_error(model, "bad_response", f"it wrote {what}")
        return text, metadata.get("finish_reason") == "length"

    def _nothing_ready(self) -> str:
        """Why no paper could be searched: an empty knowledge base, or papers that wait for repair."""
        waiting = [p for p in self.engine.store.list_papers(brief=True) if not p.ready]
        if not waiting:
            return "The knowledge base is empty: add papers with `paperscope ingest PATH`."
        names = "; ".join(repr(p.title) for p in waiting[:3]) + (" ..." if len(waiting) > 3 else "")
        return (
            f"No paper can be searched yet: {len(waiting)} paper(s) of the knowledge base wait for repair "
            f"after an interrupted ingest or a damaged store ({names}). Run `paperscope check --repair`, "
            "or ingest their files again."
        )

    # --- the agent ---------------------------------------------------------------------------------------------

    def from_agent(
        self,
        query: str,
        grounded: Grounded,
        seen: dict[str, StoredChunk],
        *,
        notes: list[str],
        started: float,
        trace: list[TraceStep],
        **run: Any,
    ) -> Answer:
        """The agent's answer: its text with citations grounded on the passages it read, which are its sources;
        its figures checked against those passages (the extracted sentences beside it when the figures asked for
        are not there)."""
        text, order, report, claims = self._check_agent(query, grounded, seen, notes)
        sources = [Source.from_chunk(n, seen[cid]) for n, cid in enumerate(order, start=1)]
        papers = list(dict.fromkeys(s.doc_id for s in sources))
        track: Track = track_of(papers)
        # The route is what the agent did, not a second opinion: the papers it cited, the sections it searched.
        searched = [str(s.args["category"]).upper() for s in trace if not s.error and s.args.get("category")]
        route = Route(
            intent="SPECIFIC_PAPER" if track == "A" else "TOPIC_SURVEY",
            doc_ids=papers if track == "A" else [],
            target_section_category=[c for c in dict.fromkeys(searched) if c in _CATEGORY_NAMES],
            source="agent",
        )
        operators = [
            OperatorRun(kind="tool", name=s.tool, seconds=s.seconds, detail={"results": len(s.results)}) for s in trace
        ]
        return self._answer(
            query,
            text or "The agent gave no answer.",
            track=track,
            route=route,
            sources=sources,
            claims=claims,
            mode="agent",
            extractive=False,
            supported=grounded.supported and not report.key_unsupported,
            grounding=report,
            notes=notes,
            timings={"tools": round(sum(s.seconds for s in trace), 4)},
            started=started,
            models=self.models(self.chat_model),
            operators=operators,
            trace=trace,
            **run,
        )

    def _check_agent(
        self, query: str, grounded: Grounded, seen: dict[str, StoredChunk], notes: list[str]
    ) -> tuple[str, list[str], GroundingReport, list[Claim]]:
        """The agent's text with unsupported figures marked (and the extracted sentences beside it when the key
        ones are), the citation ids its sources are, in order, the grounding report, and the claims."""
        read = [f"{c.title} ({c.year})\n{c.text}" for c in seen.values()]
        report = grounding.check(grounded.text, read, query)
        notes += grounding.notes(report)
        text = grounding.mark(grounded.text, report)
        order = list(grounded.order)
        # The agent's sentences rest on the chunks it cites (numbered as its sources), else on any it read.
        chunks_read = [c for c in seen.values() if c.kind == "chunk"]
        reading = Reading([(n, [seen[cid]]) for n, cid in enumerate(order, start=1)], query, chunks_read)
        claims = reading.claims(grounded.text, report)
        if report.key_unsupported:
            cited = [seen[c] for c in order]
            others = [c for cid, c in seen.items() if cid not in order and c.kind == "chunk"]
            chunks = (cited + others)[: max(len(cited), 2 * self.engine.settings.retrieval.k)]
            evidence = [Evidence.single(c, rank) for rank, c in enumerate(chunks)]
            by_number = {str(n): c.citation for n, c in enumerate(chunks, start=1)}
            numbering = {cid: n for n, cid in enumerate(order, start=1)}
            ex = extracted(query, evidence, header=BESIDE)
            beside = ground(ex.text, by_number.get, numbering=numbering)
            text += "\n\n" + beside.text
            order = sorted(numbering, key=lambda cid: numbering[cid])

            def number(n: int) -> int | None:
                cid = by_number.get(str(n))
                return numbering.get(cid) if cid is not None else None

            claims += renumbered(ex.claims, number)
        return text, order, report, claims

    # --- the one constructor ---------------------------------------------------------------------------------

    def _answer(
        self,
        query: str,
        text: str,
        *,
        started: float,
        timings: dict[str, float],
        claims: Sequence[Claim] = (),
        **fields: Any,
    ) -> Answer:
        timings["total"] = time.perf_counter() - started
        works = cited_works(
            # The catalogue the retrieval just read names the cited papers: no second version check.
            text,
            fields["track"],
            fields.get("sources", ()),
            claims,
            self.engine.store.catalogue(checked=False).by_id,
        )
        return Answer(
            query=query, answer=text, timings=timings, claims=placed(claims, text), bibliography=works, **fields
        )


_CATEGORY_NAMES = {"ABSTRACT", "INTRODUCTION", "METHOD", "EVALUATION", "CONCLUSION", "RELATED_WORK", "OTHER"}
