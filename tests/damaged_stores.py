"""What a killed process or a disk fault leaves in a real store:

- `interrupt_ingest`: an ingest killed half-way: the paper's row still "ingesting", listing every chunk its ingest
  was writing, and only the first batches of those chunks stored;
- `overwrite_vector_bytes`: bytes of a paper's catalogue vector overwritten where they lie in the papers
  collection's data file (the store closed), which Milvus Lite reads back without noticing (its Parquet pages
  carry no checksum).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from paperscope.rag.ingest import doc_id_for, file_sha256, prepare
from paperscope.rag.store import PaperStore


class Killed(Exception):
    """Stands for the process being killed: nothing after it runs, not even ingest's own clean-up."""


def interrupt_ingest(store: PaperStore, path: Path, stored: int) -> tuple[str, int]:
    """Write the paper at `path` the way ingest does until `stored` body chunks are in, then stop as a killed
    process stops; (doc_id, the body chunks its catalogue row lists). `stored` must be a multiple of the store's
    write batch, smaller than the paper's chunks."""
    paper, chunks = prepare(path, store.settings, store.embedder)
    assert all(c.kind == "chunk" for c in chunks) and stored < len(chunks) and stored % store.write_batch == 0

    def killed_after(done: int, total: int) -> None:  # called as chunks are embedded, before their batch is written
        if done > stored:
            raise Killed

    sha = file_sha256(path)
    try:
        store.insert_paper_chunks(paper, chunks, doc_id_for(sha), sha, str(path), on_batch=killed_after)
    except Killed:
        pass
    else:
        raise AssertionError("the ingest was not cut short")
    return doc_id_for(sha), len(chunks)


def overwrite_vector_bytes(lite_dir: Path, kb: str, doc_id: str, fill: bytes) -> None:
    """Write `fill` over components 100.. of the catalogue vector of `doc_id` in the newest data file of the
    `{kb}_papers` collection of the Milvus Lite data at `lite_dir` that holds its row."""
    data = lite_dir / "collections" / f"{kb}_papers" / "partitions" / "_default" / "data"
    tables = {path: pq.read_table(path, columns=["doc_id", "vector"]) for path in sorted(data.glob("*.parquet"))}
    [*_, (path, table)] = [(p, t) for p, t in tables.items() if doc_id in t.column("doc_id").to_pylist()]
    row = table.column("doc_id").to_pylist().index(doc_id)
    vector = np.asarray(table.column("vector")[row].as_py(), dtype=np.float32)
    stored = vector[100 : 100 + len(fill) // 4].tobytes()
    raw = path.read_bytes()
    assert raw.count(stored) == 1, "the vector's bytes lie in the file as they are (Snappy keeps them literal)"
    path.write_bytes(raw.replace(stored, fill))
