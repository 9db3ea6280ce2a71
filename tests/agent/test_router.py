"""Query router (rules and LLM), the prompt loader and the scripted chat model, over the sample catalogue."""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import ValidationError

from paperscope.agent.router import LLMRouter, catalogue_lines, make_router
from paperscope.errors import ConfigError
from paperscope.prompts import load_prompt
from paperscope.rag.cues import section_cues
from paperscope.rag.locate import PaperLocator
from paperscope.rag.route import Intent, Route, RuleRouter
from paperscope.rag.store import PaperStore
from tests.scripted_model import ScriptedChatModel, final, invalid_tool_call, tool_call, tool_calls


@pytest.fixture(scope="module")
def locator(sample_kb: PaperStore) -> PaperLocator:
    """The paper locator over the 12 sample papers (a real Milvus Lite knowledge base)."""
    return PaperLocator(sample_kb, [p for p in sample_kb.list_papers(brief=True) if p.ready])


@pytest.fixture(scope="module")
def router(locator: PaperLocator) -> RuleRouter:
    return RuleRouter(locator)


@pytest.fixture(scope="module")
def ids(sample_doc_ids: dict[str, str]) -> dict[str, str]:
    return sample_doc_ids


ROUTE_TOOL = "route_query"


def _route_call(intent: str, keywords: list[str], categories: list[str]) -> AIMessage:
    args = {"intent": intent, "target_paper_keywords": keywords, "target_section_category": categories}
    return tool_call(ROUTE_TOOL, args)


# -- rule router: naming a paper -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "slug"),
    [
        ("How does FlashRank work?", "flashrank"),
        ("What are flashrank's limitations?", "flashrank"),
        ("In QuantKV, which bit width is used for keys?", "quantkv"),
        ("What does the SwitchBack paper propose?", "switchback"),
        ("How much training data did Marten-1B use?", "marten"),
        ("How much training data did Marten use?", "marten"),  # stem of "Marten-1B"
        ("TokenPrune的实验结果如何？", "tokenprune"),  # CJK right after the name
        ("Why does 《HyDRA》 help zero-shot retrieval?", "hydra"),
        ("What did Okafor et al. find about listwise distillation?", "flashrank"),  # the first author
        ("What learning rate did Castellanos and Venkataraman use?", "quantkv"),  # two authors
    ],
)
def test_a_name_locates_a_paper(router: RuleRouter, ids: dict[str, str], query: str, slug: str) -> None:
    route = router.route(query)
    assert route.intent is Intent.SPECIFIC_PAPER
    assert route.doc_ids == [ids[slug]]
    assert route.source == "rules"
    assert route.target_paper_keywords


def test_stem_with_another_suffix_is_an_unknown_paper(router: RuleRouter) -> None:
    route = router.route("How was Marten-2B trained?")
    assert route.intent is Intent.SPECIFIC_PAPER
    assert route.doc_ids == []
    assert route.not_found == ["Marten-2B"]


def test_name_inside_a_longer_word_does_not_match(locator: PaperLocator) -> None:
    location = locator.locate("Is FlashRanking a word?")
    assert not any(c.alias for c in location.candidates)


@pytest.mark.parametrize(
    "query",
    [
        'Summarize "Cheap Listwise Reranking with Distilled Cross Encoders".',  # subtitle, hyphen lost
        "What does “FlashRank: Cheap Listwise Reranking with Distilled Cross-Encoders” claim?",
        "What does 'cheap listwise reranking with distilled cross-encoder' conclude?",  # singular, lower case
    ],
)
def test_quoted_title_names_a_paper(router: RuleRouter, ids: dict[str, str], query: str) -> None:
    route = router.route(query)
    assert route.intent is Intent.SPECIFIC_PAPER
    assert route.doc_ids == [ids["flashrank"]]


@pytest.mark.parametrize(
    ("query", "slug"),
    [
        ("What does the paper on 4-bit key-value cache quantization report?", "quantkv"),
        ("What accuracy does mixture-of-experts routing without auxiliary losses reach?", "switchback"),
        ("How does structure-aware chunking of scientific documents work?", "chunksage"),
        # described, not named: the catalogue's BM25 and embeddings single the paper out
        ("How large is the curated pretraining corpus of the compact 1B model?", "marten"),
    ],
)
def test_a_described_paper_is_located(router: RuleRouter, ids: dict[str, str], query: str, slug: str) -> None:
    route = router.route(query)
    assert (route.intent, route.doc_ids) == (Intent.SPECIFIC_PAPER, [ids[slug]])


@pytest.mark.parametrize(
    ("query", "slug"),
    [
        ("Summarize arXiv:2309.04417", "flashrank"),
        ("What is 2309.04417v2 about?", "flashrank"),
        # "works" is a verb here, not "which works" (papers) across the field
        ("In 2406.11873, which target chunk size works best?", "chunksage"),
    ],
)
def test_arxiv_id_names_a_paper(router: RuleRouter, ids: dict[str, str], query: str, slug: str) -> None:
    route = router.route(query)
    assert (route.intent, route.doc_ids) == (Intent.SPECIFIC_PAPER, [ids[slug]])


@pytest.mark.parametrize(
    ("query", "missing"),
    [
        ("What does the ResNet paper say about depth?", ["ResNet"]),
        ("这篇ResNet论文讲了什么？", ["ResNet"]),
        ('What does "Attention Is All You Need" propose?', ["Attention Is All You Need"]),
        ("What learning rate does the paper on protein folding with diffusion models use?", []),
        ("In Smith and Lee's study of coral reefs, how fast does bleaching spread?", []),
    ],
)
def test_paper_not_in_catalogue(router: RuleRouter, query: str, missing: list[str]) -> None:
    route = router.route(query)
    assert route.intent is Intent.SPECIFIC_PAPER
    assert route.doc_ids == []
    assert route.not_found == missing


def test_the_bert_paper_is_not_a_paper_that_uses_bert(router: RuleRouter) -> None:
    # TabRetriever mentions DPR throughout; "the DPR paper" is still not in this catalogue.
    route = router.route("What batch size does the DPR paper use?")
    assert (route.intent, route.doc_ids, route.not_found) == (Intent.SPECIFIC_PAPER, [], ["DPR"])


def test_several_papers_named(router: RuleRouter, ids: dict[str, str]) -> None:
    route = router.route("Compare TokenPrune with arXiv 2309.04417.")
    assert set(route.doc_ids) == {ids["flashrank"], ids["tokenprune"]}
    assert route.intent is Intent.SPECIFIC_PAPER


@pytest.mark.parametrize(
    "query",
    [
        "What methods improve RAG accuracy?",
        "Which papers reduce KV cache memory?",
        "Which approaches make dense retrieval cheaper?",
        "有哪些方法可以提高检索增强生成的准确率？",
        "哪些论文研究了长上下文推理中的KV缓存量化？",
        "What are common approaches to chunking scientific documents for retrieval?",
        "Which papers do 4-bit key-value cache quantization?",  # title words, but asked across the field
        "Which papers in the collection use BM25 as a baseline?",
    ],
)
def test_survey_questions_name_no_paper(router: RuleRouter, query: str) -> None:
    route = router.route(query)
    assert route.intent is Intent.TOPIC_SURVEY, route
    assert route.doc_ids == []
    assert route.target_paper_keywords == []


# -- rule router: sections -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "categories"),
    [
        ("How does FlashRank distil its cross-encoder?", ["METHOD"]),
        ("What architecture does SwitchBack use?", ["METHOD"]),
        ("What accuracy does QuantKV reach on LongBench?", ["EVALUATION"]),
        ("How well does TabRetriever do in the ablation?", ["EVALUATION"]),
        ("Why was ChunkSage needed?", ["INTRODUCTION"]),
        ("What are the limitations and future work of HyDRA?", ["CONCLUSION"]),
        ("What prior work does BlendIR build on?", ["RELATED_WORK"]),
        ("What does the abstract of LongCite say?", ["ABSTRACT"]),
        # Number question (EVALUATION) about training data (METHOD): both sections are searched.
        ("How much training data did Marten use?", ["METHOD", "EVALUATION"]),
        ("How many tokens was Marten-1B trained on?", ["METHOD", "EVALUATION"]),
        ("Summarize ScholarNav.", []),
        ("QuantKV的方法是什么？", ["METHOD"]),
        ("QuantKV如何实现量化？", ["METHOD"]),
        ("QuantKV的实验结果如何？", ["EVALUATION"]),  # "如何" at the end asks "how is it", not "how to"
        ("为什么需要ReflectRAG？", ["INTRODUCTION"]),
        ("ReflectRAG有哪些局限和不足？", ["CONCLUSION"]),
        ("BlendIR的相关工作有哪些？", ["RELATED_WORK"]),
        ("TokenPrune的模型结构和消融实验", ["METHOD", "EVALUATION"]),
    ],
)
def test_section_cues(router: RuleRouter, query: str, categories: list[str]) -> None:
    assert section_cues(query) == categories
    assert router.route(query).target_section_category == categories


def test_section_cues_use_word_boundaries() -> None:
    # "whyte", "reproblem", "approachable" contain cue words but are not cues.
    assert section_cues("Is Whyte's reproblem approachable?") == []


# -- follow-ups ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("follow_up", ["What are its limitations?", "And the results?", "局限性呢？"])
def test_follow_up_keeps_the_previous_paper(router: RuleRouter, ids: dict[str, str], follow_up: str) -> None:
    first = router.route("How does FlashRank work?")
    route = router.route(follow_up, previous=first)
    assert route.intent is Intent.SPECIFIC_PAPER
    assert route.doc_ids == [ids["flashrank"]]
    assert route.target_section_category != first.target_section_category  # the new question's sections


def test_follow_up_naming_a_new_paper_switches(router: RuleRouter, ids: dict[str, str]) -> None:
    first = router.route("How does FlashRank work?")
    assert router.route("And how does QuantKV compare?", previous=first).doc_ids == [ids["quantkv"]]


def test_survey_after_a_paper_question_stays_a_survey(router: RuleRouter) -> None:
    first = router.route("How does FlashRank work?")
    route = router.route("Which papers improve their accuracy with reranking?", previous=first)
    assert (route.intent, route.doc_ids) == (Intent.TOPIC_SURVEY, [])
    # Without the previous route a follow-up has nothing to refer to.
    assert router.route("What are its limitations?").intent is Intent.TOPIC_SURVEY


# -- Route validation ----------------------------------------------------------------------------------------


def test_route_normalizes_categories() -> None:
    route = Route(
        intent=Intent.SPECIFIC_PAPER,
        target_paper_keywords=[" FlashRank ", "flashrank", ""],
        target_section_category=["method", "EVALUATION", "METHOD"],
    )
    assert route.target_section_category == ["METHOD", "EVALUATION"]
    assert route.target_paper_keywords == ["FlashRank"]
    assert [c.name for c in route.categories] == ["METHOD", "EVALUATION"]
    with pytest.raises(ValidationError, match="unknown section category"):
        Route(intent=Intent.TOPIC_SURVEY, target_paper_keywords=[], target_section_category=["RESULTS"])
    assert Intent("SPECIFIC_PAPER") is Intent.SPECIFIC_PAPER


# -- LLM router ----------------------------------------------------------------------------------------------


def test_llm_router_happy_path(locator: PaperLocator, ids: dict[str, str]) -> None:
    model = ScriptedChatModel([_route_call("SPECIFIC_PAPER", ["listwise reranking"], ["evaluation"])])
    route = LLMRouter(model, locator).route("How well does the listwise reranker do?")
    assert (route.intent, route.source, route.target_section_category) == (
        Intent.SPECIFIC_PAPER,
        "llm",
        ["EVALUATION"],
    )
    assert route.doc_ids == [ids["flashrank"]]  # resolved by the locator from the question and the keywords
    # One call, with the routing tool bound and the prompt filled in.
    assert model.call_tools == [[ROUTE_TOOL]]
    (prompt,) = model.calls[0]
    assert isinstance(prompt, HumanMessage)
    text = str(prompt.content)
    assert "- QuantKV: 4-bit Key-Value Cache Quantization for Long-Context Inference (" in text
    assert text.rstrip().endswith("How well does the listwise reranker do?")
    assert "{" not in text.replace("{{", "")  # no unfilled placeholder


def test_catalogue_lines_show_year_and_names(locator: PaperLocator) -> None:
    text = catalogue_lines(list(locator.papers.values()))
    line = next(x for x in text.splitlines() if "ChunkSage" in x)
    assert "arXiv:2406.11873" in line and "Hoffmann et al" in line


def test_llm_router_survey_and_keyword_resolution(locator: PaperLocator, ids: dict[str, str]) -> None:
    model = ScriptedChatModel(
        [
            _route_call("TOPIC_SURVEY", [], ["METHOD"]),
            _route_call("SPECIFIC_PAPER", ["Marten"], []),
            _route_call("SPECIFIC_PAPER", ["ResNet"], ["METHOD"]),
        ]
    )
    router = LLMRouter(model, locator)
    survey = router.route("Which approaches make dense retrieval cheaper?")
    assert (survey.intent, survey.doc_ids, survey.source) == (Intent.TOPIC_SURVEY, [], "llm")
    assert router.route("How big is the small pretrained model?").doc_ids == [ids["marten"]]
    unknown = router.route("How is the ResNet paper's network built?")
    assert (unknown.intent, unknown.doc_ids, unknown.source) == (Intent.SPECIFIC_PAPER, [], "llm")
    assert model.remaining == 0


@pytest.mark.parametrize(
    "reply",
    [
        _route_call("SPECIFIC_PAPER", ["FlashRank"], ["RESULTS"]),  # unknown category
        _route_call("BOTH", ["FlashRank"], []),  # bad intent
        final("SPECIFIC_PAPER, FlashRank, METHOD"),  # plain text, no tool call
        invalid_tool_call(ROUTE_TOOL, '{"intent": "SPECIFIC_PAP'),  # arguments not JSON
        RuntimeError("endpoint down"),  # the call raises
    ],
    ids=["unknown-category", "bad-intent", "plain-text", "broken-json", "raises"],
)
def test_llm_router_falls_back_to_rules(
    locator: PaperLocator,
    ids: dict[str, str],
    reply: AIMessage | Exception,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChatModel([reply])
    with caplog.at_level(logging.WARNING, logger="paperscope.router"):
        route = LLMRouter(model, locator).route("How does FlashRank work?")
    assert route == RuleRouter(locator).route("How does FlashRank work?")
    assert (route.source, route.doc_ids, route.target_section_category) == ("rules", [ids["flashrank"]], ["METHOD"])
    assert model.remaining == 0 and len(model.calls) == 1
    assert any(r.name == "paperscope.router" and r.levelno == logging.WARNING for r in caplog.records)


def test_llm_router_async(locator: PaperLocator, ids: dict[str, str]) -> None:
    model = ScriptedChatModel([_route_call("SPECIFIC_PAPER", ["QuantKV"], ["METHOD"]), ValueError("timeout")])
    router = LLMRouter(model, locator)
    route = asyncio.run(router.aroute("How does QuantKV quantize keys?"))
    assert (route.source, route.doc_ids) == ("llm", [ids["quantkv"]])
    fallback = asyncio.run(router.aroute("How does QuantKV quantize keys?"))
    assert (fallback.source, fallback.doc_ids) == ("rules", [ids["quantkv"]])


def test_llm_router_follow_up_inherits_previous_paper(locator: PaperLocator, ids: dict[str, str]) -> None:
    model = ScriptedChatModel([_route_call("SPECIFIC_PAPER", [], ["CONCLUSION"])])
    previous = RuleRouter(locator).route("How does HyDRA work?")
    route = LLMRouter(model, locator).route("What are its limitations?", previous=previous)
    assert (route.source, route.doc_ids, route.target_section_category) == ("llm", [ids["hydra"]], ["CONCLUSION"])


def test_make_router(locator: PaperLocator) -> None:
    assert type(make_router(locator)) is RuleRouter
    assert isinstance(make_router(locator, ScriptedChatModel()), LLMRouter)


# -- prompt loader -------------------------------------------------------------------------------------------


def test_router_prompt_placeholders() -> None:
    prompt = load_prompt("router")
    assert prompt.name == "router"
    assert prompt.placeholders == frozenset({"papers", "query"})
    assert load_prompt("router") is prompt  # loaded once
    text = prompt.format(papers="- X: Y", query="Q?")
    assert "- X: Y" in text and "Q?" in text


def test_prompt_format_checks_values() -> None:
    prompt = load_prompt("router")
    with pytest.raises(ConfigError, match=r"router\.md.*missing.*query"):
        prompt.format(papers="- X")
    with pytest.raises(ConfigError, match=r"router\.md.*unexpected.*extra"):
        prompt.format(papers="- X", query="Q", extra="!")


@pytest.mark.parametrize("name", ["no_such_prompt", "../errors"])
def test_unknown_prompt(name: str) -> None:
    with pytest.raises(ConfigError, match=r"no_such_prompt\.md|errors\.md"):
        load_prompt(name)


def test_prompt_braces() -> None:
    from paperscope.prompts import _placeholders

    assert _placeholders("t", "literal {{json}} and {name} and {obj.attr}") == frozenset({"name", "obj"})
    with pytest.raises(ConfigError, match=r"t\.md"):
        _placeholders("t", "a lone } brace")
    with pytest.raises(ConfigError, match=r"t\.md"):
        _placeholders("t", "positional {} field")


# -- the scripted model itself -------------------------------------------------------------------------------


def test_scripted_model_replays_and_records() -> None:
    def echo(messages: list[BaseMessage]) -> AIMessage:
        return final(f"echo: {messages[-1].content}")

    model = ScriptedChatModel([tool_calls(("a", {"x": 1}), ("b", {}, "id-b")), echo, KeyError("k")])
    bound = model.bind_tools([Route], tool_choice="any")
    first = bound.invoke("hi")
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("a", {"x": 1}), ("b", {})]
    assert first.tool_calls[1]["id"] == "id-b"
    assert asyncio.run(model.ainvoke("again")).content == "echo: again"
    with pytest.raises(KeyError):
        model.invoke("third")
    with pytest.raises(AssertionError, match="ran out of replies"):
        model.invoke("fourth")
    assert [str(call[-1].content) for call in model.calls] == ["hi", "again", "third", "fourth"]
    assert model.call_tools == [["Route"], [], [], []]
    assert (bound.bound_tools, bound.tool_choice, model.bound_tools) == (["Route"], "any", [])


@pytest.mark.parametrize(
    "query",
    ["How many parameters does the weight predictor have?", "How much training data did they use?", "用了多少参数？"],
)
def test_number_questions_search_method_and_evaluation(query: str) -> None:
    assert {"METHOD", "EVALUATION"} <= set(section_cues(query))
