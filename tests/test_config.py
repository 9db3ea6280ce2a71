"""Settings in layers: request > knowledge base > user file (config.toml) > environment > defaults."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from paperscope.errors import ConfigError
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore
from paperscope.settings_layers import SOURCES, Layer, Source, load_layers, load_settings
from tests.markdown_papers import markdown

#: retrieval.k as each layer gives it in the precedence tests (the default is 5).
K_OF: dict[Source, int] = {"default": 5, "env": 11, "user": 12, "kb": 13, "request": 14}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data directory of its own, and an environment without any paperscope, Milvus or OpenAI variable."""
    for name in list(os.environ):
        if name.upper().startswith(("PAPERSCOPE_", "MILVUS_", "OPENAI_")):
            monkeypatch.delenv(name)
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("PAPERSCOPE_HOME", str(path))
    yield path


def every_setting() -> set[str]:
    """Every field of Settings by its dotted name, read off the model itself."""
    names = set()
    for name, info in Settings.model_fields.items():
        part = info.annotation
        if isinstance(part, type) and issubclass(part, BaseModel):
            names |= {f"{name}.{sub}" for sub in part.model_fields}
        else:
            names.add(name)
    return names


def kb_layer(values: dict[str, object]) -> Layer:
    return Layer("kb", values, label="knowledge base 'x'")


@pytest.mark.parametrize(("low", "high"), list(itertools.combinations(SOURCES, 2)))
def test_the_higher_of_every_pair_of_layers_wins(
    low: Source, high: Source, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = {low, high}
    if "env" in given:
        monkeypatch.setenv("PAPERSCOPE_RETRIEVAL__K", str(K_OF["env"]))
    if "user" in given:
        (home / "config.toml").write_text(f"[retrieval]\nk = {K_OF['user']}\n")
    kb = kb_layer({"retrieval.k": K_OF["kb"]}) if "kb" in given else None
    request = {"retrieval": {"k": K_OF["request"]}} if "request" in given else None
    layered = load_layers(request, kb)
    assert layered.settings.retrieval.k == K_OF[high]
    assert layered.source_of("retrieval.k")[0] == high
    assert layered.provenance_json()["retrieval.k"] == {"value": K_OF[high], "source": high}


def test_the_user_file_is_above_the_usual_variables_too(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERSCOPE_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PAPERSCOPE_STORE__URI", "/x/store.db")
    monkeypatch.setenv("MILVUS_URI", "/y/store.db")
    (home / "config.toml").write_text('[llm]\nmodel = "file-model"\napi_key = "file-key"\n')
    layered = load_layers()
    llm = layered.settings.llm
    assert llm.model == "file-model" and llm.api_key is not None and llm.api_key.get_secret_value() == "file-key"
    assert llm.base_url == "http://127.0.0.1:9/v1"  # not in the file: the environment's
    assert layered.source_of("llm.base_url") == ("env", "OPENAI_BASE_URL")
    assert layered.source_of("llm.model") == ("user", f"{home / 'config.toml'}:2")
    # Within the environment, MILVUS_URI wins over its PAPERSCOPE_* spelling, as before.
    assert layered.settings.store.uri == "/y/store.db" and layered.source_of("store.uri") == ("env", "MILVUS_URI")


def test_load_settings_takes_parts_as_the_request(home: Path) -> None:
    (home / "config.toml").write_text("[store]\nkb = 'mine'\n[chunking]\nstrategy = 'markdown'\n")
    settings = load_settings(store={"kb": "theirs"}, chunking={"strategy": None})  # None: not given
    assert settings.store.kb == "theirs" and settings.chunking.strategy == "markdown"
    assert load_settings({"retrieval.k": "9"}).retrieval.k == 9  # dotted, converted as Settings does


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[retrieval]\nk = = 7\n", 2, "TOML syntax error: Invalid value (column 5)"),
        ('[llm]\nmodel = "unclosed\n', 2, "TOML syntax error"),
        ("[retrieval]\nwindow = 1\nkk = 7\n", 3, "unknown setting retrieval.kk; did you mean retrieval.k?"),
        ("[retrival]\nk = 7\n", 1, "unknown section [retrival]; did you mean [retrieval]?"),
        ("k = 7\n", 1, "unknown setting k; did you mean retrieval.k?"),
        ("[retrieval.extra]\nx = 1\n", 1, "unknown setting retrieval.extra"),
        ("retrieval = 7\n", 1, "retrieval is a group of settings, not one (e.g. retrieval.retriever)"),
        ("[retrieval]\nk = 'seven'\n", 2, "invalid setting retrieval.k: Input should be a valid integer"),
        ("[retrieval]\nk = 99\n", 2, "invalid setting retrieval.k: Input should be less than or equal to 50"),
        ("[agent]\nprompt = 'tiny'\n", 2, "invalid setting agent.prompt: Input should be 'auto', 'full' or 'compact'"),
        ('home = "/elsewhere"\n', 1, "home cannot be set here: this file lives in it; set PAPERSCOPE_HOME"),
    ],
)
def test_a_bad_user_file_is_one_line_naming_the_file_line_and_key(
    text: str, line: int, message: str, home: Path
) -> None:
    path = home / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_layers()
    error = str(caught.value)
    assert "\n" not in error
    assert error.startswith(f"{path}:{line}: ") and message in error, error


def test_a_secret_of_the_wrong_type_is_not_echoed(home: Path) -> None:
    (home / "config.toml").write_text("[llm]\napi_key = 123456789\n")
    with pytest.raises(ConfigError, match=r"config\.toml:2: invalid setting llm\.api_key") as caught:
        load_layers()
    assert "123456789" not in str(caught.value)


def test_an_unreadable_user_file_says_so(home: Path) -> None:
    (home / "config.toml").write_bytes(b"[retrieval]\nk = 7 # \xff\n")
    with pytest.raises(ConfigError, match=r"config\.toml: not a UTF-8 text file"):
        load_layers()
    (home / "config.toml").unlink()
    (home / "config.toml").mkdir()
    with pytest.raises(ConfigError, match=r"config\.toml: cannot read the settings file"):
        load_layers()


def test_a_bad_request_names_the_setting(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"^unknown setting retrieval\.kk; did you mean retrieval\.k\?$"):
        load_layers({"retrieval": {"kk": 3}})
    with pytest.raises(ConfigError, match=r"^invalid setting retrieval\.k: .*\(got 0\)$"):
        load_layers({"retrieval.k": 0})
    with pytest.raises(ConfigError, match="home cannot be set by the request"):
        load_layers({"home": "/tmp"})


def test_a_kb_fixed_value_given_otherwise_by_any_layer_is_refused(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = Layer(
        "kb",
        {"embedding.model": "local"},
        label="knowledge base 'x'",
        fixed=frozenset({"embedding.model"}),
        notes={"embedding.model": "dim 384"},
    )
    assert load_layers(None, kb).settings.embedding.model == "local"
    (home / "config.toml").write_text('[embedding]\nmodel = "local"\n')  # the same model: fine
    assert load_layers(None, kb).settings.embedding.model == "local"
    (home / "config.toml").write_text('[embedding]\nbatch_size = 8\nmodel = "openai:text-embedding-3-small"\n')
    with pytest.raises(ConfigError) as caught:
        load_layers(None, kb)
    assert str(caught.value) == (
        "knowledge base 'x' was created with embedding.model 'local' (dim 384) and keeps it; "
        f"'openai:text-embedding-3-small' from {home / 'config.toml'}:3 differs: remove that setting, "
        "or use another knowledge base"
    )
    (home / "config.toml").unlink()
    monkeypatch.setenv("PAPERSCOPE_EMBEDDING__MODEL", "sentence-transformers:other")
    with pytest.raises(ConfigError, match="'sentence-transformers:other' from PAPERSCOPE_EMBEDDING__MODEL differs"):
        load_layers(None, kb)
    monkeypatch.delenv("PAPERSCOPE_EMBEDDING__MODEL")
    with pytest.raises(ConfigError, match="'openai:x' from the request differs"):
        load_layers({"embedding.model": "openai:x"}, kb)


def test_provenance_lists_every_setting_with_secrets_masked(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MILVUS_TOKEN", "root:milvus-password")
    (home / "config.toml").write_text('[llm]\napi_key = "sk-very-secret"\n')
    layered = load_layers({"agent": {"max_iterations": 3}}, kb_layer({"retrieval.window": 2}))
    data = layered.provenance_json()
    assert set(data) == every_setting()
    assert data["llm.api_key"] == {"value": "********", "source": "user"}
    assert data["store.token"] == {"value": "********", "source": "env"}
    assert data["retrieval.window"] == {"value": 2, "source": "kb"}
    assert data["agent.max_iterations"] == {"value": 3, "source": "request"}
    assert data["llm.temperature"] == {"value": 0.0, "source": "default"}
    assert data["home"] == {"value": str(home), "source": "env"}
    text = json.dumps(data)
    assert "sk-very-secret" not in text and "milvus-password" not in text


def test_config_json_says_where_each_value_came_from(
    home: Path, monkeypatch: pytest.MonkeyPatch, local_embedder: CachedEmbedder
) -> None:
    with PaperStore.open(Settings(home=home, store={"kb": "cfg"}), local_embedder):
        pass  # a knowledge base, created empty
    monkeypatch.setenv("PAPERSCOPE_RETRIEVAL__CANDIDATES", "30")
    (home / "config.toml").write_text('[retrieval]\nwindow = 2\nk = 4\n[llm]\napi_key = "sk-very-secret"\n')
    runner = CliRunner()
    changed = runner.invoke(app, ["config", "--kb", "cfg", "--set", "retrieval.k=7"])
    assert changed.exit_code == 0, changed.stderr
    assert changed.stdout.strip() == "knowledge base 'cfg': retrieval.k = 7"
    result = runner.invoke(app, ["config", "--kb", "cfg", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == every_setting()
    assert all(set(v) == {"value", "source"} for v in data.values())
    sources = {name: v["source"] for name, v in data.items()}
    assert sources["retrieval.candidates"] == "env" and data["retrieval.candidates"]["value"] == 30
    assert sources["retrieval.window"] == "user" and data["retrieval.window"]["value"] == 2
    assert sources["retrieval.k"] == "kb" and data["retrieval.k"]["value"] == 7  # the kb's, over the file's 4
    assert sources["embedding.model"] == "kb" and sources["chunking.strategy"] == "kb"  # saved at creation
    assert sources["store.kb"] == "request" and sources["llm.temperature"] == "default"
    assert data["llm.api_key"]["value"] == "********" and "sk-very-secret" not in result.stdout
    table = runner.invoke(app, ["config", "--kb", "cfg"])
    assert table.exit_code == 0 and "knowledge base 'cfg', by config --set" in table.stdout
    assert "sk-very-secret" not in table.stdout


def test_config_set_and_unset_are_checked_before_anything_is_saved(home: Path, local_embedder: CachedEmbedder) -> None:
    with PaperStore.open(Settings(home=home, store={"kb": "cfg"}), local_embedder):
        pass
    runner = CliRunner()

    def fails(message: str, *args: str) -> None:
        result = runner.invoke(app, ["config", *args])
        assert result.exit_code == 1, (args, result.stdout)
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr

    kb = ("--kb", "cfg")
    fails("knowledge base 'cfg': invalid setting retrieval.k: Input should be a valid", *kb, "--set", "retrieval.k=x")
    fails("unknown setting retrieval.kk; did you mean retrieval.k?", *kb, "--set", "retrieval.kk=3")
    fails("store.uri cannot be a knowledge base's own setting", *kb, "--set", "store.uri=/x.db")
    fails("home cannot be a knowledge base's own setting", *kb, "--set", "home=/x")
    fails("llm.api_key cannot be a knowledge base's own setting: a secret", *kb, "--set", "llm.api_key=sk")
    fails("embedding.model cannot be a knowledge base's own setting: it is fixed", *kb, "--set", "embedding.model=x")
    fails("'nope' is not one of code, markdown, parent_child, recursive", *kb, "--set", "chunking.strategy=nope")
    # An operator the registry does not know is refused before the knowledge base keeps it (it would fail every
    # later command), whatever kind it is.
    fails("invalid setting retrieval.retriever: unknown retriever 'bm52'", *kb, "--set", "retrieval.retriever=bm52")
    fails("invalid setting retrieval.rerank: unknown reranker 'colbert:x'", *kb, "--set", "retrieval.rerank=colbert:x")
    fails("invalid setting retrieval.transforms: unknown transform 'hide'", *kb, "--set", "retrieval.transforms=hide")
    fails("expected NAME=VALUE", *kb, "--set", "retrieval.k")
    fails("--unset: unknown setting retrieval.kk", *kb, "--unset", "retrieval.kk")
    fails("name it with --kb NAME", "--set", "retrieval.k=3")
    fails("knowledge base 'other' does not exist (existing: 'cfg')", "--kb", "other", "--set", "retrieval.k=3")
    # A good value goes with a bad one: neither is saved.
    fails("invalid setting retrieval.window", *kb, "--set", "retrieval.k=3", "--set", "retrieval.window=9")
    assert json.loads(runner.invoke(app, ["config", *kb, "--json"]).stdout)["retrieval.k"]["source"] == "default"

    saved = runner.invoke(app, ["config", *kb, "--set", "retrieval.k=3", "--set", "llm.model=qwen2.5:14b"])
    assert saved.exit_code == 0, saved.stderr
    data = json.loads(runner.invoke(app, ["config", *kb, "--json"]).stdout)
    assert data["retrieval.k"] == {"value": 3, "source": "kb"}
    assert data["llm.model"] == {"value": "qwen2.5:14b", "source": "kb"}  # text that is no TOML value stays text
    unset = runner.invoke(app, ["config", *kb, "--unset", "retrieval.k", "--unset", "retrieval.window"])
    assert unset.exit_code == 0, unset.stderr
    assert "retrieval.k unset" in unset.stdout and "retrieval.window was not set for it" in unset.stdout
    data = json.loads(runner.invoke(app, ["config", *kb, "--json"]).stdout)
    assert data["retrieval.k"] == {"value": 5, "source": "default"}
    assert data["llm.model"]["source"] == "kb"


def test_commands_apply_the_kb_layer_under_their_flags(home: Path) -> None:
    paper = home.parent / "p.md"
    sections = [
        ("## Abstract", ["We study lichens and report what we found about lichens in three experiments."]),
        ("## 1 Method", ["Our method for lichens is simple: measure lichens, compare lichens, write it down."]),
        ("## 2 Results", ["Lichens grew two millimetres a year on north walls and one on south walls."]),
    ]
    paper.write_text(markdown("A Paper On Lichens", 2024, sections))
    (home / "config.toml").write_text("[chunking]\nstrategy = 'simple'\n")
    runner = CliRunner()
    ingested = runner.invoke(app, ["ingest", str(paper), "--kb", "lichens", "--strategy", "markdown"])
    assert ingested.exit_code == 0, ingested.stderr
    # The request's strategy was saved with the new kb and now wins over the user file's.
    data = json.loads(runner.invoke(app, ["config", "--kb", "lichens", "--json"]).stdout)
    assert data["chunking.strategy"] == {"value": "markdown", "source": "kb"}
    # window 0: each passage its own source (neighbouring windows would merge into one)
    config = ["config", "--kb", "lichens", "--set", "retrieval.k=1", "--set", "retrieval.window=0"]
    assert runner.invoke(app, config).exit_code == 0
    question = "How fast did lichens grow on walls?"
    one = json.loads(runner.invoke(app, ["ask", question, "--kb", "lichens", "--json"]).stdout)
    assert len(one["sources"]) == 1  # the kb's k
    two = json.loads(runner.invoke(app, ["ask", question, "--kb", "lichens", "--k", "2", "--json"]).stdout)
    assert len(two["sources"]) == 2  # the flag over the kb
