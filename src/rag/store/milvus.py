"""pymilvus, imported once with MILVUS_URI set aside: every part of the store takes its pymilvus names from here.

pymilvus parses MILVUS_URI when it is imported and raises on anything but a server URL, so
`MILVUS_URI=/path/kb.db` (a Lite file, which paperscope reads itself) would end in a traceback.
The variable is hidden for the import and put back, so configuration still sees it (config.py).
"""

from __future__ import annotations

import os

from ...backend_logs import backend_imported

_ENV_URI = os.environ.pop("MILVUS_URI", None)
try:
    from pymilvus import (  # type: ignore[import-untyped]
        AnnSearchRequest,
        CollectionSchema,
        DataType,
        Function,
        FunctionType,
        MilvusClient,
        RRFRanker,
        WeightedRanker,
    )
finally:
    if _ENV_URI is not None:
        os.environ["MILVUS_URI"] = _ENV_URI
backend_imported()  # pymilvus set its loggers up just now: quiet them again if the command asked for it


def _no_scipy_probe() -> None:
    """pymilvus imports scipy.sparse on the first search to ask whether the query is a scipy matrix (a third of a
    second of a short command); paperscope searches with texts and lists only, so it is told scipy is absent."""
    try:
        from pymilvus.client.utils import SciPyHelper  # type: ignore[import-untyped]
    except ImportError:  # another pymilvus layout: it may import scipy, nothing breaks
        return
    if not getattr(SciPyHelper, "_checked", True):
        SciPyHelper._matrix_available = False
        SciPyHelper._array_available = False
        SciPyHelper._checked = True


_no_scipy_probe()

__all__ = [
    "AnnSearchRequest",
    "CollectionSchema",
    "DataType",
    "Function",
    "FunctionType",
    "MilvusClient",
    "RRFRanker",
    "WeightedRanker",
]
