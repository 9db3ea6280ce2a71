"""Heading detection on PDFs written here with PyMuPDF: formulas, Chinese papers, papers without headings."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from paperscope.parser import SectionCategory, parse_pdf
from paperscope.parser.headings import _fits

Cat = SectionCategory
PARAGRAPH = (
    "Retrieval augmented generation combines a retriever with a language model so that answers rest on "
    "passages from a collection. We study how the structure of scientific papers helps such systems find "
    "the passage that answers a question, and we measure recall on real papers from many publishers. "
)
ZH_PARAGRAPH = (
    "检索增强生成方法把外部知识库中的相关段落与大语言模型结合，从而提高回答的准确性。本文提出一种结构感知的检索方法，"
    "利用论文的章节结构来组织文本块，并在检索时按照章节类别进行过滤。实验表明，该方法在多个数据集上显著提升了召回率。"
)


class Writer:
    """Lays out a paper top to bottom, one block after the other, new pages as needed."""

    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = self.doc.new_page()
        self.y = 72.0

    def block(self, text: str, size: float = 10, font: str = "helv", align: int = 0) -> None:
        if self.y > 700:
            self.page, self.y = self.doc.new_page(), 72.0
        rect = pymupdf.Rect(72, self.y, 523, self.y + 300)
        left = self.page.insert_textbox(rect, text, fontsize=size, fontname=font, align=align)
        self.y += 300 - left + 0.9 * size

    def save(self, path: Path, title: str = "") -> Path:
        if title:
            self.doc.set_metadata({"title": title})
        self.doc.save(path)
        return path


def test_display_equations_are_never_headings(tmp_path: Path) -> None:
    """Short centred formulas, bold or large, between paragraphs: no heading, no text filed under one."""
    w = Writer()
    w.block("Solving Quadratics in Closed Form", 16, "hebo")
    w.block("1 Introduction", 12, "hebo")
    w.block(PARAGRAPH * 2)
    for formula in ("x = 2", "b² - 4ac", "a · b < c", "f(x) = ax + b"):
        w.block(formula, 12, "hebo", align=1)
        w.block(PARAGRAPH)
    w.block("2 Method", 12, "hebo")
    w.block(PARAGRAPH * 2)
    paper = parse_pdf(w.save(tmp_path / "formulas.pdf"))
    assert [s.title for s in paper.sections if s.printed] == ["1 Introduction", "2 Method"]
    assert any("b² - 4ac" in p.text for p in paper.paragraphs if paper.sections[p.section_id].title == "1 Introduction")


def test_chinese_paper_headings_and_categories(tmp_path: Path) -> None:
    w = Writer()
    w.block("面向学术论文的结构感知检索增强生成", 18, "china-ss")
    w.block("张三  李四", 11, "china-s")
    w.block("摘要", 13, "china-ss")
    w.block(ZH_PARAGRAPH, 10.5, "china-s")
    for heading in ("1 引言", "2 相关工作", "3 方法", "3.1 文本分块", "4 实验", "5 结论", "参考文献"):
        w.block(heading, 13 if "." not in heading else 11.5, "china-ss")
        w.block(ZH_PARAGRAPH, 10.5, "china-s")
    paper = parse_pdf(w.save(tmp_path / "zh.pdf", title="面向学术论文的结构感知检索增强生成"))
    assert paper.title == "面向学术论文的结构感知检索增强生成"
    assert paper.authors == ["张三", "李四"]
    got = {s.title: (s.category, s.level) for s in paper.sections}
    assert got["摘要"] == (Cat.ABSTRACT, 0)
    assert got["1 引言"] == (Cat.INTRODUCTION, 0)
    assert got["2 相关工作"] == (Cat.RELATED_WORK, 0)
    assert got["3.1 文本分块"] == (Cat.METHOD, 1)
    assert got["4 实验"][0] is Cat.EVALUATION and got["5 结论"][0] is Cat.CONCLUSION
    assert got["参考文献"][0] is Cat.OTHER
    assert paper.abstract.startswith("检索增强生成")


def test_paper_without_headings_keeps_abstract_and_introduction(tmp_path: Path) -> None:
    """Nothing stands out: the abstract and an Introduction where the text says so, the rest as Text."""
    w = Writer()
    w.block("A Study Without Headings", 16, "helv")
    w.block("Abstract: " + PARAGRAPH * 2)
    w.block("Introduction. " + PARAGRAPH)
    for _ in range(12):
        w.block(PARAGRAPH)
    paper = parse_pdf(w.save(tmp_path / "flat.pdf"))
    assert not paper.structure_found
    assert paper.abstract.startswith("Retrieval augmented generation")
    cats = [(s.title, s.category, s.printed) for s in paper.sections]
    assert cats[0] == ("Abstract", Cat.ABSTRACT, False)
    assert ("Introduction", Cat.INTRODUCTION, False) in cats
    assert sum(len(p.text) for p in paper.paragraphs) > 12 * len(PARAGRAPH) * 0.9  # no text lost


@pytest.mark.parametrize(
    ("stack", "path", "fits"),
    [
        ([], (1,), True),
        ([3], (3, 1), True),
        ([3, 2], (3, 3), True),
        ([3, 2], (4,), True),
        ([3, 2], (4, 1), True),  # "4" was missed
        ([3, 2, 1], (3, 3), True),
        ([3, 2], (3, 1), False),
        ([4, 3], (1,), False),  # a numbered list inside section 4
        ([2], (7,), False),
        ([7], (101,), True),  # appendix A after the numbered sections
        ([101], (102,), True),
        ([7], (103,), False),
    ],
)
def test_numbering_sequence(stack: list[int], path: tuple[int, ...], fits: bool) -> None:
    assert _fits(stack, path) is fits


def test_algorithm_and_listing_captions_are_never_headings(tmp_path: Path) -> None:
    """ "Algorithm 4 FIDD" in bold above its steps (algorithm2e, algorithmic) labels a float, as "Listing 2" does."""
    w = Writer()
    w.block("Fast Iterative Document Decoding", 16, "hebo")
    w.block("1 Introduction", 12, "hebo")
    w.block(PARAGRAPH * 2)
    w.block("2 Method", 12, "hebo")
    w.block(PARAGRAPH)
    for label in ("Algorithm 4 FIDD", "Listing 2 Decoder loop"):
        w.block(label, 12, "hebo")
        w.block("Input: a document D and a budget k\nfor each page p in D do\n    decode p\nend for")
        w.block(PARAGRAPH)
    w.block("3 Results", 12, "hebo")
    w.block(PARAGRAPH * 2)
    paper = parse_pdf(w.save(tmp_path / "algorithms.pdf"))
    assert [s.title for s in paper.sections if s.printed] == ["1 Introduction", "2 Method", "3 Results"]


def test_an_outline_that_leaves_out_a_heading_does_not_hide_it(tmp_path: Path) -> None:
    """LaTeX's outline omits unnumbered sections (an appendix set with \\section*): the page shows them in the type
    of the headings the outline lists, and they are kept with them."""
    w = Writer()
    w.block("Decoding Documents Quickly", 16, "hebo")
    for heading in ("1 Introduction", "2 Method", "3 Results"):
        w.block(heading, 12, "hebo")
        w.block(PARAGRAPH * 2)
    w.block("Proofs of the Lemmas", 12, "hebo")
    w.block(PARAGRAPH * 2)
    path = w.save(tmp_path / "outline.pdf")
    doc = pymupdf.open(path)
    doc.set_toc([[1, "1 Introduction", 1], [1, "2 Method", 1], [1, "3 Results", 1]])
    doc.save(tmp_path / "with-outline.pdf")
    paper = parse_pdf(tmp_path / "with-outline.pdf")
    titles = [s.title for s in paper.sections if s.printed]
    assert titles == ["1 Introduction", "2 Method", "3 Results", "Proofs of the Lemmas"]
