"""The web page of `paperscope serve`: static files only (HTML, JavaScript, CSS), no build step, nothing from a CDN.

The service mounts `STATIC` and serves `INDEX` at `/`; the page talks to the /v1 API like any other client.
"""

from __future__ import annotations

from pathlib import Path

#: The page's files, served at /static/.
STATIC = Path(__file__).resolve().parent / "static"
#: The page itself, served at /.
INDEX = STATIC / "index.html"
