"""The operator registry: every retriever is built through it by name, unknown names are one error naming the known
ones wherever they are given, and a plugin package found through its entry point retrieves like a built-in one."""

from __future__ import annotations

import json
import logging
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import RetrievalSettings, Settings
from paperscope.errors import ChunkingError, ConfigError
from paperscope.rag import registry
from paperscope.rag.chunking import chunker
from paperscope.rag.filters import SearchFilter
from paperscope.rag.operator_settings import check_operators
from paperscope.rag.rerank import parse_rerank_spec
from paperscope.rag.retrievers import BM25, embeds_queries, make_retriever
from paperscope.rag.store import PaperStore, StoredChunk

QUESTION = "How many queries was FlashRank trained on?"

# Every spec's retriever as it was built before the registry built them (its name says what it is).
BUILT = {
    "bm25": "bm25",
    "dense": "dense",
    "hybrid": "hybrid:rrf",
    "hybrid:weighted": "hybrid:weighted",
    "ensemble": "ensemble:bm25=0.5,dense=0.5",
    "ensemble:bm25=0.6,dense=0.4": "ensemble:bm25=0.6,dense=0.4",
    "ensemble:bm25,hybrid:weighted=2": "ensemble:bm25=1,hybrid:weighted=2",
    "parent_document": "parent_document:bm25",
    "parent_document:hybrid": "parent_document:hybrid:rrf",
    "raptor": "raptor:bm25",
    "raptor:dense": "raptor:dense",
    "raptor:tree": "raptor:tree:bm25",
    "raptor:tree:dense": "raptor:tree:dense",
}


@pytest.fixture
def own_operators() -> Iterator[list[tuple[registry.Kind, str]]]:
    """The (kind, name) of operators a test registers, removed afterwards."""
    added: list[tuple[registry.Kind, str]] = []
    yield added
    for kind, name in added:
        registry.unregister(kind, name)


def test_every_registered_retriever_builds_through_make_retriever() -> None:
    for name in registry.names("retriever"):
        retriever = make_retriever(name)
        assert retriever.name.startswith(name), (name, retriever.name)


@pytest.mark.parametrize(("spec", "name"), BUILT.items())
def test_each_spec_builds_the_retriever_it_did(spec: str, name: str) -> None:
    assert make_retriever(spec).name == name


def test_which_retrievers_embed_the_query() -> None:
    embeds = {spec: embeds_queries(make_retriever(spec)) for spec in BUILT}
    assert [s for s, e in embeds.items() if not e] == ["bm25", "parent_document", "raptor", "raptor:tree"]


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("parent_document:parent_document", "retriever parent_document cannot search parents of parents"),
        ("raptor:tree:ensemble", "retriever raptor:tree:ensemble: the base of raptor is bm25, dense or hybrid"),
        ("raptor:parent_document:bm25", "the base of raptor is bm25, dense or hybrid, not 'parent_document:bm25'"),
        ("ensemble:ensemble=1", "retriever ensemble: 'ensemble' cannot be a member; use bm25, dense or hybrid"),
        ("ensemble:bm25=x", "retriever ensemble: weight 'x' of 'bm25' is not a number"),
        ("ensemble:bm25=11", "retriever ensemble: weight of 'bm25' must be in (0, 10], got 11"),
        ("hybrid:max", "retriever hybrid:max: the fusion is 'rrf' or 'weighted'"),
        ("bm25:fast", "retriever 'bm25' takes no argument, got bm25:fast"),
        ("dense:x", "retriever 'dense' takes no argument, got dense:x"),
    ],
)
def test_bad_specs_say_what_is_wrong_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(ConfigError) as error:
        make_retriever(spec)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_an_unknown_retriever_names_the_known_ones() -> None:
    for spec in ("nosuch", "nosuch:bm25", "ensemble:bm25=1,nosuch=1", "parent_document:nosuch"):
        with pytest.raises(ConfigError, match="unknown retriever 'nosuch'") as error:
            make_retriever(spec)
        assert all(name in str(error.value) for name in registry.names("retriever"))


def test_an_argument_given_to_an_operator_that_takes_none_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^reranker 'llm' takes no argument, got llm:gpt$"):
        parse_rerank_spec("llm:gpt")
    with pytest.raises(ChunkingError, match=r"^chunker 'recursive' takes no argument, got recursive:200$"):
        chunker("recursive:200")
    with pytest.raises(ConfigError, match="transform 'glossary' runs on its own"):
        registry.build("transform", "glossary")


class Reversed:
    """BM25's hits in reverse order (registered by a test)."""

    name = "reversed"

    def search(self, store: PaperStore, query: str, search_filter: SearchFilter | None, k: int) -> list[StoredChunk]:
        return list(reversed(BM25().search(store, query, search_filter, k)))


def test_a_newly_registered_retriever_is_built_as_itself(own_operators: list[tuple[registry.Kind, str]]) -> None:
    own_operators.append(("retriever", "reversed"))
    registry.register("retriever", "reversed")(Reversed)
    assert isinstance(make_retriever("reversed"), Reversed)  # not an ensemble, as the old if-chain made it
    assert make_retriever("ensemble:reversed=1,bm25=1").name == "ensemble:reversed=1,bm25=1"
    assert make_retriever("raptor:reversed").name == "raptor:reversed"
    with pytest.raises(ConfigError, match="retriever 'reversed' takes no argument"):
        make_retriever("reversed:3")
    assert RetrievalSettings(retriever="reversed").retriever == "reversed"  # the settings take it too


def test_settings_with_unknown_operator_names_are_refused_where_rag_takes_them_in() -> None:
    settings = Settings(retrieval={"retriever": "hybrid:weighted", "ensemble": "bm25=0.6,dense=0.4", "rerank": "llm"})  # type: ignore[arg-type]
    check_operators(settings)  # good values pass, unchanged
    r = settings.retrieval
    assert (r.retriever, r.ensemble, r.rerank) == ("hybrid:weighted", "bm25=0.6,dense=0.4", "llm")
    for part, field, value, says in [
        ("retrieval", "retriever", "bm52", "retrieval.retriever: unknown retriever 'bm52'; did you mean 'bm25'?"),
        ("retrieval", "hyde_retriever", "raptor:ensemble", "the base of raptor is bm25, dense or hybrid"),
        ("retrieval", "ensemble", "bm25=0.6,nosuch=1", "retrieval.ensemble: unknown retriever 'nosuch'"),
        ("retrieval", "rerank", "colbert:x", "unknown reranker 'colbert:x'; use 'cross-encoder:<name-or-path>'"),
        ("retrieval", "transforms", "hide", "retrieval.transforms: unknown transform 'hide'; did you mean 'hyde'?"),
        ("enrichment", "strategies", "sumaries", "enrichment.strategies: unknown enricher 'sumaries'"),
        ("chunking", "strategy", "recursve", "chunking.strategy: unknown chunking strategy 'recursve'"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(says)):
            check_operators(Settings(**{part: {field: value}}))  # type: ignore[arg-type]


def test_the_command_line_refuses_an_unknown_name_in_the_user_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path))
    (tmp_path / "config.toml").write_text('[retrieval]\nretriever = "bm52"\n')
    result = CliRunner().invoke(app, ["papers"])
    assert result.exit_code != 0 and "retrieval.retriever: unknown retriever 'bm52'" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_a_factory_builds_from_the_spec_argument(own_operators: list[tuple[registry.Kind, str]]) -> None:
    """`register(..., factory=...)`: the argument after the first ':' and the retrieval settings."""
    own_operators.append(("retriever", "deep"))

    class Deep(Reversed):
        def __init__(self, depth: int) -> None:
            self.depth = depth
            self.name = f"deep:{depth}"

    def factory(arg: str, settings: RetrievalSettings) -> Deep:
        return Deep(int(arg or settings.k))

    registry.register("retriever", "deep", factory=factory, usage="deep[:<depth>]")(Deep)
    assert make_retriever("deep:7").name == "deep:7"
    assert make_retriever("deep", RetrievalSettings(k=4)).name == "deep:4"
    assert "deep[:<depth>]" in registry.forms("retriever")


# --- the CLI and the HTTP options ---------------------------------------------------------------------------------


@pytest.fixture
def cli_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    return CliRunner()


def test_an_unknown_retriever_on_the_command_line_is_one_line_naming_the_known_ones(cli_home: CliRunner) -> None:
    result = cli_home.invoke(app, ["retrieve", QUESTION, "--retriever", "nosuch"])
    assert result.exit_code != 0 and result.stderr.count("\n") == 1, result.stderr
    assert "unknown retriever 'nosuch'" in result.stderr
    assert all(name in result.stderr for name in registry.names("retriever"))


def test_option_help_lists_what_the_registry_holds(cli_home: CliRunner) -> None:
    result = cli_home.invoke(app, ["retrieve", "--help"], terminal_width=400)
    assert result.exit_code == 0
    for form in ("raptor[:<base>]", "hybrid[:rrf|:weighted]", "parent_document[:<base>]", "self-query"):
        assert form in result.stdout, form
    assert "{retrievers}" not in result.stdout and "{transforms}" not in result.stdout


# --- a plugin package ---------------------------------------------------------------------------------------------

PLUGIN = '''
"""A third party's retriever: the BM25 hits of a query from its last to its first."""

from paperscope.rag.registry import register
from paperscope.rag.retrievers import BM25


@register("retriever", "plugin_reversed", needs=("nothing",))
class PluginReversed:
    """BM25's ranking read backwards (a plugin for the tests)."""

    name = "plugin_reversed"

    @classmethod
    def from_spec(cls, arg, settings):
        return cls()

    def search(self, store, query, search_filter, k):
        return list(reversed(BM25().search(store, query, search_filter, k)))
'''


def _distribution(root: Path, name: str, entry_points: str) -> None:
    """An installed distribution `name` under `root`: its .dist-info declaring `entry_points` in the plugin group,
    and a module `brokenplugin` that cannot be imported (a plugin whose dependency is missing)."""
    (root / "brokenplugin.py").write_text("raise ImportError('a dependency of this plugin is missing')\n")
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[paperscope.operators]\n{entry_points}")


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package outside src/, installed as a distribution (a .dist-info with its entry points) on sys.path; the
    registry loads it anew, and forgets it afterwards."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "myplugin.py").write_text(textwrap.dedent(PLUGIN))
    _distribution(root, "myplugin", "mine = myplugin\nbroken = brokenplugin\n")
    monkeypatch.syspath_prepend(str(root))
    registry.load_plugins(again=True)
    yield root
    registry.unregister("retriever", "plugin_reversed")
    for module in ("myplugin", "brokenplugin"):
        sys.modules.pop(module, None)


def test_a_plugin_that_fails_to_import_is_one_warning_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    _distribution(root, "brokenplugin", "broken = brokenplugin\n")
    monkeypatch.syspath_prepend(str(root))
    with caplog.at_level(logging.WARNING, logger="paperscope.rag.registry"):
        registry.load_plugins(again=True)
        assert "bm25" in registry.names("retriever") and make_retriever("bm25").name == "bm25"
        registry.names("retriever")
    said = [r.getMessage() for r in caplog.records if "plugin" in r.getMessage()]
    assert len(said) == 1 and "'broken' (brokenplugin)" in said[0] and "dependency of this plugin" in said[0]
    sys.modules.pop("brokenplugin", None)


def test_a_plugin_retriever_retrieves_and_is_listed(
    plugin: Path, sample_kb: PaperStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "plugin_reversed" in registry.names("retriever")
    found = make_retriever("plugin_reversed").search(sample_kb, QUESTION, None, 5)
    plain = BM25().search(sample_kb, QUESTION, None, 5)
    assert len(found) == 5 and [h.id for h in found] == [h.id for h in reversed(plain)]

    monkeypatch.setenv("PAPERSCOPE_HOME", str(sample_kb.settings.home))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    for name in ("OPENAI_BASE_URL", "PAPERSCOPE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["retrieve", QUESTION, "--retriever", "plugin_reversed", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["models"]["retriever"] == "plugin_reversed" and data["hits"]
    assert ("retriever", "plugin_reversed") in [(o["kind"], o["name"]) for o in data["operators"]]

    listed = runner.invoke(app, ["operators", "--json"])
    assert listed.exit_code == 0
    ops = {(o["kind"], o["name"]): o for o in json.loads(listed.stdout)}
    assert ops[("retriever", "plugin_reversed")]["summary"] == "BM25's ranking read backwards (a plugin for the tests)."
    assert ops[("retriever", "plugin_reversed")]["needs"] == ["nothing"]
