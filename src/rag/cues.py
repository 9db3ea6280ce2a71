"""What a question's wording says, in one place: survey or one paper, a follow-up, the sections it asks about.

Which paper a question is about is decided by retrieval over the catalogue (locate.py); these cues only read
the phrasing around it, in English and Chinese:
- survey: "which papers ...", "papers in the collection", "哪些论文" ask across papers; "which methods ..." at
  the start asks across the field unless a paper is named by its own name (`is_field_wide`);
- one paper: "the X paper", "in 'Title'", "X's", "Smith et al.", "这篇", "该论文";
- follow-up: "its", "the authors", "what about", "它", "该方法" point back at the previous question's paper;
- sections: "how does" -> METHOD, "results" -> EVALUATION, "limitations" -> CONCLUSION, ... (`section_cues`);
- citations: a question about references keeps reference lists among its evidence.
Text is compared after `fold` (NFKC, accents removed), so "Ｆｌａｓｈ" and "Gyöngyi" match "Flash", "Gyongyi".
"""

from __future__ import annotations

import re
import unicodedata

from ..parser.models import SectionCategory

STOPWORDS = frozenset(
    str.split(
        """a an the of for in on at by to from with without and or but via over under into about than as is are was were
    be been do does did can could should would will may might must we our you your it its they their this that these
    those what which who whom whose how why when where there here all any some each not no only more most less very
    much many one two using use used paper papers study studies work article authors author report reported reports
    based show shows between through per versus vs"""
    )
)


def fold(text: str) -> str:
    """NFKC (full-width letters, ligatures) and accents removed: "Ｆｌａｓｈ", "Gyöngyi" -> "Flash", "Gyongyi"."""
    if text.isascii():
        return text  # nothing to fold, and most text is
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(c for c in text if not unicodedata.combining(c))


def content_words(text: str) -> list[str]:
    """Lower-case words of 3+ letters that carry meaning (no stopwords), plurals kept."""
    return [w for w in re.findall(r"[a-z][a-z0-9-]{2,}", fold(text).lower()) if w not in STOPWORDS]


# --- across papers or one paper ------------------------------------------------------------------------------

# A question opening "Which methods ...", "What approaches ...": across the field, unless it names its paper
# ("which data collection methods were used" in the middle of a question is about one study).
_FIELD = re.compile(
    r"^\W*(?:which|what|are there)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:methods|approaches|techniques|strategies|ways|systems|models|tools|algorithms)\b|^\W*有哪些|哪些方法",
    re.IGNORECASE,
)
# "Which papers ...", "哪些论文": the question asks which papers do something.
_WHICH_PAPERS = re.compile(
    r"\b(?:which|what|are there|any)\s+(?:[\w-]+\s+){0,3}?(?:papers|studies|works|articles|publications)\b"
    r"(?!\s+(?:best|better|well|worse|worst|most)\b)"  # "which chunk size works best": a verb
    r"|哪些\S{0,6}?(?:论文|研究|文章|工作)|有什么论文",
    re.IGNORECASE,
)
# "papers in the collection", "across papers", "集合中": the question's scope is the collection (it may still be
# about one paper it names: "In the papers of the corpus, what does SPECTER train on?").
_ACROSS = re.compile(
    r"\bpapers?\s+in\s+(?:the|this)\s+(?:collection|corpus|knowledge base)\b|\bacross\s+(?:the\s+|these\s+)?papers\b"
    r"|集合中|各自",
    re.IGNORECASE,
)
# "the X paper", "the study of ...", "in 'Title'", "X's", "Smith et al.", "which paper", "这篇", "该论文", "论文中".
_ONE_PAPER = re.compile(
    r"\b(?:the|this|that|which)\s+(?:[\w'’-]+\s+){0,8}?(?:paper|study|article|survey|meta-analysis|report|thesis)"
    r"(?!s)\b|\bet al\b|[\w\-]+['’]s\s+(?:paper|study|system|work|method)|['\"“‘《]"
    r"|这篇|那篇|该论文|该文|论文中|论文里|的论文|有没有.*论文",
    re.IGNORECASE,
)
# Wording that names several papers: "the TrustRank paper and the ReVerb paper", "both papers", "两篇论文".
_SEVERAL_PAPERS = re.compile(
    r"\bpaper\b(?!['’])(?:(?!\bpaper\b).)*?\b(?:and|or|with|versus|vs)\b.*\bpapers?\b(?!['’])"
    r"|\b(?:both|two|three|these two|the two)\s+(?:[\w-]+\s+){0,2}?(?:papers|studies|articles)\b"
    r"|两篇|三篇|这两篇|这几篇",
    re.IGNORECASE,
)
QUOTED = re.compile(r"['\"“‘《]([^'\"”’》]{6,300})['\"”’》]")
# A name the question gives a paper: "the ResNet paper", "Smith's paper", "这篇 X 论文".
NAME_IN_QUESTION = re.compile(
    r"\bthe\s+((?:[A-Z][\w.+-]*\s+){1,4})paper\b|\b([A-Z][\w.+-]*(?:\s+[A-Z][\w.+-]*){0,3})['’]s\s+paper\b"
    r"|(?:这篇|那篇)\s*([A-Za-z][\w.+-]*)\s*论文|([A-Za-z][\w.+-]*)\s*(?:这篇|那篇)\s*论文"
)
# Survey phrasing says "across papers" but carries no topic; BM25 and the embedding both match it on every
# paper that talks about "papers" or "methods", so a survey searches with the topic alone (`survey_focus`).
_SURVEY_WORDS = re.compile(
    r"\b(which|what|how do|how have|recent|existing|other)\s+(papers?|works?|methods?|approaches|systems|"
    r"techniques|studies)\b|\b(papers?|works?|studies)\b|有哪些|哪些(工作|论文|方法)?",
    re.IGNORECASE,
)


def is_survey(query: str) -> bool:
    """True when the question asks across papers ("which papers ...", "papers in the collection", "哪些论文")."""
    text = fold(query)
    return bool(_WHICH_PAPERS.search(text) or _ACROSS.search(text))


def asks_which_papers(query: str) -> bool:
    """True when the question asks which papers do something ("which papers ...", "哪些论文"), not only
    where to look ("papers in the collection")."""
    return bool(_WHICH_PAPERS.search(fold(query)))


def is_field_wide(query: str) -> bool:
    """True when the question opens "which methods ..." (across the field unless it names its paper)."""
    return bool(_FIELD.search(fold(query)))


def refers_to_several_papers(query: str) -> bool:
    """True when the wording names several papers ("the X paper and the Y paper", "both papers", "两篇论文")."""
    return bool(_SEVERAL_PAPERS.search(fold(query)))


def refers_to_one_paper(query: str) -> bool:
    """True when the wording refers to one paper ("the X paper", a quoted title, "X et al.", "这篇")."""
    return bool(_ONE_PAPER.search(fold(query)))


def survey_focus(query: str) -> str:
    """The topic of a survey question, without its "which papers ..." phrasing (the query if nothing is left)."""
    focus = " ".join(_SURVEY_WORDS.sub(" ", query).split())
    return focus if len(focus) >= 3 else query


# --- follow-ups ------------------------------------------------------------------------------------------------

_BACK_REFERENCE_EN = re.compile(
    r"\b(?:it|its|it's|they|them|their|the paper|this paper|that paper|the authors?|this work|the model)\b"
    r"|^\s*(?:and|also|what about|how about|then)\b",
    re.IGNORECASE,
)
_BACK_REFERENCE_ZH = re.compile(r"它|这篇|那篇|该论文|该文|该方法|这个方法|这个模型|作者|呢\s*[？?]?\s*$")


def points_back(query: str) -> bool:
    """True when the question points back at an earlier one's paper ("its limitations", "what about", "它")."""
    text = fold(query)
    return bool(_BACK_REFERENCE_EN.search(text) or _BACK_REFERENCE_ZH.search(text))


# --- sections --------------------------------------------------------------------------------------------------


def _en(*words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


# Several categories may apply; they are reported in enum order. Number questions ("how much", "how many") are
# both METHOD and EVALUATION: setup numbers (parameters, training data, GPUs) live in the method, results in the
# evaluation. Anything about training or its data is METHOD. Chinese has no word boundaries: plain substrings,
# except 如何/怎么 which mean "how is it" (an evaluation question) at the end of a clause ("效果如何？") and "how to"
# (a method question) before a verb ("如何实现").
_SECTION_CUES: tuple[tuple[SectionCategory, re.Pattern[str], re.Pattern[str]], ...] = (
    (SectionCategory.ABSTRACT, _en(r"abstract"), re.compile(r"摘要")),
    (
        SectionCategory.INTRODUCTION,
        _en(r"why", r"motivat\w*", r"problems?", r"background"),
        re.compile(r"为什么|为何|动机|背景"),
    ),
    (
        SectionCategory.METHOD,
        _en(
            r"how (?:does|do|did)",
            r"methods?",
            r"methodology",
            r"approach(?:es)?",
            r"architectur\w*",
            r"algorithm\w*",
            r"implement\w*",
            r"train(?:s|ed|ing)?",
            r"datasets?",
            r"techniques?",
            r"mechanisms?",
            r"how (?:much|many)",
            r"(?:hyper)?parameters?",
        ),
        re.compile(
            r"方法|怎么(?!样)(?![？?。!！，,]|$)|如何(?![？?。!！，,]|$)|架构|模型结构|算法|训练|数据集|原理|多少|参数"
        ),
    ),
    (
        SectionCategory.EVALUATION,
        _en(
            r"results?",
            r"accura\w*",
            r"performance",
            r"perform(?:s|ed)?",
            r"how (?:much|many|well)",
            r"scor(?:e|es|ed)",
            r"benchmark\w*",
            r"ablat\w*",
            r"compar\w*",
            r"outperform\w*",
            r"evaluat\w*",
            r"experiment\w*",
            r"metrics?",
            r"baselines?",
            r"speed-?ups?",
            r"latency",
            r"throughput",
        ),
        re.compile(r"实验|准确率|精度|结果|性能|效果|消融|对比|比较|评估|评测|指标|多少|基准"),
    ),
    (
        SectionCategory.CONCLUSION,
        _en(
            r"limitations?",
            r"future (?:work|directions?|research)",
            r"drawbacks?",
            r"weakness(?:es)?",
            r"shortcomings?",
            r"downsides?",
            r"conclu\w*",
        ),
        re.compile(r"局限|未来工作|未来方向|不足|缺点|缺陷|结论"),
    ),
    (
        SectionCategory.RELATED_WORK,
        _en(r"related work", r"prior work", r"previous work"),
        re.compile(r"相关工作|已有工作|前人工作"),
    ),
)


def section_cues(query: str) -> list[str]:
    """Section category names a question asks about, in enum order; [] (all sections) when it has no cue."""
    text = fold(query)
    found = {category for category, en, zh in _SECTION_CUES if en.search(text) or zh.search(text)}
    return [category.name for category in SectionCategory if category in found]


# A table or figure a question names: "in Table 4", "(Tab. 2)", "Figure 1", "Fig. 3a", "Table IV", "表 2", "图3".
_NAMED_LABEL = re.compile(r"\b((?i:table|tab\.|figure|fig\.?))\s*(\d+|[IVX]+\b)|([表图])\s*(\d+)")
# A caption where a line opens: "Table 3:", "Figure 1.", "Fig. 2:", "TABLE IV." (the label, then a colon or a period).
_CAPTION_OPENING = re.compile(r"^[ \t]*((?i:table|tab\.|figure|fig\.))\s*(\d+|[IVX]+)\s*[:.]", re.M)


def _label(word: str, number: str) -> tuple[str, str]:
    return ("TABLE" if word.lower().startswith("tab") or word == "表" else "FIGURE", number.upper())


def named_labels(query: str) -> frozenset[tuple[str, str]]:
    """The tables and figures a question names, as labels: "in Table 4" -> ("TABLE", "4"), "(Fig. 3a)" ->
    ("FIGURE", "3"), "表 2" -> ("TABLE", "2")."""
    return frozenset(
        _label(m.group(1), m.group(2)) if m.group(1) else _label(m.group(3), m.group(4))
        for m in _NAMED_LABEL.finditer(query)
    )


def caption_labels(text: str) -> frozenset[tuple[str, str]]:
    """The labels of the captions a passage holds at the start of a line ("Figure 1: CMB spectra ...")."""
    return frozenset(_label(m.group(1), m.group(2)) for m in _CAPTION_OPENING.finditer(text))


_ABOUT_CITATIONS = re.compile(r"\b(cit(e|es|ed|ing|ation|ations)|referenc\w*|bibliograph\w*)\b|引用|参考文献", re.I)


def about_citations(query: str) -> bool:
    """True when the question is about citations or references (reference lists are then evidence too)."""
    return bool(_ABOUT_CITATIONS.search(query))
