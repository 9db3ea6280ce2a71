"""`paperscope config` and `paperscope operators` as a researcher reads them at 80 columns, on a terminal or piped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from paperscope.cli import app
from paperscope.config import Settings
from tests import test_config

home = test_config.home  # a data directory of its own, an environment without paperscope, Milvus or OpenAI variables


def descriptions() -> dict[str, str]:
    """{dotted name: its Field description} of every setting, read off the model itself."""
    out: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        part = info.annotation
        if isinstance(part, type) and issubclass(part, BaseModel):
            out |= {f"{name}.{sub}": sub_info.description or "" for sub, sub_info in part.model_fields.items()}
        else:
            out[name] = info.description or ""
    return out


def flat(text: str) -> str:
    return " ".join(text.split())


def test_every_setting_is_described() -> None:
    assert all(descriptions().values()), [name for name, text in descriptions().items() if not text]


def at_80_columns(args: list[str], env: dict[str, str | None]) -> str:
    """What `paperscope ARGS` prints in a terminal 80 columns wide (or piped): no line is wider."""
    result = CliRunner(env=env).invoke(app, args, terminal_width=80)
    assert result.exit_code == 0, result.stderr
    wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not wide, wide
    return result.stdout


@pytest.mark.parametrize("env", [{"COLUMNS": "80"}, {"COLUMNS": None}], ids=["COLUMNS=80", "piped, no COLUMNS"])
def test_config_shows_each_setting_with_its_description_at_80_columns(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str | None]
) -> None:
    monkeypatch.setenv("PAPERSCOPE_RETRIEVAL__CANDIDATES", "30")
    (home / "config.toml").write_text("[retrieval]\nwindow = 2\n")
    out = at_80_columns(["config"], env)
    lines = out.splitlines()
    assert not [line for line in lines if line != line.rstrip()]  # nothing padded to the width
    text = flat(out)
    for name, description in descriptions().items():
        # The name and its value whole on their line, the description (wrapped, indented) under it.
        assert any(re.match(rf"{re.escape(name)} = ", line) for line in lines), name
        assert flat(description) in text, name
        after = out[out.index(f"\n{name} = ") + 1 :].splitlines()[1:]
        under = next(line for line in after if line.startswith("    "))  # a long value's line goes on 2 in
        assert flat(description).startswith(under.strip()), (name, after[:3])
    assert "retrieval.k = 5  (default)" in lines
    assert "retrieval.candidates = 30  (env: PAPERSCOPE_RETRIEVAL__CANDIDATES)" in lines
    # A path longer than a line is folded, not cut.
    assert f"retrieval.window=2(user:{home / 'config.toml'}:2)" in "".join(out.split())
    assert "[retrieval] Retrieval and context." in lines


def operators() -> list[dict[str, object]]:
    result = CliRunner().invoke(app, ["operators", "--json"])
    assert result.exit_code == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


@pytest.mark.parametrize("env", [{"COLUMNS": "80"}, {"COLUMNS": None}], ids=["COLUMNS=80", "piped, no COLUMNS"])
def test_operators_are_readable_at_80_columns_when_piped(env: dict[str, str | None]) -> None:
    out = at_80_columns(["operators"], env)
    lines = out.splitlines()
    listed = operators()
    assert lines[0] == f"{len(listed)} operators"
    names = [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]
    assert names == [str(o["name"]) for o in listed]  # every operator, in the registry's order, a line each
    for o in listed:
        needs = f"  (needs {', '.join(o['needs'])})" if o["needs"] else ""  # type: ignore[arg-type]
        assert f"  {o['name']}{needs}" in lines, o
        assert flat(str(o["summary"])) in flat(out), o["name"]
    kinds = dict.fromkeys(str(o["kind"]) for o in listed)
    assert [line for line in lines if line and not line.startswith(" ")][1:] == [f"{kind}s" for kind in kinds]
