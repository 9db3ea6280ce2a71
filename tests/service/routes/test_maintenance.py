"""`paperscope check` through a running server (GET /v1/check, POST /v1/check/repair, `check --server`) over a store
that an interrupted ingest and a disk fault damaged: the server holds the store, so only it can check it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore
from tests.damaged_stores import interrupt_ingest, overwrite_vector_bytes
from tests.markdown_papers import markdown
from tests.served import KEY, PAPERSCOPE, clean_env, make_home, serve


def paperscope(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PAPERSCOPE), *args], env=env, capture_output=True, text=True, timeout=300)


def test_check_and_repair_run_in_the_server_that_holds_the_store(
    tmp_path: Path, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str], local_embedder: CachedEmbedder
) -> None:
    home = make_home(tmp_path / "home", [sample_pdfs["flashrank"], sample_pdfs["marten"]], local_embedder)
    cut = tmp_path / "cut.md"
    results = [f"Result {i}: the ferns grew {i} cm in the shade of old oaks." for i in range(40)]
    cut.write_text(markdown("A Paper Cut Short", 2024, [("## 2 Results", results)]))
    with PaperStore.open(
        Settings(home=home, chunking={"chunk_size": 40}, embedding={"model": "local", "batch_size": 2})
    ) as store:
        cut_id, planned = interrupt_ingest(store, cut, stored=4)
    flashrank = sample_pdf_ids["flashrank"]
    overwrite_vector_bytes(home / "milvus.db", "papers", flashrank, b"\xff" * 16)
    env = clean_env(home, {"COLUMNS": "1000"})
    local = paperscope(env, "check")
    assert local.returncode == 1, local.stderr
    remote = {**env, "PAPERSCOPE_SERVER": "", "PAPERSCOPE_API_KEY": KEY}

    with serve(home, tmp_path / "serve.log", key=KEY) as served, served.client() as http:
        listed = {p["doc_id"]: p for p in http.get("/v1/documents").json()}
        assert listed[cut_id]["status"] == "ingesting"
        assert (listed[cut_id]["n_chunks"], listed[cut_id]["planned_chunks"]) == (4, planned)
        found = http.get("/v1/check").json()
        assert {(p["doc_id"], p["issue"]) for p in found["problems"]} == {(cut_id, "not_ready"), (flashrank, "vector")}
        assert http.get("/v1/check", headers={"Authorization": "Bearer wrong"}).status_code == 401

        held = paperscope(env, "check")
        assert held.returncode == 1 and f"use --server {served.url}" in held.stderr and "check take it" in held.stderr
        remote["PAPERSCOPE_SERVER"] = served.url
        through = paperscope(remote, "check")
        assert (through.returncode, through.stdout) == (1, local.stdout), through.stderr
        as_json = json.loads(paperscope(remote, "check", "--json").stdout)
        assert {**as_json, "at": 0} == {**found, "at": 0}

        keyed = {**env, "PAPERSCOPE_API_KEY": KEY}
        repaired = paperscope(keyed, "check", "--repair", "--server", served.url)  # the option, not the variable
        assert repaired.returncode == 0 and "all 2 problem(s) fixed" in repaired.stdout, repaired.stdout
        assert f"-> ingested again from {cut}" in repaired.stdout
        assert "-> its vector computed again from its title and abstract" in repaired.stdout
        assert http.get("/v1/check").json()["problems"] == []
        cut_row = next(p for p in http.get("/v1/documents").json() if p["doc_id"] == cut_id)
        assert cut_row["status"] == "ready" and cut_row["planned_chunks"] is None

    after = paperscope(env, "check")
    assert after.returncode == 0 and "no problems" in after.stdout, after.stdout + after.stderr
