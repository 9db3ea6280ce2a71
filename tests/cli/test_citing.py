"""References inside the library on real papers: CiteSee cites SPECTER, and both are held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app

CITESEE = "arxiv2302.07302v1_citesee.pdf"
SPECTER = "acl2020_specter_2020.acl-main.207.pdf"


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.stdout + result.stderr
    return result.stdout


def test_refs_and_citedby_find_the_papers_of_the_library_a_paper_cites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_papers: Path
) -> None:
    monkeypatch.setenv("PAPERSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MILVUS_URI", raising=False)
    _run("ingest", str(shared_papers / CITESEE), str(shared_papers / SPECTER))
    papers = {Path(p["source"]).name: p for p in json.loads(_run("papers", "--json"))}
    citesee, specter = papers[CITESEE]["doc_id"], papers[SPECTER]["doc_id"]

    found = json.loads(_run("refs", citesee[:8], "--json"))
    assert found["paper"]["doc_id"] == citesee
    assert len(found["references"]) == 65  # as printed, [1] to [65]
    held = [r for r in found["references"] if r["held"]]
    assert [(r["label"], r["held"]) for r in held] == [("[17]", specter)]
    assert "SPECTER" in held[0]["text"] and held[0]["held_title"] == papers[SPECTER]["title"]
    only_held = json.loads(_run("refs", "CiteSee", "--held", "--json"))  # named, not by doc_id
    assert [r["held"] for r in only_held["references"]] == [specter]

    citing = json.loads(_run("citedby", "SPECTER", "--json"))
    assert citing["paper"]["doc_id"] == specter
    assert [(c["doc_id"], c["entry"]["label"]) for c in citing["cited_by"]] == [(citesee, "[17]")]
    assert json.loads(_run("citedby", citesee, "--json"))["cited_by"] == []  # SPECTER (2020) does not cite it

    shown = _run("refs", "CiteSee", "--held")
    assert f"[17] held {specter[:8]}" in shown
    _run("refs", "a paper nobody wrote about zebras", code=1)
