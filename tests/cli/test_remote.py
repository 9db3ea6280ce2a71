"""The commands that take --server, against a real `paperscope serve`: the same output as locally, through HTTP;
a command that finds the store held by the server says how to reach it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.cli.running import read_record, server_hint, write_record
from tests.served import KEY, PAPERSCOPE, Served, clean_env
from tests.unprivileged import obeying_permissions, permissions_not_enforced

QUESTION = "How many queries was FlashRank trained on?"


@pytest.fixture
def cli(server: Served) -> CliRunner:
    return CliRunner(env={"PAPERSCOPE_API_KEY": KEY, "PAPERSCOPE_SERVER": None})


def test_ask_through_the_server(cli: CliRunner, server: Served, sample_pdf_ids: dict[str, str]) -> None:
    result = cli.invoke(app, ["ask", QUESTION, "--server", server.url, "--json"])
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    with server.client() as http:
        direct = http.post("/v1/chat", json={"query": QUESTION}).json()
    assert answer["answer"] == direct["answer"] and answer["track"] == "A"
    assert [s["citation"] for s in answer["sources"]] == [s["citation"] for s in direct["sources"]]
    shown = cli.invoke(app, ["ask", QUESTION, "--server", server.url])
    assert shown.exit_code == 0, shown.stderr
    assert "Track A · one paper · single-shot, extracted" in shown.stdout
    assert "[1] FlashRank" in shown.stdout and f"{sample_pdf_ids['flashrank']}:" in shown.stdout
    scoped = cli.invoke(
        app, ["ask", QUESTION, "--server", server.url, "--paper", sample_pdf_ids["marten"][:8], "--k", "2", "--json"]
    )
    assert scoped.exit_code == 0, scoped.stderr
    assert {s["doc_id"] for s in json.loads(scoped.stdout)["sources"]} == {sample_pdf_ids["marten"]}


def test_retrieve_and_papers_through_the_server(cli: CliRunner, server: Served) -> None:
    result = cli.invoke(app, ["retrieve", QUESTION, "--server", server.url, "--k", "3", "--json"])
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    with server.client() as http:
        direct = http.post("/v1/retrieve", json={"query": QUESTION, "k": 3}).json()
        listed = http.get("/v1/documents").json()
    assert [h["citation"] for h in found["hits"]] == [h["citation"] for h in direct["hits"]]
    shown = cli.invoke(app, ["retrieve", QUESTION, "--server", server.url, "--k", "3"])
    assert "Track A · 3 passages · bm25" in shown.stdout and f"[1] {direct['hits'][0]['citation']}" in shown.stdout
    papers = cli.invoke(app, ["papers", "--server", server.url, "--json"])
    assert papers.exit_code == 0 and json.loads(papers.stdout) == listed
    table = cli.invoke(app, ["papers", "--server", server.url])
    assert f"{len(listed)} papers in 'papers'" in table.stdout and "FlashRank" in table.stdout


def test_ingest_and_remove_through_the_server(
    cli: CliRunner, server: Served, tmp_path: Path, sample_pdfs: dict[str, Path], sample_pdf_ids: dict[str, str]
) -> None:
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"this is no pdf")
    result = cli.invoke(
        app,
        ["ingest", str(sample_pdfs["flashrank"]), str(sample_pdfs["blendir"]), str(garbage), "--server", server.url],
    )
    assert result.exit_code == 1, result.stderr  # a file failed; the others went in
    lines = result.stdout.splitlines()
    assert any(line.startswith("unchanged  flashrank.pdf") for line in lines)
    assert any(line.startswith("ingested   blendir.pdf") for line in lines)
    assert any(line.startswith("failed     garbage.pdf") and "garbage.pdf: not a PDF" in line for line in lines)
    as_json = cli.invoke(app, ["ingest", str(sample_pdfs["blendir"]), "--server", server.url, "--json"])
    assert as_json.exit_code == 0
    [row] = json.loads(as_json.stdout)["files"]
    assert row["status"] == "unchanged" and row["path"] == str(sample_pdfs["blendir"].resolve())
    removed = cli.invoke(app, ["remove", sample_pdf_ids["blendir"][:8], "--server", server.url])
    assert removed.exit_code == 0, removed.stderr
    assert removed.stdout.startswith("removed 'BlendIR") and sample_pdf_ids["blendir"] in removed.stdout
    again = cli.invoke(app, ["remove", sample_pdf_ids["blendir"][:8], "--server", server.url])
    assert again.exit_code == 1 and "is not a paper in knowledge base 'papers'" in again.stderr


def test_chat_through_the_server(cli: CliRunner, server: Served) -> None:
    typed = "What does Marten-1B pretrain on?\nWhat about its ablation?\n/sources 1\n/papers\n/quit\n"
    result = cli.invoke(app, ["chat", "--server", server.url], input=typed)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "knowledge base 'papers'" in out and "Follow-up: staying on" in out
    assert "▶ cited" in out and "chunk " in out  # /sources read the chunks around the source from the server
    assert "papers in 'papers'" in out and out.rstrip().endswith("bye")


def test_errors_through_the_server_are_one_line(cli: CliRunner, server: Served) -> None:
    down = cli.invoke(app, ["ask", QUESTION, "--server", "http://127.0.0.1:9"])
    assert down.exit_code == 1
    assert down.stderr.strip().startswith("error: cannot reach paperscope serve at http://127.0.0.1:9")
    assert len(down.stderr.strip().splitlines()) == 1
    wrong = CliRunner(env={"PAPERSCOPE_API_KEY": "wrong"}).invoke(app, ["papers", "--server", server.url])
    assert wrong.exit_code == 1 and "set PAPERSCOPE_API_KEY to the server's key" in wrong.stderr
    bad = cli.invoke(app, ["retrieve", QUESTION, "--server", server.url, "--retriever", "nonsense"])
    assert bad.exit_code == 1 and "nonsense" in bad.stderr and "Traceback" not in bad.stderr


def test_a_command_of_the_servers_home_goes_through_it_or_says_how_to_reach_it(server: Served) -> None:
    """ask, retrieve, papers and chat use the server running on their home by themselves (with its key); the others
    say where it is, as the store is held."""
    env = clean_env(server.home)

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [str(PAPERSCOPE), *args]
        return subprocess.run(command, env={**env, **extra}, capture_output=True, text=True, timeout=300)

    through = run("papers", "--json", PAPERSCOPE_API_KEY=KEY)
    assert through.returncode == 0, through.stderr
    with server.client() as http:
        assert json.loads(through.stdout) == http.get("/v1/documents").json()
    asked = run("ask", QUESTION, "--json", PAPERSCOPE_API_KEY=KEY, PYTHONPROFILEIMPORTTIME="1")
    assert asked.returncode == 0 and "FlashRank" in json.loads(asked.stdout)["answer"], asked.stderr
    # The command's start spares what no command uses: httpcore would import trio (installed with the test tools).
    imported = {line.rsplit("|", 1)[-1].strip() for line in asked.stderr.splitlines() if line.startswith("import time")}
    assert "httpcore" in imported and not any(m.startswith("trio.") for m in imported)  # tried, refused at once
    keyless = run("papers")
    assert keyless.returncode == 1 and "set PAPERSCOPE_API_KEY to the server's key" in keyless.stderr
    held = run("check")
    assert held.returncode == 1
    assert f"paperscope serve is running at {server.url}" in held.stderr
    assert f"use --server {server.url} (or PAPERSCOPE_SERVER={server.url})" in held.stderr


def test_a_stale_record_is_ignored(tmp_path: Path) -> None:
    record = write_record(tmp_path, "http://127.0.0.1:1234", "papers")
    assert read_record(tmp_path) is not None  # this process is alive
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "pid": 2**22 + 12345}))  # no such process
    assert read_record(tmp_path) is None and server_hint(tmp_path) is None
    record.write_text("{not json")
    assert read_record(tmp_path) is None


def test_the_server_url_must_be_http(cli: CliRunner) -> None:
    result = cli.invoke(app, ["papers", "--server", "ftp://example.org"])
    assert result.exit_code == 1 and "expected an http:// or https:// URL" in result.stderr


def test_a_file_that_cannot_be_read_fails_alone_through_the_server(
    server: Served, tmp_path: Path, sample_pdfs: dict[str, Path]
) -> None:
    """Read here before it is uploaded, by a process that obeys file permissions (as root: without CAP_DAC_*)."""
    if why := permissions_not_enforced(tmp_path):
        pytest.skip(why)
    secret = tmp_path / "secret.pdf"
    secret.write_bytes(sample_pdfs["marten"].read_bytes())
    secret.chmod(0)
    command = [str(PAPERSCOPE), "ingest", str(secret), str(sample_pdfs["flashrank"]), "--server", server.url]
    env = {**clean_env(tmp_path / "home"), "PAPERSCOPE_API_KEY": KEY}
    try:
        result = subprocess.run(obeying_permissions(command), env=env, capture_output=True, text=True, timeout=300)
    finally:
        secret.chmod(0o644)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("failed     secret.pdf") for line in lines), result.stdout
    assert any(line.endswith("secret.pdf: cannot read: Permission denied") for line in lines), result.stdout
    assert any(line.startswith("unchanged  flashrank.pdf") for line in lines), result.stdout
