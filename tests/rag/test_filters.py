"""SearchFilter: validation, expression rendering, and escaping checked against a real Milvus Lite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from pymilvus import DataType, MilvusClient

from paperscope.parser.models import SectionCategory
from paperscope.rag.filters import (
    MATCH_NOTHING,
    SearchFilter,
    and_exprs,
    parse_category,
    quote_string,
    validate_doc_id,
)

INJECTION = 'x" or doc_id != "'
UUID = "0b9e6f4c-3f0a-5a61-9c44-2f1d8e7a6b10"

# --- validation ------------------------------------------------------------------------------------


def test_defaults_search_body_chunks_only() -> None:
    f = SearchFilter()
    assert f.kinds == ["chunk"]
    assert f.to_expr() == '(kind == "chunk")'
    assert not f.matches_nothing


@pytest.mark.parametrize("doc_id", [UUID, "abc", "a_b-C9", "x" * 64])
def test_valid_doc_ids(doc_id: str) -> None:
    assert validate_doc_id(doc_id) == doc_id
    assert SearchFilter(doc_ids=[doc_id]).doc_ids == [doc_id]


@pytest.mark.parametrize(
    "doc_id",
    [INJECTION, "", "x" * 65, "a b", "a\nb", 'a"', "a'", "a\\b", "a)", "ü", "a;b", "a,b", "[a]", None, 3],
)
def test_invalid_doc_ids_are_rejected(doc_id: object) -> None:
    with pytest.raises(ValidationError, match="doc_id"):
        SearchFilter(doc_ids=[doc_id])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="doc_id"):
        validate_doc_id(doc_id)


def test_injection_is_a_value_error() -> None:
    """pydantic's ValidationError is a ValueError: callers can catch either."""
    with pytest.raises(ValueError):
        SearchFilter(doc_ids=[INJECTION])


def test_doc_ids_are_deduplicated_and_a_single_string_is_accepted() -> None:
    assert SearchFilter(doc_ids=["a", "b", "a"]).doc_ids == ["a", "b"]
    assert SearchFilter(doc_ids="a").doc_ids == ["a"]  # type: ignore[arg-type]


def test_too_many_doc_ids() -> None:
    with pytest.raises(ValidationError, match="at most"):
        SearchFilter(doc_ids=[f"d{i}" for i in range(1025)])


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("METHOD", SectionCategory.METHOD),
        ("method", SectionCategory.METHOD),
        ("related work", SectionCategory.RELATED_WORK),
        ("Related-Work", SectionCategory.RELATED_WORK),
        (2, SectionCategory.METHOD),
        (0, SectionCategory.ABSTRACT),
        (SectionCategory.EVALUATION, SectionCategory.EVALUATION),
    ],
)
def test_categories_by_name_or_id(given: object, expected: SectionCategory) -> None:
    assert parse_category(given) is expected
    assert SearchFilter(categories=[given]).categories == [expected]  # type: ignore[list-item]


@pytest.mark.parametrize("bad", ["METHODS", "", "2", 7, -1, True, 2.0, None, ["METHOD"]])
def test_bad_categories(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_category(bad)
    with pytest.raises(ValidationError):
        SearchFilter(categories=[bad])  # type: ignore[list-item]


@pytest.mark.parametrize("bad", [[], ["chunks"], ["chunk", "x"], [INJECTION], "nope"])
def test_bad_kinds(bad: object) -> None:
    with pytest.raises(ValidationError, match="kind"):
        SearchFilter(kinds=bad)  # type: ignore[arg-type]


def test_years() -> None:
    assert SearchFilter(year_min=2020, year_max=2020).to_expr().count("2020") == 2
    with pytest.raises(ValidationError, match="after"):
        SearchFilter(year_min=2024, year_max=2020)
    with pytest.raises(ValidationError):
        SearchFilter(year_min=-1)
    with pytest.raises(ValidationError):
        SearchFilter(year_max=40000)
    with pytest.raises(ValidationError):
        SearchFilter(year_min="2020 or 1")  # type: ignore[arg-type]


def test_unknown_fields_are_forbidden() -> None:
    with pytest.raises(ValidationError, match="extra"):
        SearchFilter(expr="1 == 1")  # type: ignore[call-arg]


def test_filters_are_immutable() -> None:
    f = SearchFilter(doc_ids=["a"])
    with pytest.raises(ValidationError):
        f.doc_ids = [INJECTION]  # type: ignore[misc]


# --- rendering -------------------------------------------------------------------------------------


def test_full_expression() -> None:
    f = SearchFilter(
        doc_ids=["a", "b"], categories=["METHOD", 3], year_min=2019, year_max=2024, kinds=["chunk", "question"]
    )
    assert f.to_expr() == (
        '(doc_id in ["a", "b"]) and (section_category in [2, 3]) and (conference_year >= 2019) and '
        '(conference_year <= 2024) and (kind in ["chunk", "question"])'
    )
    single = SearchFilter(doc_ids=[UUID], categories=["INTRODUCTION"], exclude_captions=True)
    assert single.to_expr() == (
        f'(doc_id == "{UUID}") and (section_category == 1) and (kind == "chunk") and '
        '((not (exists metadata["is_caption"])) or (metadata["is_caption"] == false))'
    )


def test_raptor_tree_filters() -> None:
    roots = SearchFilter(doc_ids=["a"], kinds=["raptor"], raptor_roots=True)
    assert roots.to_expr() == '(doc_id == "a") and (kind == "raptor") and (metadata["root"] == true)'
    children = SearchFilter(kinds=["chunk", "raptor"], chunk_indexes=[7, 2, 7])
    assert children.chunk_indexes == [2, 7]
    assert children.to_expr() == '(kind in ["chunk", "raptor"]) and (chunk_index in [2, 7])'
    assert children.to_template()[1]["chunk_indexes"] == [2, 7]
    assert SearchFilter(chunk_indexes=[]).to_expr() == MATCH_NOTHING
    for bad in (["3"], [-1], [True], "1,2"):
        with pytest.raises(ValidationError):
            SearchFilter(chunk_indexes=bad)


def test_template_form() -> None:
    f = SearchFilter(doc_ids=["a"], categories=["METHOD"], year_min=2020)
    expr, params = f.to_template()
    assert expr == (
        "(doc_id in {doc_ids}) and (section_category in {categories}) and (conference_year >= {year_min}) "
        "and (kind in {kinds})"
    )
    assert params == {"doc_ids": ["a"], "categories": [2], "year_min": 2020, "kinds": ["chunk"]}


def test_empty_lists_match_nothing() -> None:
    assert SearchFilter(doc_ids=[]).matches_nothing
    assert SearchFilter(categories=[]).matches_nothing
    assert SearchFilter(doc_ids=[]).to_expr() == MATCH_NOTHING
    assert SearchFilter(doc_ids=[]).to_template() == (MATCH_NOTHING, {})


def test_quote_string_escapes() -> None:
    assert quote_string("plain") == '"plain"'
    assert quote_string(INJECTION) == '"x\\" or doc_id != \\""'
    assert quote_string("a\\b\n") == '"a\\\\b\\n"'
    with pytest.raises(ValueError, match="control"):
        quote_string("a\x00b")


def test_bypassing_validation_still_escapes() -> None:
    """model_construct skips validation; rendering still quotes every string and int()s every number."""
    sneaky = SearchFilter.model_construct(doc_ids=[INJECTION], kinds=["chunk"], categories=None)
    assert sneaky.to_expr() == '(doc_id == "x\\" or doc_id != \\"") and (kind == "chunk")'
    with pytest.raises(ValueError):
        SearchFilter.model_construct(categories=["1 or 1 == 1"], kinds=["chunk"]).to_expr()


def test_and_exprs() -> None:
    assert and_exprs() == ""
    assert and_exprs("", "a == 1") == "a == 1"
    assert and_exprs("a == 1", "", "b == 2") == "(a == 1) and (b == 2)"


# --- the expressions against a real engine ---------------------------------------------------------------

TRICKY = [INJECTION, 'quote"inside', "back\\slash", "new\nline", "plain", "x", UUID]


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClient]:
    """A tiny collection whose doc_ids are the tricky strings themselves (no embedder needed)."""
    path = Path(tmp_path_factory.mktemp("filters")) / "filters.db"
    client = MilvusClient(str(path))
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=64)
    schema.add_field("section_category", DataType.INT8)
    schema.add_field("conference_year", DataType.INT16)
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
    index = MilvusClient.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection("rows", schema=schema, index_params=index, consistency_level="Strong")
    rows = [
        {
            "id": i,
            "doc_id": d,
            "section_category": i % 7,
            "conference_year": 2018 + i,
            "kind": "chunk" if i % 2 == 0 else "question",
            "metadata": {"is_caption": i == 2} if i != 4 else {},
            "vector": [1.0, float(i)],
        }
        for i, d in enumerate(TRICKY)
    ]
    client.insert("rows", rows)
    yield client
    client.close()


def _ids(client: MilvusClient, expr: str) -> list[int]:
    return sorted(r["id"] for r in client.query("rows", filter=expr, output_fields=["id"], limit=100))


@pytest.mark.parametrize("value", TRICKY)
def test_escaped_literal_matches_exactly_that_string(lite: MilvusClient, value: str) -> None:
    assert _ids(lite, f"doc_id == {quote_string(value)}") == [TRICKY.index(value)]


def test_injection_matches_nothing_and_breaks_nothing(lite: MilvusClient) -> None:
    # A real paper's rows would be doc_id "x"; the injection must not widen the match to everything.
    f = SearchFilter.model_construct(doc_ids=['x" or doc_id != "'], kinds=["chunk", "question"], categories=None)
    assert _ids(lite, f.to_expr()) == [0]  # only the row whose doc_id IS that literal string
    f2 = SearchFilter.model_construct(doc_ids=['zz" or doc_id != "'], kinds=["chunk"], categories=None)
    assert _ids(lite, f2.to_expr()) == []
    assert len(_ids(lite, "")) == len(TRICKY)  # the collection is intact


def test_rendered_filters_select_the_right_rows(lite: MilvusClient) -> None:
    assert _ids(lite, SearchFilter().to_expr()) == [0, 2, 4, 6]
    assert _ids(lite, SearchFilter(kinds=["chunk", "question"], year_min=2021, year_max=2023).to_expr()) == [3, 4, 5]
    assert _ids(lite, SearchFilter(categories=["METHOD", "OTHER"], kinds=["chunk", "question"]).to_expr()) == [2, 5]
    assert _ids(lite, SearchFilter(doc_ids=["plain", "x", UUID], kinds=["chunk"]).to_expr()) == [4, 6]
    # Row 2 is a caption; row 4 has no is_caption key and is kept.
    assert _ids(lite, SearchFilter(exclude_captions=True).to_expr()) == [0, 4, 6]
    assert _ids(lite, SearchFilter(doc_ids=[]).to_expr()) == []
