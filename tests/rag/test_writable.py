"""A read-only Milvus Lite data directory is said to be read-only, not damaged.

The tests here run in the test process, which is root in CI, and root may write anywhere: the failures
Milvus Lite would meet (creating a file, opening LOCK for writing, a folder it may not write) are injected.
The real thing, a `chmod -R a-w` home read by every command in a process that obeys file permissions, is
`test_a_read_only_home_is_said_to_be_read_only_by_every_command` in tests/test_cli.py.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from paperscope.config import Settings
from paperscope.rag.embeddings import CachedEmbedder
from paperscope.rag.store import PaperStore, lite_problem
from paperscope.rag.writable import read_only_problem


@pytest.fixture
def lite_dir(tmp_path: Path, local_embedder: CachedEmbedder) -> Path:
    """A real Milvus Lite data directory (closed again), with its LOCK file and collection folders."""
    settings = Settings(home=tmp_path / "home")
    with PaperStore.open(settings, local_embedder):
        pass
    data = tmp_path / "home" / "milvus.db"
    assert (data / "LOCK").exists()
    return data


def refuse(code: int) -> Any:
    def fail(*args: object, **kwargs: object) -> Any:
        raise OSError(code, os.strerror(code))

    return fail


def test_a_writable_data_directory_has_no_problem(lite_dir: Path, tmp_path: Path) -> None:
    assert read_only_problem(lite_dir) is None
    assert read_only_problem(tmp_path / "new" / "milvus.db") is None  # it can be created
    assert not [p for p in lite_dir.iterdir() if p.name.startswith(".paperscope-write-probe")]  # probe removed


def test_a_data_directory_that_refuses_new_files_is_read_only_not_damaged(
    lite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "mkstemp", refuse(errno.EACCES))
    problem = read_only_problem(lite_dir)
    assert problem is not None
    assert problem.startswith(f"{lite_dir} is read-only (Permission denied): Milvus Lite must write to its data")
    assert "`paperscope parse` needs no store" in problem and "\n" not in problem
    why = lite_problem(str(lite_dir))
    assert why == problem and "damaged" not in why


def test_a_read_only_file_system_is_named(lite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "mkstemp", refuse(errno.EROFS))
    assert f"{lite_dir} is read-only (Read-only file system)" in str(read_only_problem(lite_dir))


def test_a_lock_file_that_cannot_be_opened_for_writing_is_named(
    lite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open
    lock = lite_dir / "LOCK"

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path) == lock and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    assert str(read_only_problem(lite_dir)).startswith(f"{lock} is read-only (Permission denied)")
    assert "damaged" not in lite_problem(str(lite_dir))


def test_a_folder_inside_that_may_not_be_written_is_named(lite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collections = lite_dir / "collections"
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode, **kw: Path(path) != collections and real_access(path, mode, **kw)
    )
    assert str(read_only_problem(lite_dir)).startswith(f"{collections} is read-only (Permission denied)")


def test_a_data_directory_that_cannot_be_created_names_the_read_only_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "mkstemp", refuse(errno.EACCES))
    data = tmp_path / "home" / "milvus.db"
    assert read_only_problem(data) == (
        f"{tmp_path} is read-only (Permission denied): the Milvus Lite data {data} cannot be created there; "
        "set PAPERSCOPE_HOME to a writable folder"
    )
    assert "damaged" not in lite_problem(str(data))


def test_a_file_in_place_of_the_data_directory_is_not_a_permission_problem(tmp_path: Path) -> None:
    file = tmp_path / "milvus.db"
    file.write_text("an older Milvus Lite file")
    assert read_only_problem(file) is None
    assert "is not a Milvus Lite data directory" in lite_problem(str(file))
