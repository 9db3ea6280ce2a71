"""Extractive answers: the sentence that states the asked fact comes first, debris is never quoted, and the
paper's own reference numbers never pass for our citations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paperscope.answer.extractive import (
    _candidates,
    _query_terms,
    _read,
    _Scorer,
    extract,
    extractive_answer,
    quantities,
    strip_references,
)
from paperscope.answer.question_type import Ask, question_type
from paperscope.answer.sentences import is_debris, split_sentences, table_row, trim_debris, units
from paperscope.answer.words import terms
from paperscope.parser.models import SectionCategory
from paperscope.parser.pdf import parse_pdf
from paperscope.rag.context import Evidence
from paperscope.rag.store import StoredChunk

DEVSET = Path(__file__).resolve().parents[3] / "shared" / "devset"


def _chunk(text: str, index: int = 0, doc_id: str = "d" * 8, title: str = "FlashRank") -> StoredChunk:
    return StoredChunk(
        id=index + 1,
        doc_id=doc_id,
        title=title,
        year=2023,
        chunk_index=index,
        text=text,
        index_text=text,
        section_title="3 Method",
        parent_section="",
        section_category=SectionCategory.METHOD,
        hierarchy_level=0,
        page_number=1,
    )


def _evidence(texts: list[str], hits: list[int] | None = None, title: str = "FlashRank") -> Evidence:
    chunks = [_chunk(t, i, title=title) for i, t in enumerate(texts)]
    return Evidence(doc_id="d" * 8, title=title, year=2023, chunks=chunks, hits=hits or [0], score=1.0, rank=0)


def _first(answer: str) -> str:
    """The first quoted line of an extractive answer."""
    return answer.splitlines()[1]


# --- reference numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Dense retrieval [1] beats BM25 [2, 5].", "Dense retrieval beats BM25."),
        ("Prior work [12–14] and [3-4; 9] agrees.", "Prior work and agrees."),
        ("[7] showed it first.", "showed it first."),
        ("Scores lie in [0, 1] and [0.5, 2].", "Scores lie in [0, 1] and [0.5, 2]."),  # intervals stay
        ("See Table [A] and x[i] for details.", "See Table [A] and x[i] for details."),
    ],
)
def test_reference_numbers_are_stripped(sentence: str, expected: str) -> None:
    assert strip_references(sentence) == expected


def test_an_extractive_answer_cites_only_our_sources() -> None:
    text = "FlashRank distils a listwise teacher [4] into small cross-encoders [5, 8]. It runs on a CPU [12–14]."
    evidence = [_evidence([text])]
    answer = extractive_answer("What does FlashRank distil into cross-encoders?", evidence)
    lines = answer.splitlines()[1:]
    assert "- FlashRank distils a listwise teacher into small cross-encoders. [1]" in lines
    assert all(line.endswith("[1]") and line.count("[") == 1 for line in lines)


def test_a_passage_read_for_one_question_answers_the_next_the_same() -> None:
    # Its sentences and stems are kept between questions (the same Introduction comes back): what one answer
    # scores must not leak into the next.
    text = "FlashRank distils a listwise teacher into cross-encoders. The student runs on a CPU at 40 ms a query."
    fresh = extractive_answer("How fast does the student run on a CPU?", [_evidence([text])])
    before = _read.cache_info().hits
    extractive_answer("What does FlashRank distil?", [_evidence([text], title="Other")])
    assert _read.cache_info().hits > before  # read once, reused
    assert extractive_answer("How fast does the student run on a CPU?", [_evidence([text])]) == fresh


# --- question types ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How many GPUs were used to train the retriever?", {Ask.NUMBER}),
        ("What F1 score does the tagger reach on the test set?", {Ask.NUMBER}),
        ("By how much does distillation cut latency?", {Ask.NUMBER}),
        ("What percentage of the queries are answerable?", {Ask.NUMBER}),
        ("Which dataset is the parser evaluated on?", {Ask.ENTITY}),
        ("Which optimizer do the authors use?", {Ask.ENTITY}),
        ("Who proposed the original ranking function?", {Ask.PERSON}),
        ("What is a straggler?", {Ask.DEFINITION}),
        ("Why does the model use only three hidden states?", {Ask.REASON}),
        ("How does the system recover from a master failure?", {Ask.PROCEDURE}),
        ("Does pruning hurt accuracy on long documents?", {Ask.YESNO}),
        ("How does the new index compare with the B-tree on range scans?", {Ask.COMPARISON, Ask.PROCEDURE}),
        ("How many seed pages are needed, and which crawl was used?", {Ask.NUMBER, Ask.ENTITY}),
        ("这个模型在测试集上的准确率是多少？", {Ask.NUMBER}),
        ("实验一共用了几个数据集？", {Ask.NUMBER}),
        ("论文用哪个数据集做评估？", {Ask.ENTITY}),
        ("为什么作者只用了三个隐藏状态？", {Ask.REASON}),
        ("这个系统如何处理主节点故障？", {Ask.PROCEDURE}),
        ("什么是掉队者（straggler）？", {Ask.DEFINITION}),
        ("剪枝是否会降低准确率？", {Ask.YESNO, Ask.NUMBER}),
        ("What limitations do the authors report?", {Ask.LIMITATION}),
        # the effect of one thing on another asks for the change, not for a method
        ("How does G-pooling change DeepLab's mIoU on the generalization test?", {Ask.COMPARISON}),
        # a measure of any name that a run "gets" or "reaches" is a figure
        ("What log-loss does MaxEnt ICE get on the Add Driver game?", {Ask.NUMBER}),
        ("What technology qualification and area weighing does T08 get?", {Ask.NUMBER}),
        ("How good an approximation of the median can be computed in linear time?", {Ask.NUMBER}),
        ("Which plot shows the squared-error-versus-rank curve?", {Ask.ENTITY}),  # a compound compares nothing
        # a request for the figure after a yes/no question, and a threshold asked with a preposition
        ("Does the decoder reach 95% on the testbed? Give the exact figure.", {Ask.YESNO, Ask.NUMBER}),
        ("Below what pressure does the seal start to leak?", {Ask.NUMBER}),
        ("At what stage is the filter applied?", set()),  # a stage is no value
        # a quantity named by its symbol has a value
        ("What input dimension N was used for the runs?", {Ask.NUMBER}),
        ("Which method A or B wins?", {Ask.ENTITY}),  # a label, not a symbol of a quantity
        ("论文的局限性是什么？", {Ask.LIMITATION}),
        # what a method gains; a disadvantage is a limitation
        ("What is the main advantage of the partitioned algorithm?", {Ask.ADVANTAGE}),
        ("What are the disadvantages of the partitioned algorithm?", {Ask.LIMITATION}),
        ("这个算法的优点是什么？", {Ask.ADVANTAGE}),
        (
            "What did the authors of 'Heart Failure Programmes: Why They Work' find?",
            set(),
        ),  # a quoted title asks nothing
    ],
)
def test_question_types(question: str, asks: set[Ask]) -> None:
    assert question_type(question).asks == asks


def test_what_a_number_question_counts_comes_after_the_whole_it_is_counted_in() -> None:
    assert question_type("How many of the 31,003,946 sites were unreferenced?").counted == ("sites",)
    assert question_type("How many sites of the 1000-site sample featured spam?").counted == ("sites",)


def test_a_name_is_one_word_with_or_without_its_hyphens_and_a_figure_one_term() -> None:
    assert terms("TableFormer-large with inter-sqa pre-training") == terms("TABLEFORMERLARGE with intersqa pretraining")
    assert terms("31,003,946 sites") == ["31003946", "site"]


def test_a_question_asking_several_things_is_split_into_parts() -> None:
    qt = question_type("How many seed sites does it need, and whose web index were the experiments run on?")
    assert qt.parts == ("How many seed sites does it need", "whose web index were the experiments run on")
    zh = question_type("一个 tablet 默认有多大？位置信息用什么结构存储？")
    assert len(zh.parts) == 2 and zh.chinese


# --- quantities -------------------------------------------------------------------------------------


def test_quantities_are_stated_amounts_not_years_or_labels() -> None:
    sentence = "As Table 3 and Fig. 2 show (Smith, 2019) [12], it reaches 89.9% with 1.5 million pairs in 3 hours."
    assert [q for _, q in quantities(sentence)] == ["89.9%", "1.5 million", "3 hours"]
    assert [q for _, q in quantities("Each block is 64KB in size; speedups range from 2x-20x.")] == ["64KB", "2x-20x"]
    assert [q for _, q in quantities("It needs only two passes over the data.")] == ["two"]
    # every label of a list of tables or figures is a label
    assert quantities("Table 1, 2, and 3 show the results; Figs. 4 and 5 the runs.") == []
    # a year followed by the list's comma, a footnote marker opening the line, "one of the": none is an amount
    assert quantities("CoNLL shared tasks ran in the years 2006, 2007 and 2008.") == []
    assert quantities("1 Millions of Disparity Estimates per Second.") == []
    assert [q for _, q in quantities("One of the reasons is the size of 40 GB.")] == ["40 GB"]


# --- sentence splitting -----------------------------------------------------------------------------


def test_sentences_survive_scholarly_abbreviations_and_decimals() -> None:
    text = (
        "We follow Smith et al. (2020) and use BM25 (e.g. Lucene) with k1 = 0.9. As Fig. 3 shows, the gain is "
        "36.1 points. In Sec. 2 we define the loss, cf. Eq. (4). Figs. 4 and 5 show J. Smith's results "
        "vs. the baseline. It is small, i.e. under 1 MB. A second paragraph starts here."
    )
    assert split_sentences(text) == [
        "We follow Smith et al. (2020) and use BM25 (e.g. Lucene) with k1 = 0.9.",
        "As Fig. 3 shows, the gain is 36.1 points.",
        "In Sec. 2 we define the loss, cf. Eq. (4).",
        "Figs. 4 and 5 show J. Smith's results vs. the baseline.",
        "It is small, i.e. under 1 MB.",
        "A second paragraph starts here.",
    ]


def test_a_captions_label_opens_its_sentence() -> None:
    assert split_sentences("Table 5. SCM for Pamplona City strategy. It lists 14 technologies.") == [
        "Table 5. SCM for Pamplona City strategy.",
        "It lists 14 technologies.",
    ]
    assert split_sentences("The scores are in Table 5. They rise with k.") == [
        "The scores are in Table 5.",
        "They rise with k.",
    ]


def test_hyphenation_at_line_ends_is_joined() -> None:
    text = "The retriever is trained on ques-\ntion and passage pairs.\nIt generalises well to unseen domains."
    assert [u.text for u in units(text)] == [
        "The retriever is trained on question and passage pairs.",
        "It generalises well to unseen domains.",
    ]


def test_chinese_sentence_ends_split() -> None:
    assert split_sentences("模型达到 90%。速度提高了两倍！") == ["模型达到 90%。", "速度提高了两倍！"]


# --- debris -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "debris",
    [
        # formula text as PyMuPDF reads it from arxiv1906.08632 (Goldt et al.)
        "In particular, we have dRin ≡fR(m(α)) = ηvi⟨∆g′(λi)ρn⟩, (9a) dα dQik ≡fQ(m(α)) = ηvi⟨∆g′(λi)λk⟩",
        "N = 784, M = 4, η = 0.2.",
        "(1) (2) (3) where the terms are defined above",
        "Crawl 800 11% 1000 16 8 0% No Crawl 50 33% 200 2 2 0% No Google Analytics 20 29% 10 1 1 0% Yes",
        "A.4 Putting it all together . . . . . . . . . . . . . . . . 4 A.5 Additional proof details . . . . . 4",
        "[12] DEAN, J., AND GHEMAWAT, S. MapReduce: Simplified data processing on large clusters.",
        "19 259 20 ..",
        "Dataset and Evaluation Metrics.",  # a run-in heading
    ],
)
def test_debris_is_not_a_sentence(debris: str) -> None:
    assert is_debris(debris)


@pytest.mark.parametrize(
    "sentence",
    [
        "A Chubby service consists of five active replicas, one of which is elected to be the master.",
        "Our experiments show that the method reduces extraction error by 39%, on average, compared with prior work.",
        "We now study networks when both layers are trained according to the SGD updates (2) and (3).",
        "In the absence of output noise (σ = 0), the generalisation error of a student tends to zero.",
        # a statistical report: prose between its figures
        "The weighted mean difference (WMD) of Hb was 12.88 g/l (95% CI 6.03 to 19.74 g/l, p<0.00001); "
        "the WMD of SF was 10.05 mg/l (95% CI 5.48 to 14.63 mg/l, p<0.00001).",
        # inline math carried by prose
        "In all cases, for a matrix Θ⋆with rank r, we generate the matrix Γ⋆with s = 3r non-zero columns of "
        "arbitrary magnitude.",
    ],
)
def test_prose_is_not_debris(sentence: str) -> None:
    assert not is_debris(sentence)
    assert trim_debris(sentence) == sentence


def test_a_debris_tail_is_cut_from_a_sentence() -> None:
    sentence = (
        "The scalar labels are given by the output of a network with hidden units, called the teacher "
        "(see also Fig. 1a): √ � v∗ �w∗ M M � � mx yµ ≡φ(xµ, θ∗)"
    )
    assert trim_debris(sentence).endswith("called the teacher (see also Fig. 1a) …")


def test_debris_is_never_quoted_even_when_it_matches_the_question() -> None:
    evidence = [
        _evidence(
            [
                "dRin ≡fR(m(α)) = ηvi⟨∆g′(λi)ρn⟩ learning rate η = 0.2 (9a) dα ≡ ∆ λ",
                "We set the learning rate to 0.2 for all experiments with sigmoidal networks.",
            ],
            hits=[0],
        )
    ]
    answer = extractive_answer("What learning rate is used?", evidence)
    assert _first(answer) == "- We set the learning rate to 0.2 for all experiments with sigmoidal networks. [1]"
    assert "≡" not in answer


def test_a_figures_axis_run_into_a_sentence_is_cut() -> None:
    sentence = (
        "We, therefore, design a validation scheme by tracking the count of each identifier Subframe index "
        "1 2 3 4 5 6 7 8 9 Detected UE list 16 0 C-RNTI Count Last active C-RNTI 432 200"
    )
    assert trim_debris(sentence) == (
        "We, therefore, design a validation scheme by tracking the count of each identifier Subframe index …"
    )
    listed = "The model was trained for 1, 2, 4 and 8 epochs with batch sizes 16 32 64 128 in turn."
    assert trim_debris(listed) == listed  # four bare numbers: a list a sentence may print


def test_an_abstract_read_whole_supports_but_never_leads() -> None:
    found = _evidence(
        [
            "The gap is especially large when k is small (78.4% vs. 59.1% for top-20 accuracy).",
            "Adding more training examples further improves the retrieval accuracy.",
        ]
    )
    abstract = Evidence(
        doc_id="d" * 8,
        title="FlashRank",
        year=2023,
        chunks=[_chunk("Our dense retriever outperforms BM25 by 9%-19% absolute in top-20 retrieval accuracy.", 7)],
        hits=[7],
        score=0.0,
        rank=1,
        read=True,
    )
    question = "By how much does the dense retriever outperform BM25 in top-20 retrieval accuracy?"
    alone = extract(question, [found])
    picks = extract(question, [found, abstract])
    assert picks[0].text == alone[0].text and picks[0].n == 1  # the search's evidence leads
    assert any(p.n == 2 and "9%-19%" in p.text for p in picks)  # the Abstract's figure is in the answer
    # Read evidence adds lines to score; it does not change how the found ones are weighed.
    both, only = _candidates([found, abstract]), _candidates([found])
    q = _query_terms(question)
    weighed = _Scorer(both, question, weighed=both[: len(only)])
    unweighed, own = _Scorer(both, question), _Scorer(only, question)
    assert [weighed.lexical(c, q) for c in both[: len(only)]] == [own.lexical(c, q) for c in only]
    assert [unweighed.lexical(c, q) for c in both[: len(only)]] != [own.lexical(c, q) for c in only]


# --- table rows -------------------------------------------------------------------------------------


def test_a_table_row_line_is_one_unit_with_its_headers() -> None:
    row = table_row("Table 2: Results on the test set | Model: BERT-base | F1: 90.9 | EM: 84.1")
    assert row is not None
    assert row.caption == "Table 2: Results on the test set"
    assert row.cells == (("Model", "BERT-base"), ("F1", "90.9"), ("EM", "84.1"))
    assert table_row("a | b | c") is None and table_row("Precision: high") is None
    # a row's label under a column without a header, after the table's label
    labelled = table_row("Table 2 | – shaping | Score: 0.59")
    assert labelled is not None and labelled.cells == (("", "– shaping"), ("Score", "0.59"))
    assert labelled.render() == "Table 2 | – shaping | Score: 0.59"
    assert table_row("plain words | more: 1") is None  # without a table's label, prose with a bar


def test_a_matching_table_row_can_be_the_answer() -> None:
    text = (
        "We compare our tagger with two baselines on the test set.\n"
        "Table 2: Tagging results on the test set | Model: CRF | Accuracy: 91.2\n"
        "Table 2: Tagging results on the test set | Model: ProtoTagger | Accuracy: 94.7\n"
        "The baselines were tuned on the development set."
    )
    answer = extractive_answer("What accuracy does ProtoTagger reach on the test set?", [_evidence([text])])
    assert _first(answer) == "- Table 2: Tagging results on the test set | Model: ProtoTagger | Accuracy: 94.7 [1]"


def test_the_row_the_question_names_answers_not_the_row_beside_the_prose() -> None:
    """Each row states its own run: the first row does not borrow the relevance of the prose printed next to it,
    every row shares its caption's, and the row the question names (its model, hyphenated or not) answers."""
    text = (
        "To get better performance on WTQ, we further pretrain TableFormer-large and TAPAS on SQA (inter-sqa).\n"
        "Table 3: Denotation accuracy on WTQ development and test set.\n"
        + "\n".join(
            f"Table 3 | Model: {model} | dev: {dev} | test: {test}"
            for model, dev, test in [
                ("TAPASLARGE", "40.8", "41.7"),
                ("TABLEFORMERLARGE", "42.5", "43.9"),
                ("TAPASLARGE inter-sqa", "49.9", "50.4"),
                ("TABLEFORMERLARGE inter-sqa", "51.3", "52.6"),
            ]
        )
    )
    question = "What denotation accuracy does TableFormer-large with inter-sqa pretraining reach on the WTQ test set?"
    assert "Model: TABLEFORMERLARGE inter-sqa | dev: 51.3 | test: 52.6" in _first(
        extractive_answer(question, [_evidence([text])])
    )


def test_a_sentence_pointing_back_answers_with_what_it_points_at() -> None:
    """ "They have achieved f-measures of 0.64 and 0.61": what "they" are (the runs the question asks about) is the
    sentence before it, and "two runs, one for English" counts nothing the question asks for."""
    text = (
        "We have submitted two runs for the task, one for English and one for German. "
        "The system validates answers with an entailment recognizer. "
        "In all, we have submitted two runs, one run for English and the other for German. "
        "They have achieved f-measures of 0.64 and 0.61 respectively."
    )
    answer = extractive_answer("What f-measures did the English and German runs obtain?", [_evidence([text])])
    assert "0.64 and 0.61" in _first(answer)


def test_a_row_of_the_table_the_question_names_comes_first() -> None:
    """Two tables list the same corpus under the same headers: the one the question names answers."""
    text = (
        "Table 4 | Corpus: Europarl | Sentences: 2,000\n"
        "Table 4 | Corpus: News | Sentences: 1,057\n"
        "Table 1 | Corpus: Europarl | Sentences: 1,655,238\n"
        "Table 1 | Corpus: News | Sentences: 132,753\n"
    )
    answer = extractive_answer(
        "How many sentences does the Europarl corpus listed in Table 1 hold?", [_evidence([text])]
    )
    assert "1,655,238" in _first(answer)


def test_a_table_the_parser_read_answers_with_its_cell_row_and_column() -> None:
    """DPR's Table 2 as the parser writes it ("Table 2 | Training: None | Retriever: BM25 | Top-20 NQ: 59.1 ...")."""
    pdf = DEVSET / "pdfs" / "emnlp2020_dense_passage_retrieval.pdf"
    if not pdf.is_file():
        pytest.skip(f"dev set PDF {pdf} is absent")
    from paperscope.parser import parse_pdf

    block = next(p for p in parse_pdf(pdf).paragraphs if p.table is not None and p.table.label == "Table 2")
    rows = [table_row(line) for line in block.text.split("\n")[1:]]
    assert rows and all(r is not None and r.caption == "Table 2" for r in rows)
    answer = extractive_answer("What Top-20 NQ accuracy does BM25 reach with no training?", [_evidence([block.text])])
    assert "Training: None | Retriever: BM25" in _first(answer) and "Top-20 NQ: 59.1" in _first(answer)


# --- number questions and other types on real passages -------------------------------------------------


def _paper_evidence(name: str, phrase: str, window: int = 3) -> list[Evidence]:
    """Evidence around the paragraph of a real dev-set PDF that holds `phrase`: its paragraphs as chunks,
    the one with the phrase as the hit, as retrieval would hand them over."""
    path = DEVSET / "pdfs" / name
    if not path.is_file():
        pytest.skip(f"the development set {DEVSET} is absent (it sits beside the repository)")
    paper = parse_pdf(path)
    paragraphs = [p.text for p in paper.paragraphs if p.kind == "body"]
    at = next(i for i, t in enumerate(paragraphs) if phrase in " ".join(t.split()))
    lo, hi = max(0, at - window), min(len(paragraphs), at + window + 1)
    chunks = [_chunk(t, i, title=paper.title) for i, t in enumerate(paragraphs[lo:hi])]
    evidence = Evidence(
        doc_id="d" * 8, title=paper.title, year=paper.year, chunks=chunks, hits=[at - lo], score=1, rank=0
    )
    return [evidence]


@pytest.fixture(scope="module")
def bigtable() -> list[Evidence]:
    return _paper_evidence("osdi2006_bigtable.pdf", "consists of five active replicas")


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("How many active replicas does a Chubby service have?", "five active replicas"),
        ("Chubby 服务由多少个活跃副本组成？", "five active replicas"),
        ("What block size does an SSTable typically use?", "64KB"),
        ("Which algorithm does Chubby use to keep its replicas consistent?", "Paxos"),
    ],
)
def test_the_sentence_stating_the_fact_comes_first(bigtable: list[Evidence], question: str, fact: str) -> None:
    first = _first(extractive_answer(question, bigtable))
    assert fact in first and re.search(r"\[1\]$", first)


def test_a_number_question_prefers_the_sentence_with_the_quantity() -> None:
    # Passages copied from the PyMuPDF text of osdi2006_bigtable.pdf: both sentences share the question's words.
    evidence = [
        _evidence(
            [
                "Each tablet server manages a set of tablets (typically we have somewhere between ten to a thousand "
                "tablets per tablet server). The tablet server handles read and write requests to the tablets that "
                "it has loaded, and also splits tablets that have grown too large. Initially, each table consists of "
                "just one tablet. As a table grows, it is automatically split into multiple tablets, each "
                "approximately 100-200 MB in size by default."
            ]
        )
    ]
    first = _first(extractive_answer("How many tablets does a tablet server manage?", evidence))
    assert "ten to a thousand" in first


def test_the_figure_in_the_sentence_after_the_topic_is_the_answer() -> None:
    # The topic sentence shares the question's words; the figure stands in the next one, which shares none.
    evidence = [
        _evidence(
            [
                "The fit of the runoff model to the held-out years was assessed with the coefficient of "
                "determination. Most of the fits (81%) reached R2 above 0.6, with the rest above 0.4. The fitted "
                "curves for each catchment are shown in the appendix."
            ]
        )
    ]
    answer = extractive_answer("How well did the runoff model fit the held-out years?", evidence)
    assert "81%" in _first(answer)


def test_a_sentence_pointing_back_is_quoted_with_the_one_before() -> None:
    evidence = [
        _evidence(
            [
                "We release the corpus under an open licence. Only two annotators labelled the corpus, both from "
                "the same lab. Thus, the labels may carry a shared bias, a limitation of this study."
            ]
        )
    ]
    first = _first(extractive_answer("What limitation of the labelling do the authors point out?", evidence))
    assert first.startswith("- Only two annotators labelled the corpus") and "shared bias" in first


def test_a_limitation_question_prefers_what_the_method_cannot_do() -> None:
    evidence = [
        _evidence(
            [
                "TabParse is a table reader: TabParse reads scanned pages with a layout model. TabParse cannot "
                "recover tables that span two pages, and it is slow on very large tables."
            ],
            title="TabParse: reading tables",
        )
    ]
    first = _first(extractive_answer("What limitations of TabParse do the authors report?", evidence))
    assert "cannot recover tables that span two pages" in first


def test_each_part_of_a_question_gets_its_answer() -> None:
    evidence = [
        _evidence(
            [
                "The crawler starts from a seed set of pages. A seed set of 150 hand-picked sites is enough to "
                "rank the rest of the graph. Seed sites were chosen by 3 editors over 2 weeks. Seed selection took "
                "12 hours per editor. The experiments ran on the web graph "
                "indexed by Yandex in 2019. Spam pages link to each other."
            ]
        )
    ]
    answer = extractive_answer(
        "How many seed sites are needed, and on whose web graph were the experiments run?", evidence
    )
    lines = answer.splitlines()[1:3]  # the answering lines come first
    assert "150 hand-picked sites" in lines[0] and any("Yandex" in line for line in lines)


def test_a_questions_type_is_worked_out_once() -> None:
    """The extracted answer, its parts and the grounding check all read what a question asks for: once."""
    from paperscope.answer.grounding import check

    question_type.cache_clear()
    question = "How many seed sites does TrustRank need, and whose web index was used?"
    text = "TrustRank needs 178 seed sites. The experiments used the AltaVista index of 2003."
    extractive_answer(question, [_evidence([text])])
    check("TrustRank needs 178 seed sites [1].", [text], question)
    info = question_type.cache_info()
    assert info.misses == 1 + len(question_type(question).parts) and info.hits >= 1


def test_a_question_that_says_what_it_measures_prefers_a_quantity_of_that_kind() -> None:
    """ "How long did training take?" is answered by a duration, not by the count of training iterations."""
    text = (
        "For the parser, we use 10 training iterations. "
        "The parser with integrated labeling was trained on the full set. "
        "Training the parser took 15 hours on one machine."
    )
    answer = extractive_answer("How long did training of the parser take?", [_evidence([text])])
    assert "15 hours" in _first(answer)
    assert question_type("How long did training take?").dimensions == {"time"}
    assert question_type("What speedup does tracing give?").dimensions == {"ratio"}


def test_values_given_respectively_answer_with_the_list_they_follow() -> None:
    """ "0.95, 0.99 and 0.99, respectively" says which value is whose only with the list before it: the answer
    quotes both, one claim."""
    text = (
        "The majority of fits (77%) returned E above 0.7, with 60% at 0.8 or better. "
        "The zero-flow analysis was confined to Stewarts Creek, Pine Creek and Redhill, where streams dried up. "
        "The model returned values of E of 0.95, 0.99 and 0.99, respectively."
    )
    question = "What coefficient of efficiency E did the model return for Stewarts Creek?"
    first = _first(extractive_answer(question, [_evidence([text])]))
    assert "Stewarts Creek" in first and "0.95, 0.99 and 0.99, respectively" in first


def test_a_capitalised_name_inside_the_question_qualifies_like_a_code() -> None:
    """ "for Stewarts Creek", "on the Add Driver game": a name that few of the evidence's units hold says which
    row or run is asked about; one most units hold (the paper's topic) does not."""
    from paperscope.answer.extractive import _candidates, _codes

    rows = [
        f"Table 1 | Problem: {game} | Log-loss: {v}" for game, v in [("Add Driver", "3.477"), ("Congestion", "2.9")]
    ]
    prose = [f"Routing game experiment number {i} on the Highway network." for i in range(6)]
    candidates = _candidates([_evidence(["\n".join(rows), " ".join(prose)])])
    codes = _codes("What log-loss does MaxEnt get on the Add Driver game of the Highway study?", candidates)
    assert {"driver", "add"} <= codes and "highway" not in codes  # looked up case-folded


def test_a_code_in_a_chinese_question_is_read_without_the_characters_around_it() -> None:
    """Chinese writes no spaces: "论文中，Y369F 突变" holds the code "Y369F", and a Latin name in a Chinese question
    ("日语（Japanese）") is spelled so because it names something."""
    from paperscope.answer.extractive import _candidates, _codes

    sentences = [
        "A 36-fold decrease in binding affinity was observed for Y369F.",
        "Japanese: 92.21 was the best score.",
        *[f"Compound {i} was tested against the enzyme." for i in range(8)],
    ]
    candidates = _candidates([_evidence([" ".join(sentences)])])
    assert "y369f" in _codes("在论文中，Y369F 突变使结合亲和力下降了多少倍？", candidates)
    assert "japanese" in _codes("系统在日语（Japanese）测试集上的得分是多少？", candidates)


def test_a_code_the_question_capitalises_is_found_in_lower_case() -> None:
    """ "the Shaping action term": the table writes its row label in lower case; the row holds the code."""
    from paperscope.answer.extractive import _candidates, _Scorer

    rows = "\n".join(f"Table 2 | – {term} | Score: 0.{i}9" for i, term in enumerate(["mixing", "shaping", "heating"]))
    prose = " ".join(f"Annotators tagged paragraph {i} of the corpus." for i in range(6))
    candidates = _candidates([_evidence([rows, prose])])
    scorer = _Scorer(candidates, "What kappa did the experts reach for the Shaping action term?")
    assert scorer.codes == {"shaping"}
    assert [scorer.qualified(c) for c in candidates[:3]] == [0.0, 1.0, 0.0]


def test_a_paper_named_in_the_question_is_no_code() -> None:
    """A title quoted in the question ('Combating Web Spam ...') and a word of the paper's own title ("Bigtable")
    say which paper is asked about, not which of its sentences: they qualify no unit."""
    from paperscope.answer.extractive import _candidates, _codes

    sentences = [
        "135 sites featured various forms of spam.",
        "563 sites featured quality contents. Web organization.",
        "37 sites belonged to organizations of the World Wide Web.",
        "Bigtable stores every crawled site in one table.",
        *[f"Bucket {i} held sites of every kind." for i in range(6)],
    ]
    candidates = _candidates([_evidence([" ".join(sentences)], title="Bigtable Spam Study")])
    codes = _codes("How many sites of the sample in 'Combating Web Spam with TrustRank' featured spam?", candidates)
    assert codes == frozenset()
    assert _codes("How much does Bigtable compress the Analytics table?", candidates) == frozenset()


def test_a_question_about_one_paper_takes_all_its_lines_from_it() -> None:
    """A survey's answer spreads over its sources (three lines from one at most); a question about one paper is
    answered from that paper's passages, as many lines as the answer holds."""
    from paperscope.answer.extractive import PER_SOURCE, extracted

    sentences = [f"The kelp survey counted {100 + i} otters in bay {i} during the {i + 1}th season." for i in range(8)]
    evidence = [_evidence([" ".join(sentences)])]
    question = "How many otters did the kelp survey count in each bay?"

    def lines(text: str) -> int:
        return sum(1 for line in text.splitlines() if line.startswith("- "))

    assert lines(extracted(question, evidence).text) == PER_SOURCE
    assert lines(extracted(question, evidence, spread=False).text) == 6


def test_a_word_said_twice_in_a_sentence_counts_once() -> None:
    """Sentence BM25 counts each of the question's words once per unit: repeating the question's noun says no more
    about the asked fact than naming it once."""
    from paperscope.answer.extractive import _candidates, _query_terms, _Scorer

    once = "The survey counted otters in twelve bays along the northern coast last spring."
    twice = "The survey counted otters and more otters in bays along the northern coast last spring."
    candidates = _candidates([_evidence([f"{once} {twice}"])])
    by_text = {c.unit.text: c for c in candidates}
    question = "How many otters did the survey count?"
    scorer = _Scorer(candidates, question)
    q = _query_terms(question)
    assert scorer.lexical(by_text[twice], q) <= scorer.lexical(by_text[once], q)


def test_a_number_counts_what_follows_it_up_to_the_next_number() -> None:
    """ "several billion pages into 31,003,946 sites": "billion" counts pages; the sites are the question's own
    figure. The sentence counting the asked sites with a figure the question does not give answers."""
    from paperscope.answer.extractive import _candidates, _counts

    text = "We grouped the several billion pages into 31,003,946 sites. Of these, 13,197,046 sites were unreferenced."
    grouped, unreferenced = _candidates([_evidence([text])])
    heads = frozenset({"sites"})
    assert _counts(grouped, [(q, v) for q, v in quantities(grouped.unit.text) if v == "billion"], heads) == 0.0
    assert _counts(unreferenced, quantities(unreferenced.unit.text), heads) == 1.0
    question = "In the experiments, how many of the 31,003,946 sites were unreferenced?"
    assert "13,197,046" in _first(extractive_answer(question, [_evidence([text])]))


def test_the_names_of_a_citation_are_no_named_answer() -> None:
    """ "Which notion does the paper use?": a sentence naming the notion in lower case answers; one whose only
    capitalised names are those of a citation ("(Osborne & Rubinstein, 1994)") does not become a named answer."""
    from paperscope.answer.extractive import _candidates, _Scorer
    from paperscope.answer.question_type import question_type

    cited, named = _candidates(
        [
            _evidence(
                [
                    "The modification class leads to the notion of correlated play (Osborne & Rubinstein, 1994). "
                    "Employing the notion of regret, we introduce a technique for predicting behavior."
                ]
            )
        ]
    )
    query = "Which notion does the paper use?"
    scorer, qt = _Scorer([cited, named], query), question_type(query)
    assert scorer.fit(cited, qt, []) < 1.0


def test_a_count_of_what_the_question_names_is_no_measure_it_asks_for() -> None:
    """ "What kappa did the human experts reach?": "we asked 6 human experts" counts the experts; the kappa is
    the figure asked. "How large is the dataset?" is answered by a count, which keeps its weight."""
    from paperscope.answer.extractive import _candidates, _Scorer

    counted, measured = _candidates(
        [_evidence(["We asked 6 human experts to annotate the same paragraphs. The experts reached a kappa of 0.59."])]
    )
    query = "What kappa did the human experts reach?"
    scorer, qt = _Scorer([counted, measured], query), question_type(query)
    q = terms(query)
    assert scorer.fit(counted, qt, q) < 1.0 < scorer.fit(measured, qt, q)
    size = "How large is the annotated dataset of human experts?"
    assert _Scorer([counted, measured], size).fit(counted, question_type(size), terms(size)) > 1.0


def test_this_work_points_at_the_paper_not_at_the_sentence_before() -> None:
    from paperscope.answer.extractive import _candidates, _leans_back

    before, work, result = _candidates(
        [
            _evidence(
                [
                    "We relate the two deceleration parameters. This work was motivated by recent findings. "
                    "This result holds for every model we fit."
                ]
            )
        ]
    )
    assert not _leans_back(work, before)
    assert _leans_back(result, work)


def test_the_tail_of_a_sentence_cut_by_a_chunk_boundary_counts_less() -> None:
    """A chunk may open in the middle of a sentence ("on a teacher with M = 2 in Fig. 3a."): the tail alone is
    no sentence a reader can take as the answer, so it counts less than the same words as a whole sentence."""
    from paperscope.answer.extractive import _candidates, _Scorer

    tail, whole = _candidates(
        [
            _evidence(
                ["on a teacher with two hidden units in Fig. 3a.", "On a teacher with two hidden units in Fig. 3a."],
                hits=[0, 1],
            )
        ]
    )
    query = "Which teacher was used in Fig. 3a?"
    scorer, qt, q = _Scorer([tail, whole], query), question_type(query), terms(query)
    lexical = scorer.lexical(whole, q)
    assert scorer.score(tail, qt, q, lexical) < scorer.score(whole, qt, q, lexical)


def test_a_question_of_two_parts_leads_with_the_passage_answering_both() -> None:
    """ "In which languages is VESPA written, and which program does it use?": where two sentences standing
    together answer one part each (and the best single sentence only one), the answer leads with both as one
    passage; a third sentence joins only if it answers more; a run never crosses chunks or takes a table row."""
    from paperscope.answer.extractive import _candidates, _covering_run, _parts_alone

    sentences = [
        "VESPA is a pipeline for comparative genomics.",
        "The pipeline is written in Python and Perl.",
        "It calls the codeML program of the PAML package.",
        "Selective pressure analysis is laborious without it.",
        "VESPA could be used for a selective pressure analysis of any programming language.",
    ]
    candidates = _candidates([_evidence([" ".join(sentences)])])
    query = "In which programming languages is VESPA written, and which program does it use?"
    qt = question_type(query)
    assert len(qt.parts) == 2

    class Parts:
        """Each part's scores: the first part best answered by sentence 4, then 1; the second by sentence 2."""

        def scores(self, part_type: object, words: list[str]) -> dict[int, float]:
            first = "languag" in words
            return {0: 0.1, 1: 7.0 if first else 0.0, 2: 0.0 if first else 9.0, 3: 0.2, 4: 10.0 if first else 1.0}

    assert _covering_run(_parts_alone(qt, Parts()), candidates, best=4) == [1, 2]  # type: ignore[arg-type]
    one_part = question_type("In which programming languages is VESPA written?")
    assert _covering_run(_parts_alone(one_part, Parts()), candidates, best=4) == []  # type: ignore[arg-type]
    split = _candidates([_evidence([" ".join(sentences[:2]), " ".join(sentences[2:4]), sentences[4]])])
    assert _covering_run(_parts_alone(qt, Parts()), split, best=4) == []  # type: ignore[arg-type]


def test_a_relative_clause_is_no_second_question() -> None:
    """ "..., which was used for the shared task" qualifies what is asked; ", and which program does it use"
    asks a second thing."""
    one = "How long did training take for the parser (system 3 in Table 3), which was used for the shared task?"
    assert len(question_type(one).parts) == 1
    two = "In which languages is VESPA written, which program does it use?"
    assert question_type(two).parts == ("In which languages is VESPA written", "which program does it use")


def test_the_papers_own_figure_outranks_one_it_cites() -> None:
    """ "How many hours did LDA take on 50 computers?": the paper's related work cites a run of another team
    ("[7] used 1000 computers for 10 hours"); the paper's own table row answers, though it says less."""
    text = (
        "The largest published run of LDA by the Irvine team [7] used 1000 computers for 10 hours on PubMed.\n"
        "Table 2 | computers: runtime (hours) | pubmed 10: 17.2 | 20: 9.0 | 50: 4.1 | 100: 2.8"
    )
    answer = extractive_answer("How many hours did LDA on PubMed take on 50 computers?", [_evidence([text])])
    assert "4.1" in _first(answer)


def test_a_noun_before_a_number_is_counted_only_as_a_tally() -> None:
    """ "subjects (n = 46)" counts subjects; in "each of the drivers chooses from four routes" four counts routes."""
    from paperscope.answer.extractive import _candidates, _counts

    tally, routes = _candidates(
        [
            _evidence(
                ["We recruited healthy subjects (n = 46) for the study. Each of the drivers chooses from four routes."]
            )
        ]
    )
    assert _counts(tally, quantities(tally.unit.text), frozenset({"subjects"})) == 1.0
    assert _counts(routes, quantities(routes.unit.text), frozenset({"drivers"})) == 0.0


def test_what_a_number_counts_is_read_after_its_multiplier() -> None:
    """ "1.7 million distinct normalized relation phrases" counts relation phrases: "million" is part of the number,
    and the four words after it may be what a count needs ("distinct normalized relation phrases")."""
    from paperscope.answer.extractive import _candidates, _counts

    text = (
        "Step 1 of the algorithm identifies three relation phrases that satisfy the constraints. "
        "This results in a set of approximately 1.7 million distinct normalized relation phrases, which are stored "
        "in memory at extraction time."
    )
    _, million = _candidates([_evidence([text])])
    assert _counts(million, quantities(million.unit.text), frozenset({"phrases"})) == 1.0
    question = "How many relation phrases does the dictionary of the lexical constraint hold?"
    assert "1.7 million" in _first(extractive_answer(question, [_evidence([text])]))


def test_a_sentence_giving_the_asked_term_its_value_answers_an_untyped_question() -> None:
    """ "What matrix dimension and sparsity were used?" reads as no particular kind of fact; the sentence setting
    those terms to values ("dimension d = 100 and sparsity s = 2171") answers it."""
    text = (
        "The first set of experiments apply to a low-rank matrix corrupted by an arbitrary sparse matrix. "
        "For dimension d = 100 and sparsity s = 2171, Figure 1 shows plots of the squared error as the rank "
        "parameter is varied: as predicted, the error is minimal at the true rank."
    )
    question = "What matrix dimension and sparsity were used for the experiments with a sparse matrix?"
    assert question_type(question).asks == frozenset()
    assert "d = 100" in _first(extractive_answer(question, [_evidence([text])]))


def test_a_bracketed_aside_completes_the_sentence_before_it() -> None:
    """ "... all other parameters being equal. (N = 500, M = 2, η = 0.05)." : the settings in brackets belong to
    the sentence before them, and a list of settings is not table cells run into it."""
    text = (
        "Students with increasing K were trained, with all other parameters being equal. "
        "(N = 500, M = 2, η = 0.05, σ = 0.01, v∗= 4). Then the second layer is trained too."
    )
    assert split_sentences(text) == [
        "Students with increasing K were trained, with all other parameters being equal. "
        "(N = 500, M = 2, η = 0.05, σ = 0.01, v∗= 4).",
        "Then the second layer is trained too.",
    ]
    assert split_sentences("(See Table 2.) It holds.") == ["(See Table 2.)", "It holds."]  # nothing to complete
    settings = "We trained all the students with the same schedule: (N = 500, M = 2, η = 0.05, σ = 0.01, v = 4)."
    assert trim_debris(settings) == settings
    cells = "We compare the methods below in the table with other Baseline CoT Finetuned CoT 8-shot T5 XXL 3 0.00 94.8"
    assert trim_debris(cells).endswith("…")  # table cells run into a sentence are still cut


def test_the_caption_of_the_figure_the_question_names_states_its_setting() -> None:
    """A caption counts less than prose (it names what a figure shows), except that of the figure the question names:
    "(Fig. 3a)" asks about Figure 3, whose caption gives the settings of its experiments."""
    text = (
        "A look at the order parameters after convergence in the experiments from Fig. 3a reveals specialisation "
        "of the student's hidden units.\n\n"
        "Figure 3: The performance of sigmoidal students improves with network size when training both layers. "
        "(a) Dynamics observed for students with increasing K, with all other parameters being equal. "
        "(N = 500, M = 2, η = 0.05)."
    )
    question = "What input dimension N was used for the experiments with sigmoidal students of increasing K (Fig. 3a)?"
    assert "N = 500" in _first(extractive_answer(question, [_evidence([text])]))
    from paperscope.answer.extractive import _candidates, _Scorer

    prose, caption = _candidates([_evidence([text])])
    qt = question_type(question)
    q = ["experi", "sigmoid", "student"]

    def caption_score(asked: str) -> float:
        scorer = _Scorer([prose, caption], asked)
        return scorer.score(caption, qt, q, scorer.lexical(caption, q))

    assert caption_score(question) == pytest.approx(2.5 * caption_score(question.replace("(Fig. 3a)", "(Fig. 4)")))


def test_settings_are_read_as_what_a_sentence_states_not_as_formula_debris() -> None:
    """ "Figure 1: CMB spectra for ΩF = ΩB = 0.2, xF = xB = 63109, τ = 0.13." states its settings; the words
    around them are judged, so bindings alone ("a = 1 b = 2 c = 3") are still debris."""
    assert not is_debris("Figure 1: CMB spectrums for ΩF = ΩB = 0.2, xF = xB = 63109, τ = 0.13.")
    assert not is_debris("For dimension d = 100 and rank r = 10, Figure 2 shows the squared error.")
    assert is_debris("a = 1 b = 2 c = 3 d = 4")


def test_a_sentence_binding_more_of_the_asked_terms_answers_first() -> None:
    """An untyped question ("what matrix dimension and sparsity were used") is answered by the sentence that sets
    both terms to values, over one that sets only one of them."""
    text = (
        "In the experiment the matrix dimension d = 100 is used. "
        "For dimension d = 100 and sparsity s = 2171, Figure 1 shows the squared error as the rank varies."
    )
    question = "What matrix dimension and sparsity were used for the squared error experiment?"
    assert "2171" in _first(extractive_answer(question, [_evidence([text])]))


def test_an_advantage_is_what_a_method_allows_or_saves() -> None:
    """ "What is its advantage?": a sentence saying what the method allows or saves ("using much less memory") fits
    what is asked, though it never says "advantage"; one describing where the method is written up does not."""
    from paperscope.answer.extractive import _candidates, _query_terms, _Scorer

    text = (
        "The partitioned algorithm is described in Section 3 with its notation. "
        "The partitioned algorithm allows fitting many models using much less memory than the plain algorithm."
    )
    question = "What is the advantage of the partitioned algorithm for fitting models?"
    described, allows = _candidates([_evidence([text])])
    scorer, asked = _Scorer([described, allows], question), question_type(question)
    q = _query_terms(question)
    assert asked.asks == {Ask.ADVANTAGE}
    assert scorer.fit(allows, asked, q) > 1.0 > scorer.fit(described, asked, q)
    assert "memory" in _first(extractive_answer(question, [_evidence([text])]))
