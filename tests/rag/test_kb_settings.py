"""A knowledge base's own settings, kept as properties of its chunks collection, on Milvus Lite and a server."""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paperscope.config import Settings
from paperscope.errors import ConfigError, StoreError
from paperscope.rag.embeddings import LOCAL_MODEL_NAME, CachedEmbedder
from paperscope.rag.kb_settings import (
    PROP_OVERRIDES,
    PROP_SETTINGS,
    KbSettings,
    load_kb_layers,
    parse_assignment,
    peek_kb_settings,
    read_kb_settings,
    save_overrides,
)
from paperscope.rag.store import PaperStore
from paperscope.rag.store.properties import spec_of
from tests.milvus_server import free_port

BACKENDS = ["lite", pytest.param("server", marks=pytest.mark.integration)]
CHUNKING = {"strategy": "markdown", "chunk_size": 300, "overlap": 16, "parent_size": 1500, "child_size": 250}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No paperscope, Milvus or OpenAI variable from the machine running the tests."""
    for name in list(os.environ):
        if name.upper().startswith(("PAPERSCOPE_", "MILVUS_", "OPENAI_")):
            monkeypatch.delenv(name)


@pytest.fixture(params=BACKENDS)
def settings(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> Iterator[Settings]:
    """Settings of a knowledge base not made yet, on the backend, with chunking settings of its own; the
    environment names the same store, as a user's would."""
    kb = f"k{uuid.uuid4().hex[:10]}"
    home = tmp_path / "home"
    monkeypatch.setenv("PAPERSCOPE_HOME", str(home))
    if request.param == "lite":
        yield Settings(home=home, chunking=CHUNKING, store={"kb": kb})
        return
    uri = request.getfixturevalue("milvus_server_uri")
    monkeypatch.setenv("MILVUS_URI", uri)
    yield Settings(home=home, chunking=CHUNKING, store={"uri": uri, "kb": kb})
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    for name in (f"{kb}_chunks", f"{kb}_papers"):
        client.drop_collection(name)
    client.close()


def lock_is_free(home: Path) -> bool:
    """True when no one (this process included) serves the Milvus Lite data under `home`."""
    fd = os.open(home / "milvus.db" / "LOCK", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def test_settings_are_saved_at_creation_and_read_back(settings: Settings, local_embedder: CachedEmbedder) -> None:
    kb = settings.store.kb
    assert peek_kb_settings(settings) is None  # not made yet...
    assert not (settings.home / "milvus.db").exists()  # ...and looking made nothing
    with PaperStore.open(settings, local_embedder) as store:
        saved = read_kb_settings(store.client, kb)
        expected = {"embedding.model": "local", **{f"chunking.{k}": v for k, v in CHUNKING.items()}}
        assert saved == KbSettings(kb, expected, {}, 384)
        # Read with a connection of its own while the store is open: the store keeps working.
        assert peek_kb_settings(settings) == saved
        assert store.list_papers() == []
        assert read_kb_settings(store.client, "absent") is None
    # Read back after the store is closed (a new Lite server, a new server connection).
    assert peek_kb_settings(settings) == saved
    if store.is_lite:
        assert lock_is_free(settings.home)  # the Lite server the peek started is stopped again


def test_overrides_are_saved_checked_and_removed(settings: Settings, local_embedder: CachedEmbedder) -> None:
    kb = settings.store.kb
    with PaperStore.open(settings, local_embedder) as store:
        after = save_overrides(store.client, kb, {"retrieval.k": "7", "llm.model": "qwen2.5:14b"})
        assert after.overrides == {"retrieval.k": 7, "llm.model": "qwen2.5:14b"}
        with pytest.raises(ConfigError, match=r"^knowledge base '\w+': invalid setting retrieval\.window"):
            save_overrides(store.client, kb, {"retrieval.k": 3, "retrieval.window": 99})
        with pytest.raises(ConfigError, match=r"store\.kb cannot be a knowledge base's own setting"):
            save_overrides(store.client, kb, {"store.kb": "other"})
        with pytest.raises(StoreError, match="knowledge base 'absent' does not exist"):
            save_overrides(store.client, "absent", {"retrieval.k": 3})
    assert (peek_kb_settings(settings) or KbSettings("")).overrides == {"retrieval.k": 7, "llm.model": "qwen2.5:14b"}

    layered = load_kb_layers({"store": {"kb": kb}})
    assert layered.settings.retrieval.k == 7 and layered.source_of("retrieval.k")[0] == "kb"
    assert layered.settings.chunking.strategy == "markdown"  # as created, over the default
    assert layered.source_of("chunking.strategy") == ("kb", f"knowledge base {kb!r}, as created")
    assert load_kb_layers({"store": {"kb": kb}, "retrieval": {"k": 2}}).settings.retrieval.k == 2  # request wins

    with PaperStore.open(layered.settings, local_embedder) as store:
        after = save_overrides(store.client, kb, unset=["retrieval.k"])
    assert after.overrides == {"llm.model": "qwen2.5:14b"}
    assert load_kb_layers({"store": {"kb": kb}}).settings.retrieval.k == 5


def test_another_embedding_model_is_refused_naming_both_and_where(
    settings: Settings, local_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = settings.store.kb
    with PaperStore.open(settings, local_embedder):
        pass
    monkeypatch.setenv("PAPERSCOPE_EMBEDDING__MODEL", "openai:text-embedding-3-small")
    with pytest.raises(ConfigError) as caught:
        load_kb_layers({"store": {"kb": kb}})
    assert str(caught.value) == (
        f"knowledge base {kb!r} was created with embedding.model 'local' (dim 384) and keeps it; "
        "'openai:text-embedding-3-small' from PAPERSCOPE_EMBEDDING__MODEL differs: remove that setting, "
        "or use another knowledge base"
    )
    # Any other kb (not made yet) takes the model asked for.
    assert load_kb_layers({"store": {"kb": "fresh"}}).settings.embedding.model == "openai:text-embedding-3-small"


def test_a_kb_made_before_settings_were_saved_still_fixes_its_model(
    tmp_path: Path, local_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    settings = Settings(home=tmp_path / "home", store={"kb": "old"})
    monkeypatch.setenv("PAPERSCOPE_HOME", str(settings.home))
    with PaperStore.open(settings, local_embedder) as store:
        store.client.drop_collection_properties("old_chunks", property_keys=[PROP_SETTINGS])
        assert read_kb_settings(store.client, "old") == KbSettings("old", {"embedding.model": "local"}, {}, 384)
    monkeypatch.setenv("PAPERSCOPE_EMBEDDING__MODEL", "sentence-transformers:/models/other")
    with pytest.raises(ConfigError, match=r"knowledge base 'old' was created with embedding\.model 'local'"):
        load_kb_layers({"store": {"kb": "old"}})


def test_bad_saved_overrides_say_how_to_remove_them(
    tmp_path: Path, local_embedder: CachedEmbedder, clean_env: None
) -> None:
    settings = Settings(home=tmp_path / "home", store={"kb": "odd"})
    with PaperStore.open(settings, local_embedder) as store:
        bad = json.dumps({"retrieval.k": 0})  # written by hand, not by `config --set`
        store.client.alter_collection_properties("odd_chunks", properties={PROP_OVERRIDES: bad})
        with pytest.raises(ConfigError) as caught:
            read_kb_settings(store.client, "odd")
        assert str(caught.value).startswith("knowledge base 'odd': invalid setting retrieval.k")
        assert str(caught.value).endswith("(`paperscope config --kb odd --unset retrieval.k` removes it)")
        store.client.alter_collection_properties("odd_chunks", properties={PROP_OVERRIDES: "[1"})
        with pytest.raises(StoreError, match=r"'odd': its property paperscope\.overrides is not valid"):
            read_kb_settings(store.client, "odd")


def test_an_unreachable_server_is_one_line_unless_the_store_is_optional(clean_env: None) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(StoreError, match=rf"^knowledge base 'papers': cannot open Milvus at {uri}: "):
        load_kb_layers({"store": {"uri": uri}})
    layered = load_kb_layers({"store": {"uri": uri}}, ignore_store_errors=True)
    assert layered.layer("kb") is None and layered.settings.store.uri == uri


def test_the_saved_spec_is_the_embedder_the_kb_was_built_with() -> None:
    assert spec_of("local", LOCAL_MODEL_NAME) == "local"
    assert spec_of(" sentence-transformers:/m/x ", "sentence-transformers:/m/x") == "sentence-transformers:/m/x"
    assert spec_of("openai:text-embedding-3-small@256", "openai:text-embedding-3-small") == (
        "openai:text-embedding-3-small@256"
    )
    # An embedder handed to the store that the settings do not name: saved by its own name.
    assert spec_of("local", "sentence-transformers:/m/x") == "sentence-transformers:/m/x"
    assert spec_of("openai:a", LOCAL_MODEL_NAME) == "local"


def test_assignments_read_values_as_toml_else_as_text() -> None:
    assert parse_assignment("retrieval.k=7") == ("retrieval.k", 7)
    assert parse_assignment(" retrieval.mmr_lambda = 0.5 ") == ("retrieval.mmr_lambda", 0.5)
    assert parse_assignment("llm.use_for_routing=false") == ("llm.use_for_routing", False)
    assert parse_assignment("llm.model=qwen2.5:14b") == ("llm.model", "qwen2.5:14b")
    assert parse_assignment('llm.model="a=b"') == ("llm.model", "a=b")
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        parse_assignment("=7")


def test_a_kb_whose_chunks_collection_vanished_keeps_its_model_from_the_catalogue(tmp_path: Path) -> None:
    """The settings live on the chunks collection; without it, repairing the kb must still embed with the model its
    papers were embedded with (here the int8 one, not the default), as the catalogue names it."""
    from paperscope.rag.embeddings import make_embedder

    settings = Settings(home=tmp_path, embedding={"model": "local:int8"})
    with PaperStore(settings, make_embedder("local:int8")) as store:
        store.client.drop_collection("papers_chunks")
        saved = read_kb_settings(store.client, "papers")
        assert saved is not None and saved.created["embedding.model"] == "local:int8"
        assert read_kb_settings(store.client, "absent") is None  # no catalogue either: no kb


def test_a_new_kb_is_made_with_the_int8_model_and_an_older_one_keeps_the_model_it_was_made_with(
    tmp_path: Path, clean_env: None, local_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default is `local:int8` (the same dev-set scores, 1.8x faster): a knowledge base created without a
    model named records it; one made with the model as published goes on with that one, unasked."""
    from paperscope.rag.embeddings import LOCAL_INT8_NAME, make_embedder

    assert Settings().embedding.model == "local:int8"
    new = Settings(home=tmp_path)
    with PaperStore(new, make_embedder(new.embedding.model)) as store:
        saved = read_kb_settings(store.client, "papers")
        assert saved is not None and saved.created["embedding.model"] == "local:int8"
        assert store.embedder.name == LOCAL_INT8_NAME
    PaperStore(Settings(home=tmp_path, store={"kb": "old"}, embedding={"model": "local"}), local_embedder).close()
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path))
    assert load_kb_layers({"store": {"kb": "old"}}).settings.embedding.model == "local"
    assert load_kb_layers({"store": {"kb": "papers"}}).settings.embedding.model == "local:int8"
