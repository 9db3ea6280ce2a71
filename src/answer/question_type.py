"""What kind of fact a question asks for, read from general signals of its wording (English and Chinese).

The extractive answer uses it to prefer sentences of the right shape: a quantity near the question's words
for "how many", a named thing (capitalised or an acronym) for "which dataset", a reason for "why", and so
on. A question may ask for several kinds at once ("how many seeds, and whose index?"); each is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache


class Ask(StrEnum):
    """A kind of fact a question asks for."""

    NUMBER = "number"  # a quantity, count, percentage, score, size, duration
    ENTITY = "entity"  # a named thing: dataset, model, method, tool, place
    PERSON = "person"  # who did something
    DEFINITION = "definition"  # what something is
    COMPARISON = "comparison"  # how two things compare
    REASON = "reason"  # why
    PROCEDURE = "procedure"  # how something is done
    YESNO = "yesno"  # whether
    LIMITATION = "limitation"  # what a method cannot do, what its authors concede
    ADVANTAGE = "advantage"  # what a method gains: what it allows, saves or does better


# Nouns that name a measured quantity: "what accuracy", "which f-measure", "the error rate".
_MEASURE = (
    r"accuracy|accuracies|precision|recall|f-?measures?|f1|f-?scores?|scores?|bleu|rouge|perplexity|error(?: rate)?s?|"
    r"rates?|parameters?|hyperparameters?|percentage|percent|proportion|share|fraction|ratio|number|count|amount|size|length|duration|"
    r"speed(?:-?up)?|latency|throughput|overhead|cost|value|values|depth|resolution|frame rate|temperature|"
    r"concentration|content|dose|weight|mass|width|height|capacity|correlation|coefficient|difference|gain|"
    r"improvement|reduction|margin|probability|frequency|threshold|budget|mean|average|median|total|"
    r"(?:running |completion |execution |training |response )?time|runtime|memory|bandwidth"
)
_EN_NUMBER = re.compile(
    rf"\bhow (?:many|much|large|long|big|fast|slow|often|high|low|small|far|old|deep|wide|accurate|well|good)\b"
    # "how satisfied", "how effective": a degree, usually stated as a figure
    rf"|\bhow (?!to\b)[a-z]+(?:ed|ive|ful|ous|ent|ant|able|ible)\b"
    rf"|\b(?:what|which)\s+(?:(?:is|are|was|were)\s+(?:the|its|their)\s+)?(?:[\w'’-]+\s+){{0,5}}?(?:{_MEASURE})\b"
    rf"|\bby (?:what|how much)\b|\bwhat (?:share|fraction|proportion|percentage)\b"
    # "what log-loss does it get", "what mIoU does it reach": a measure, whatever its name, is a figure
    rf"|\bwhat\s+(?:[\w'’-]+\s+){{1,6}}?(?:does|do|did)\s+.+\b(?:reach|achieve|attain|obtain|score|get|gets|got)\b"
    # "give the exact figure", "report the value": a request for a figure, whatever the question before it asks
    rf"|\b(?:give|state|report|quote|provide|name)\s+(?:the|its|their|an?)\s+(?:exact\s+|precise\s+)?"
    rf"(?:figures?|numbers?|values?|counts?|amounts?|percentages?)\b|\bexact (?:figures?|numbers?|values?)\b"
    # "what input dimension N was used", "which learning rate η": a quantity named by its symbol has a value
    rf"|\b(?:what|which)\s+(?:[\w'’-]+\s+){{0,4}}?(?![aAI]\b)(?:[A-Za-z]|[α-ωΑ-Ω])(?:_\w+)?\s+"
    rf"(?:was|were|is|are|did|does|do|has|had|and|used|of|for|in|on)\b"
    # "above what scale", "at what temperature", "up to what size": a threshold or a setting, stated as a value
    rf"|\b(?:above|below|at|over|under|beyond|up to|down to|within)\s+what\b(?!\s+(?:stage|step|point|phase)s?\b)",
    re.I,
)
# 多少 how many/much, 几 + measure word (not 几乎 "almost"), 多大/多长/多久/多高/多快/多远, 百分之 percent, 比例 ratio.
_ZH_NUMBER = re.compile(
    r"多少|几(?!乎)[\u4e00-\u9fff]|多[大长久高快远重宽深]|百分|比例|比率|倍|准确率|精度|召回率|得分|分数|数量|数目|规模|含量|"
    r"浓度|速度|延迟|吞吐量|误差|错误率|平均|均值|时长|大小"
)
_EN_ENTITY = re.compile(
    r"\b(?:which|what|whose)\s+(?:[\w-]+\s+){0,2}?(?:data ?sets?|corpus|corpora|benchmarks?|models?|methods?|"
    r"approach(?:es)?|algorithms?|techniques?|tools?|systems?|frameworks?|languages?|programs?|software|"
    r"packages?|libraries|library|modules?|components?|architectures?|baselines?|metrics?|measures?|features?|"
    r"tasks?|settings?|notions?|principles?|inhibitors?|compounds?|materials?|countries|country|cities|city|"
    r"institutions?|hospitals?|organi[sz]ations?|compan(?:y|ies)|index(?:es)?|infrastructure|hardware|optimi[sz]er|"
    r"functions?|layouts?|structures?|distributions?|loss(?:es)?|encoders?|decoders?|networks?|kinds?|types?|names?)\b"
    r"|\bwho\b|\bwhose\b|\bwhere\b|\bname[sd]?\b|\bwhich\b",
    re.I,
)
# 哪 which, 谁 who, 什么 + noun what (not 为什么 why, 什么是 what is), 何种 what kind, 何处 where (not 如何处理).
_ZH_ENTITY = re.compile(
    r"哪[个些种类里儿一两三几位家款]?|谁|(?<![为是])什么(?!是)[\u4e00-\u9fff]{0,4}|名称|名字|何种|(?<!如)何处"
)
_EN_DEFINITION = re.compile(
    r"^\s*(?:what|who)\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?[\w\"'“-]+(?:\s+[\w\"'”-]+){0,4}\s*\??\s*$"
    r"|\bdefin(?:e|ed|es|ition)\b|\bwhat (?:does|do) [\w\s\"'“”-]+ (?:mean|stand for|refer to)\b|\bmeaning of\b",
    re.I,
)
_ZH_DEFINITION = re.compile(r"什么是|是什么|指什么|定义|含义|意思")
# "how does X change / affect / improve Y": the effect of one thing on another, a before and after.
_EFFECT = (
    r"\bhow (?:does|do|did|would|will|much does|much do|much did)\b.*\b(?:change|affect|impact|influence|improve|alter"
    r"|shift|modify|degrade|reduce|increase|lower|raise)\b"
)
_EN_COMPARISON = re.compile(
    # not inside a compound: a "squared-error-versus-rank" plot compares nothing the question asks about
    r"\bcompar(?:e|ed|es|ing|ison)\b|(?<!-)\bversus\b(?!-)|(?<!-)\bvs\.?\b(?!-)|\bthan\b|\bdiffer(?:s|ence|ent)?\b|\boutperform"
    r"|\b(?:better|worse|higher|lower|faster|slower|larger|smaller|more|less)\b.*\b(?:than|or)\b|\bbetween\b.*\band\b"
    r"|" + _EFFECT,
    re.I,
)
_EFFECT_ASKED = re.compile(_EFFECT, re.I)
_ZH_COMPARISON = re.compile(r"比较|对比|相比|相较|优于|高出|低于|高于|区别|差异|不同|还是|比[^例率较]")
_EN_REASON = re.compile(
    r"\bwhy\b|\b(?:the|what|which|main) reasons?\b|\bwhat (?:causes?|caused|explains?|motivat)"
    r"|\bmotivation\b|\bpurpose\b",
    re.I,
)
_ZH_REASON = re.compile(r"为什么|为何|原因|理由|动机|目的")
_EN_PROCEDURE = re.compile(
    r"(?:^|[,:;]\s*|\band\s+)how (?:do|does|did|is|are|was|were|can|could|should|would)\b"
    r"|\bwhat (?:steps?|procedure|process)\b"
    r"|\bin what way\b|\bwhat (?:parameters|settings|configuration)\b",
    re.I,
)
_ZH_PROCEDURE = re.compile(r"如何|怎么|怎样|步骤|流程|过程|方式")
_EN_YESNO = re.compile(
    r"^\s*(?:does|do|did|is|are|was|were|can|could|has|have|had|will|would|should)\b"
    r"|[,:;]\s*(?:does|do|did|is|are|was|were|can|has|have)\s+(?:it|they|this|these|the|its|their|an?)\b",
    re.I,
)
_ZH_YESNO = re.compile(r"是否|吗[？?]?\s*$|有没有|能否|可否|会不会|是不是")
_EN_LIMITATION = re.compile(
    r"\blimit(?:ation|ations|ing)?s?\b|\bdrawbacks?\b|\bweakness(?:es)?\b|\bshortcomings?\b|\bdisadvantages?\b"
    r"|\bcaveats?\b|\bfails?\b|\bcannot\b|\bdoes not (?:work|handle)\b",
    re.I,
)
_ZH_LIMITATION = re.compile(r"局限|不足|缺点|缺陷|弱点|限制|失败")
# "what is its advantage", "the benefits of", "what does X gain": not "disadvantages" (a limitation)
_EN_ADVANTAGE = re.compile(r"\badvantages?\b|\bbenefits?\b|\bstrengths?\b|\bwhat does [\w\s-]+ (?:gain|offer)\b", re.I)
_ZH_ADVANTAGE = re.compile(r"优点|优势|好处|长处")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# A part that asks something: a question word, a Chinese question word or particle, or a question mark.
_ASKING = re.compile(
    r"\b(?:how|what|which|who|whose|where|why|when|whether|does|do|did|is|are|was|were|can|list|name|describe)\b"
    r"|多少|几|哪|谁|什么|为什么|为何|如何|怎么|怎样|是否|吗|呢|[?？]",
    re.I,
)
# Where a question asking several things divides: "?", "；", ", and how", "and which", "以及", "？".
_PARTS = re.compile(
    r"[?？;；]\s*|,?\s+and\s+(?=(?:(?:with|in|into|on|from|by|at|for|to|of)\s+)?(?:how|what|which|who|whose|where|why|when)\b)"
    # ", which was used for the task" is a relative clause, not a second question
    r"|[,:]\s*(?=(?:how|what|which|who|whose|where|why|when)\b)"
    r"(?!which\s+(?:was|were|is|are|has|have|had|can|could|would|will|may|might)\b)|以及|并且|另外",
    re.I,
)


# What is counted: the words after "how many" / "the number of" up to the verb ("how many natural images are").
_EN_COUNTED = re.compile(
    r"\b(?:how (?:many|much)|(?:the |what )?number of|by how many)\s+"
    # "how many of the 31,003,946 sites": what is counted comes after the whole it is counted in
    r"(?:of (?:the|these|those|its|their|our|all)\s+(?:[\d,.]+\s+)?)?((?:[\w-]+\s+){0,3}?[\w-]+)"
    r"(?=\s+(?:do|does|did|are|is|were|was|have|has|had|must|can|could|would|should|will|in|of|on|for|to|from|"
    r"per|with|and|or|at|took|take|make|made|did|does|\w+ed)\b|\s*[,?;:)]|$)",
    re.I,
)
# 多少 / 几 + an optional measure word (个, 项, 张, ...) + the counted noun: 多少项研究 -> 研究, 几个数据集 -> 数据集.
_ZH_COUNTED = re.compile(r"(?:多少|几(?!乎))[个项张条篇次种位名台层份块组轮套所家只本]?([\u4e00-\u9fff]{1,6})")
_COUNTED_SKIP = frozenset(str.split("distinct different unique separate total more additional other such"))


# What a number question measures, when its words say ("how long", "what speedup", "how much memory"): the quantity
# that answers it has a unit of that kind (see `quantities.dimension`).
_DIMENSION_ASKED = {
    "time": re.compile(
        r"\bhow long\b|\bhow much time\b|\bhow many (?:seconds|minutes|hours|days|weeks|months|years)\b"
        r"|\b(?:duration|runtime|running time|latency|delay|time (?:it|they|did|does|do) take)\b"
        r"|多久|多长时间|耗时|时长",
        re.I,
    ),
    "ratio": re.compile(
        r"\bspeed-?ups?\b|\bhow many times\b|\btimes (?:faster|slower|more|less|larger|smaller)\b|\bfold\b"
        r"|\bby what factor\b|倍|加速比",
        re.I,
    ),
    "percent": re.compile(r"\bpercent(?:age)?s?\b|\bwhat (?:share|fraction|proportion)\b|%|百分", re.I),
    "data": re.compile(
        r"\bhow much (?:memory|storage|disk|data|space)\b|\b(?:memory|storage) (?:footprint|size)\b|内存", re.I
    ),
    "temperature": re.compile(r"\btemperatures?\b|°C|温度", re.I),
}


@dataclass(frozen=True)
class QuestionType:
    """The kinds of fact a question asks for (empty: no clear signal), the parts it divides into, and what a
    number question counts ("how many seed sites" -> "seed sites"; Chinese in the question's own words)."""

    asks: frozenset[Ask]
    parts: tuple[str, ...]
    chinese: bool
    counted: tuple[str, ...] = ()
    dimensions: frozenset[str] = frozenset()  # what the asked quantity measures: "time", "ratio", "percent", ...


# A title or name quoted in the question ('Teaching Small Language Models to Reason', 《...》) says which paper,
# not what is asked: "Reason" or "Failure" in it is no "why" or "limitation" question.
QUOTED_TITLE = re.compile(r"'[^']{4,}'|\"[^\"]{4,}\"|“[^”]{4,}”|‘[^’]{4,}’|《[^》]+》")


def _asks_of(text: str) -> set[Ask]:
    """The kinds of fact one question (or one part of it) asks for."""
    text = QUOTED_TITLE.sub(" ", text)
    found: set[Ask] = set()
    checks = [
        (Ask.NUMBER, _EN_NUMBER, _ZH_NUMBER),
        (Ask.DEFINITION, _EN_DEFINITION, _ZH_DEFINITION),
        (Ask.COMPARISON, _EN_COMPARISON, _ZH_COMPARISON),
        (Ask.REASON, _EN_REASON, _ZH_REASON),
        (Ask.PROCEDURE, _EN_PROCEDURE, _ZH_PROCEDURE),
        (Ask.YESNO, _EN_YESNO, _ZH_YESNO),
        (Ask.LIMITATION, _EN_LIMITATION, _ZH_LIMITATION),
        (Ask.ADVANTAGE, _EN_ADVANTAGE, _ZH_ADVANTAGE),
    ]
    for ask, english, chinese in checks:
        if english.search(text) or chinese.search(text):
            found.add(ask)
    # "how many" / "what accuracy" ask for a number, not for a named thing, even when "which" or "what" is there.
    if (_EN_ENTITY.search(text) or _ZH_ENTITY.search(text)) and not (
        Ask.NUMBER in found and not re.search(r"\b(?:which|who|whose|where)\b|哪|谁", text, re.I)
    ):
        found.add(Ask.ENTITY)
    if Ask.NUMBER in found:
        found -= {Ask.PROCEDURE, Ask.DEFINITION}  # "how many", "what is the F1" ask for a figure
    if re.search(r"\bwho(?:m|se)?\b|谁", text, re.I):
        found.add(Ask.PERSON)
        if not re.search(r"\b(?:which|what|where)\b|哪|什么", text, re.I):
            found.discard(Ask.ENTITY)
    if _EFFECT_ASKED.search(text):
        found.discard(Ask.PROCEDURE)  # "how does G-pooling change the mIoU" asks for the change, not a method
    if found & {Ask.LIMITATION, Ask.ADVANTAGE}:
        found.discard(Ask.DEFINITION)  # "what are its limitations", "局限性是什么", "what is its advantage"
    if Ask.DEFINITION in found and Ask.ENTITY in found and not re.search(r"\bwhich\b|哪", text, re.I):
        found.discard(Ask.ENTITY)  # "what is X?" asks what it is, not for another name
    return found


def _asking(piece: str) -> bool:
    return bool(_ASKING.search(piece) or _asks_of(piece))


@lru_cache(maxsize=1024)  # one question is read by the extracted answer, its parts and the grounding check
def question_type(query: str) -> QuestionType:
    """What `query` asks for: each part's kinds together, e.g. {NUMBER, ENTITY} for "how many seed sites does
    it need, and whose web index were the experiments run on?"."""
    # Quoted titles are set aside while splitting: "'Programmes: Why They Work'" is not a second question.
    quoted: list[str] = []

    def hold(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    held = QUOTED_TITLE.sub(hold, query)
    pieces = [
        re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], p).strip()
        for p in _PARTS.split(held)
        if p and len(p.strip()) > 2
    ]
    # A piece that asks nothing ("For multiple disks, which layout ...") belongs to the part after it.
    merged: list[str] = []
    for piece in pieces:
        if merged and not _asking(merged[-1]):
            merged[-1] = f"{merged[-1]}, {piece}"
        else:
            merged.append(piece)
    if len(merged) > 1 and not _asking(merged[-1]):
        merged[-2:] = [f"{merged[-2]}, {merged[-1]}"]
    parts = tuple(merged)
    asks: set[Ask] = set()
    for part in parts or (query,):
        asks |= _asks_of(part)
    counted = [m.group(1) for m in _EN_COUNTED.finditer(query)] + [m.group(1) for m in _ZH_COUNTED.finditer(query)]
    counted = [" ".join(w for w in c.split() if w.lower() not in _COUNTED_SKIP) or c for c in counted]
    unquoted = QUOTED_TITLE.sub(" ", query)
    dimensions = frozenset(name for name, asked in _DIMENSION_ASKED.items() if asked.search(unquoted))
    return QuestionType(
        asks=frozenset(asks),
        parts=parts or (query,),
        chinese=bool(_CJK.search(query)),
        counted=tuple(counted),
        dimensions=dimensions if Ask.NUMBER in asks else frozenset(),
    )
