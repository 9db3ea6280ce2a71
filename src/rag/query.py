"""What a question asks, in words a BM25 index of English papers can match.

- `focus`: once a paper is located, the words that named it (its title, name, authors) say nothing about
  where in the paper the answer is; they are dropped from the passage query.
- `expand`: a question in Chinese about English papers carries English names and numbers but its meaning is
  in Chinese; common research vocabulary is added in English so BM25 can match it. `translate` adds CC-CEDICT's
  English for the rest, for passage searches. (An embedder that knows both languages makes this unnecessary:
  `embedding.model` is a setting.)
"""

from __future__ import annotations

import re
import unicodedata

from .cues import fold
from .dictionary import english_words

# Common research vocabulary, Chinese -> English (general terms, not a paper's own words).
_GLOSSARY: dict[str, str] = {
    # asking
    "多少": "how many number",
    "多大": "size large",
    "多长": "long duration",
    "哪些": "which",
    "哪个": "which",
    "什么": "what",
    "为什么": "why",
    "如何": "how",
    "怎么": "how",
    "是否": "whether",
    "分别": "respectively",
    "平均": "average mean",
    "默认": "default",
    "最小": "minimum",
    "最大": "maximum",
    "提升": "improve improvement increase",
    "提高": "improve improvement increase",
    "降低": "reduce decrease lower",
    "减少": "reduce decrease",
    "增加": "increase",
    "高出": "higher more than",
    "优于": "outperform better than",
    "比较": "compare comparison",
    "对比": "compare comparison",
    "超过": "exceed outperform",
    # the paper
    "论文": "paper",
    "作者": "authors",
    "摘要": "abstract",
    "引言": "introduction",
    "方法": "method approach",
    "模型": "model",
    "算法": "algorithm",
    "框架": "framework",
    "系统": "system",
    "架构": "architecture",
    "结构": "structure",
    "模块": "module",
    "实现": "implementation implemented",
    "实验": "experiments experimental",
    "结果": "results",
    "结论": "conclusion",
    "局限": "limitation limitations",
    "不足": "limitation shortcoming",
    "缺点": "drawback disadvantage",
    "未来工作": "future work",
    "相关工作": "related work",
    "贡献": "contribution",
    # data and evaluation
    "数据集": "dataset datasets",
    "数据": "data",
    "样本": "samples",
    "文档": "documents",
    "图像": "images",
    "张图像": "images",
    "句子": "sentences",
    "单词": "words",
    "词性标注": "part-of-speech tagging",
    "标注": "annotated annotation labeled",
    "训练": "training trained train",
    "测试": "test testing",
    "验证": "validation",
    "评估": "evaluation evaluate",
    "评价": "evaluation",
    "准确率": "accuracy",
    "精度": "precision accuracy",
    "召回率": "recall",
    "误差": "error",
    "错误率": "error rate",
    "性能": "performance",
    "效果": "effect performance",
    "速度": "speed",
    "开销": "overhead cost",
    "时间": "time",
    "内存": "memory",
    "参数": "parameters",
    "超参数": "hyperparameters",
    "基线": "baseline",
    "消融": "ablation",
    "指标": "metric",
    "显著": "significant",
    "统计": "statistical",
    "分析": "analysis",
    "基准": "benchmark",
    "中文": "Chinese",
    "英文": "English",
    "英语": "English",
    "德语": "German",
    "语言": "language",
    # computing
    "检索": "retrieval",
    "段落": "passage",
    "排序": "ranking",
    "搜索": "search",
    "网页": "web pages",
    "索引": "index",
    "存储": "storage store",
    "分布式": "distributed",
    "并行": "parallel",
    "集群": "cluster",
    "服务器": "server",
    "编译": "compilation compile",
    "执行": "execution executed",
    "神经网络": "neural network",
    "卷积": "convolutional",
    "深度学习": "deep learning",
    "机器学习": "machine learning",
    "无监督": "unsupervised",
    "监督": "supervised",
    "优化器": "optimizer",
    "学习率": "learning rate",
    "批大小": "batch size",
    "迭代": "iterations",
    "位置": "location position",
    "表格": "table",
    "语义": "semantic",
    "句法": "syntactic",
    "解析": "parsing",
    "抽取": "extraction",
    "问答": "question answering",
    "推理": "reasoning inference",
    "图": "graph",
    # sciences
    "暗物质": "dark matter",
    "暗能量": "dark energy",
    "宇宙": "universe cosmological",
    "加速": "acceleration speedup",
    "引力": "gravity",
    "粒子": "particles",
    "颗粒": "particles",
    "量子": "quantum",
    "材料": "materials",
    "复合材料": "composites",
    "合金": "alloy",
    "含量": "content",
    "合成": "synthesis",
    "蛋白质": "protein",
    "酶": "enzyme",
    "抑制剂": "inhibitor inhibitors",
    "衍射": "diffraction",
    "晶体": "crystal",
    "分子": "molecular",
    "基因": "gene",
    "细胞": "cell",
    "患者": "patients",
    "受试者": "subjects participants",
    "参与者": "participants",
    "研究": "study",
    "荟萃分析": "meta-analysis",
    "综述": "review survey",
    "随机对照试验": "randomised controlled trials",
    "治疗": "treatment therapy",
    "根除": "eradication",
    "感染": "infection",
    "贫血": "anaemia anemia",
    "血红蛋白": "haemoglobin hemoglobin",
    "心力衰竭": "heart failure",
    "医院": "hospital",
    "访谈": "interviews",
    "焦点小组": "focus groups",
    "气候": "climate",
    "森林": "forest afforestation",
    "流量": "flow",
    "运动": "motor movement",
    "记忆": "memory",
    # more of the common vocabulary of papers
    "假设": "hypothesis assumption",
    "定理": "theorem",
    "证明": "proof",
    "引理": "lemma",
    "复杂度": "complexity",
    "收敛": "convergence converge",
    "梯度": "gradient",
    "损失函数": "loss function",
    "正则化": "regularization",
    "泛化": "generalization",
    "过拟合": "overfitting",
    "嵌入": "embedding",
    "向量": "vector",
    "注意力": "attention",
    "编码器": "encoder",
    "解码器": "decoder",
    "预训练": "pretraining pre-trained",
    "微调": "fine-tuning fine-tuned",
    "大语言模型": "large language model",
    "语言模型": "language model",
    "知识图谱": "knowledge graph",
    "强化学习": "reinforcement learning",
    "聚类": "clustering",
    "分类": "classification",
    "回归": "regression",
    "分割": "segmentation",
    "检测": "detection",
    "识别": "recognition",
    "翻译": "translation",
    "摘要生成": "summarization",
    "对话": "dialogue",
    "推荐": "recommendation",
    "隐私": "privacy",
    "安全": "security",
    "网络": "network",
    "协议": "protocol",
    "延迟": "latency delay",
    "吞吐量": "throughput",
    "带宽": "bandwidth",
    "能耗": "energy consumption",
    "数据库": "database",
    "查询": "query",
    "事务": "transaction",
    "缓存": "cache",
    "磁盘": "disk",
    "视频": "video",
    "音频": "audio",
    "语音": "speech",
    "传感器": "sensor",
    "机器人": "robot robotic",
    "控制": "control",
    "仿真": "simulation",
    "温度": "temperature",
    "压力": "pressure",
    "浓度": "concentration",
    "样品": "samples",
    "测量": "measurement",
    "光谱": "spectroscopy spectra",
    "显微镜": "microscopy",
    "催化剂": "catalyst",
    "电池": "battery",
    "化学": "chemical",
    "物理": "physics",
    "生物": "biological",
    "药物": "drug",
    "临床": "clinical",
    "疾病": "disease",
    "症状": "symptoms",
    "死亡率": "mortality",
    "风险": "risk",
    "剂量": "dose",
    "问卷": "questionnaire survey",
    "调查": "survey",
    "教育": "education",
    "学生": "students",
    "教师": "teacher",
    "经济": "economic",
    "政策": "policy",
    "城市": "city urban",
    "土壤": "soil",
    "水": "water",
    "植物": "plants",
    "气温": "temperature",
    "降水": "precipitation rainfall",
    "地震": "earthquake",
}
_KEYS = sorted(_GLOSSARY, key=len, reverse=True)


def glossary_keys() -> list[str]:
    """The Chinese terms the glossary translates, longest first."""
    return list(_KEYS)


_CJK = re.compile(r"[\u4e00-\u9fff]")


def has_chinese(text: str) -> bool:
    """Whether `text` holds Chinese characters."""
    return _CJK.search(text) is not None


def expand(query: str) -> str:
    """The question with English words for the Chinese research vocabulary it uses (unchanged otherwise)."""
    found, _ = _glossary(query)
    return f"{query} {' '.join(found)}" if found else query


def translate(query: str) -> str:
    """`expand`, and English from CC-CEDICT for the Chinese the glossary does not cover.

    For searching passages: the dictionary's senses are many and not all apt, which costs a passage search
    little but would make a routing or coverage check see topics the question does not have.
    """
    found, rest = _glossary(query)
    if _CJK.search(rest) and (english := english_words(rest)):
        found.append(english)
    # "χ²", "ﬁne-tuning", "ＧＰＵ": the text layer of a PDF often has the compatibility form ("χ2", "fine-tuning").
    asked = set(re.findall(r"\w+", query))
    folded = re.findall(r"\w+", unicodedata.normalize("NFKC", query))
    found += [w for w in dict.fromkeys(folded) if w not in asked and not _CJK.search(w)]
    return f"{query} {' '.join(found)}" if found else query


def _glossary(query: str) -> tuple[list[str], str]:
    """The glossary's English for the question's Chinese terms, and the question without those terms."""
    found: list[str] = []
    rest = query
    if _CJK.search(query):
        for key in _KEYS:  # longest first: 复合材料 before 材料
            if key in rest:
                found.append(_GLOSSARY[key])
                rest = rest.replace(key, " ")
    return found, rest


def inflect(query: str) -> str:
    """The question with the other common forms of its words ("trained" -> "train training"), so a BM25
    index without stemming finds "training data" for "trained on". Names (capitalised) are left alone."""
    extra: list[str] = []
    for word in dict.fromkeys(re.findall(r"(?<![\w-])[a-z]{4,}(?![\w-])", query)):
        if word not in _COMMON:
            extra += [v for v in dict.fromkeys(_forms(word)) if v != word and v not in extra]
    return f"{query} {' '.join(extra)}" if extra else query


def _forms(word: str) -> list[str]:
    # Greek plurals: "analyses" <-> "analysis", "hypotheses" <-> "hypothesis".
    if word.endswith(("yses", "eses")):
        return [word[:-2] + "is"]
    if word.endswith(("ysis", "esis")):
        return [word[:-2] + "es"]
    bases = [word]
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            stem = word[: -len(suffix)]
            bases = [stem, stem + "e"] + ([stem[:-1]] if len(stem) > 3 and stem[-1] == stem[-2] else [])
            if suffix == "es" and stem.endswith("i"):
                bases = [stem[:-1] + "y"]
            break
    if word.endswith("ies"):
        bases = [word[:-3] + "y"]
    forms: list[str] = []
    for b in bases:
        if b.endswith("y"):
            forms += [b, b[:-1] + "ies", b[:-1] + "ied"]
        elif b.endswith("e"):
            forms += [b, b + "s", b + "d", b[:-1] + "ing"]
        else:
            forms += [b, b + "s", b + "ed", b + "ing"]
    return forms


_COMMON = frozenset(
    str.split(
        """many much more most what which with from that this these those have has been were does into than then
        them they their there when where while about also only such each other some very well between through"""
    )
)


def focus(query: str, identifying: list[str]) -> str:
    """The question with the words that named its paper weighed down: every other word counts twice (BM25
    counts a query word as often as it is given), so "46 subjects" outweighs "catch trials" in a question
    about the paper on catch trials, while the title words still favour the passages that restate them."""
    named = {w.lower() for phrase in identifying for w in re.findall(r"[\w-]+", fold(phrase))}
    named |= {"paper", "study", "article", "authors", "et", "al"}
    words = re.findall(r"\S+", query)
    rest = [w for w in words if re.sub(r"[^\w-]", "", fold(w)).lower() not in named]
    return " ".join([*words, *rest]) if rest else query
