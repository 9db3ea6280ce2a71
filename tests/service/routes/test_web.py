"""The web page's files over real HTTP: served without the key, every file the page loads served by paperscope
itself (nothing from another host), a policy that lets the page run only its own script, and every file shipped
in the package."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from paperscope.web import INDEX, STATIC
from tests.served import Served

ROOT = Path(__file__).resolve().parents[3]
# src="..." / href="..." in HTML, import ... from "..." in the scripts, url(...) in the style sheet.
REFERENCE = re.compile(r"""(?:src|href)="([^"]+)"|from\s+"([^"]+)"|url\(([^)]+)\)""")


@pytest.fixture
def anonymous(server: Served) -> Iterator[httpx.Client]:
    with server.client(key=None) as client:
        yield client


def static_files() -> list[Path]:
    return sorted(p for p in STATIC.rglob("*") if p.is_file())


def test_the_page_is_served_without_the_key_with_a_strict_policy(anonymous: httpx.Client) -> None:
    page = anonymous.get("/", params={"q": "What is FlashRank?"})
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.text == INDEX.read_text()
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    # The data stays behind the key: only the page's own files are public.
    assert anonymous.get("/v1/documents").status_code == 401


def test_every_file_the_page_loads_is_served_from_this_server(anonymous: httpx.Client) -> None:
    files = static_files()
    assert {p.name for p in files} >= {"index.html", "style.css", "main.js", "api.js", "chat.js", "viewer.js"}
    loaded: set[str] = set()
    for path in files:
        for match in REFERENCE.finditer(path.read_text()):
            ref = next(g for g in match.groups() if g is not None).strip("'\"")
            assert not re.match(r"^(?:[a-z]+:)?//", ref), f"{path.name} loads {ref} from another host"
            if ref.startswith("data:"):
                continue
            base = "/static/js/" if path.suffix == ".js" else "/static/"
            loaded.add(ref if ref.startswith("/") else base + ref.removeprefix("./"))
    assert "/static/js/main.js" in loaded and "/static/style.css" in loaded
    for url in sorted(loaded):
        response = anonymous.get(url)
        assert response.status_code == 200, url
    assert anonymous.get("/static/js/main.js").headers["content-type"].startswith("text/javascript")
    missing = anonymous.get("/static/nothing.js")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_the_page_never_puts_text_in_as_markup() -> None:
    scripts = "\n".join(p.read_text() for p in static_files() if p.suffix == ".js")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in scripts, sink


def test_the_package_ships_every_file_of_the_page() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["paperscope"]
    src = ROOT / "src"
    shipped = {p for pattern in globs for p in src.glob(pattern)}
    assert set(static_files()) <= shipped


def test_the_api_docs_load_every_file_from_this_server(anonymous: httpx.Client) -> None:
    """FastAPI's own page loads Swagger UI from a CDN: blank offline. Ours names only files served here."""
    page = "/docs"
    html = anonymous.get(page)
    assert html.status_code == 200 and "paperscope" in html.text
    refs = [next(g for g in m.groups() if g is not None).strip("'\"") for m in REFERENCE.finditer(html.text)]
    urls = re.findall(r"""url:\\s*'([^']+)'|spec-url="([^"]+)\"""", html.text)
    assert refs and not re.search(r"https?://|//cdn", html.text), html.text
    for ref in refs + [u for pair in urls for u in pair if u]:
        assert ref.startswith("/"), f"{page} loads {ref}"
        response = anonymous.get(ref)
        assert response.status_code == 200, ref
        assert len(response.content) > 100, ref
    assert "/openapi.json" in html.text and anonymous.get("/openapi.json").json()["info"]["title"] == "paperscope"
    assert anonymous.get("/redoc").status_code == 404  # ReDoc's bundle fetches its logo from a CDN: not served
