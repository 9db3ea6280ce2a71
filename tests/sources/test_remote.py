"""sources/remote.py against a real HTTP server on 127.0.0.1 playing arXiv, a DOI resolver and publishers."""

from __future__ import annotations

import hashlib
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pymupdf
import pytest

from paperscope.config import SourcesSettings
from paperscope.errors import SourceError
from paperscope.sources.remote import USER_AGENT, fetch_remote, remote_kind

LIMIT_MB = 0.05  # the test settings' max_download_mb: 51 kB, far above the PDFs served, far below /huge


def _pdf(text: str) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    data: bytes = doc.tobytes()
    doc.close()
    return data


PDF_NEW = _pdf("A new-style arXiv paper")
PDF_OLD = _pdf("An old-style arXiv paper")
PDF_DOI = _pdf("A paper behind a DOI")
PDF_DIRECT = _pdf("A DOI that resolves straight to a PDF")
PDF_URL = _pdf("A PDF at a URL")

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title>arXiv Query: id_list={ident}</title>
  <entry>
    <id>http://arxiv.org/abs/{ident}v2</id>
    <published>2025-01-17T09:00:00Z</published>
    <title>Structure-Aware   Retrieval
      for Long Papers</title>
    <author><name>Grace  Hopper</name></author>
    <author><name>Alan Turing</name></author>
    <author><name>Edsger Dijkstra</name></author>
    <arxiv:doi>10.5555/ABC.Def</arxiv:doi>
  </entry>
</feed>
"""

HOSTILE_ATOM = """<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<feed xmlns="http://www.w3.org/2005/Atom">
  <entry><id>http://arxiv.org/abs/2501.66666v1</id><title>&b;</title></entry>
</feed>
"""

LANDING = """<!DOCTYPE html>
<html><head>
<meta name="citation_title" content="Ranking Passages &amp; Papers">
<meta name="citation_author" content="Lovelace, Ada">
<meta name="citation_author" content="Charles Babbage">
<meta name="citation_author" content="Somerville, Mary">
<meta name="citation_publication_date" content="2020/04/20">
<meta name="citation_journal_title" content="Journal of Tests">
<meta name="citation_doi" content="10.9999/other">
<meta name="citation_arxiv_id" content="2004.07180v3">
<meta name="citation_pdf_url" content="../files/abc.pdf">
</head><body>Landing page</body></html>
"""

PAGE = """<html><head>
<meta name="citation_title" content="A Page Naming Its PDF">
<meta name="citation_author" content="Noether, Emmy">
<meta name="citation_date" content="1921">
<meta name="citation_conference_title" content="Proceedings of Tests">
<meta name="citation_doi" content="https://doi.org/10.7777/PAGE.1">
<meta name="citation_pdf_url" content="/paper.pdf">
</head><body></body></html>
"""


def _html(pdf_url: str | None) -> bytes:
    meta = f'<meta name="citation_pdf_url" content="{pdf_url}">' if pdf_url else ""
    return f'<html><head><meta name="citation_title" content="T">{meta}</head><body>x</body></html>'.encode()


class _Server:
    """The routes; every request's path and headers are kept in `seen`."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.stop = threading.Event()
        self.api_calls = 0

    def headers_of(self, path: str) -> dict[str, str]:
        return next(headers for seen, headers in self.seen if seen == path)


def _handler(server: _Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def send_body(self, body: bytes, content_type: str, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def redirect(self, location: str, cookie: bool = False) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            if cookie:
                self.send_header("Set-Cookie", "session=secret; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def trickle(self, first: bytes, then: Callable[[], bytes | None], times: int = 2000) -> None:
            """`first`, then what `then` gives, `times` over at most: ends early only if the client stops it."""
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.end_headers()
            try:
                self.wfile.write(first)
                self.wfile.flush()
                for _ in range(times):
                    if server.stop.is_set():
                        return
                    more = then()
                    if more is None:
                        return
                    self.wfile.write(more)
                    self.wfile.flush()
            except OSError:  # the client hung up, as it should
                return

        def broken(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.send_header("Content-Length", "40000")
            self.end_headers()
            self.wfile.write(PDF_URL + b" " * 4000)  # then the connection closes, 30-odd kB short

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            server.seen.append((parts.path, {k.lower(): v for k, v in self.headers.items()}))
            route = ROUTES.get(parts.path)
            if route is not None:
                route(self)
            elif parts.path.startswith("/pdf/"):
                self.arxiv_pdf(parts.path.removeprefix("/pdf/"))
            elif parts.path == "/api/query":
                self.arxiv_api(parse_qs(parts.query)["id_list"][0])
            else:
                self.send_body(b"not found", "text/plain", 404)

        def arxiv_pdf(self, ident: str) -> None:
            pdfs = {"2501.10120v2": PDF_NEW, "2501.10120": PDF_NEW, "hep-th/9901001": PDF_OLD}
            pdfs |= {"2501.99999": PDF_URL, "2501.66666": PDF_DIRECT}
            if ident in pdfs:
                self.send_body(pdfs[ident], "application/pdf")
            else:
                self.send_body(b"<html>no such paper</html>", "text/html", 404)

        def arxiv_api(self, ident: str) -> None:
            server.api_calls += 1
            if ident == "2501.99999":
                self.send_body(b"overloaded", "text/plain", 503)
            elif ident == "2501.66666":
                self.send_body(HOSTILE_ATOM.encode(), "application/atom+xml")
            else:
                bare = ident.removesuffix("v2")
                self.send_body(ATOM.format(ident=bare).encode(), "application/atom+xml")

    def stall() -> None:
        server.stop.wait(5)  # headers sent, then nothing: only a timeout ends the wait

    ROUTES: dict[str, Callable[[Handler], None]] = {
        # the DOI resolver
        "/10.1234/abc": lambda h: h.redirect("/landing/abc", cookie=True),
        "/10.1234/direct": lambda h: h.redirect("/files/direct.pdf"),
        "/10.1234/nopdf": lambda h: h.redirect("/landing/nopdf"),
        "/10.1234/html-pdf-link": lambda h: h.redirect("/landing/html-pdf-link"),
        # publishers
        "/landing/abc": lambda h: h.send_body(LANDING.encode(), "text/html; charset=utf-8"),
        "/landing/nopdf": lambda h: h.send_body(_html(None), "text/html"),
        "/landing/html-pdf-link": lambda h: h.send_body(_html("/plain.html"), "text/html"),
        "/files/abc.pdf": lambda h: h.send_body(PDF_DOI, "application/pdf"),
        "/files/direct.pdf": lambda h: h.send_body(PDF_DIRECT, "application/pdf"),
        "/paper.pdf": lambda h: h.send_body(PDF_URL, "application/octet-stream"),
        "/page.html": lambda h: h.send_body(PAGE.encode(), "text/html"),
        "/plain.html": lambda h: h.send_body(_html(None), "text/html"),
        "/notpdf": lambda h: h.send_body(b"just some text", "text/plain"),
        "/fakepdf": lambda h: h.send_body(b"Access denied. Please log in.", "application/pdf"),
        "/huge": lambda h: h.send_body(b"%PDF-1.7\n" + b"0" * 200_000, "application/pdf"),
        "/huge-stream": lambda h: h.trickle(b"%PDF-1.7\n", lambda: b"0" * 65536),
        "/broken.pdf": lambda h: h.broken(),
        "/to-file": lambda h: h.redirect("file:///etc/passwd"),
        "/loop": lambda h: h.redirect("/loop"),
        "/page-to-file": lambda h: h.send_body(_html("file:///etc/passwd"), "text/html"),
        "/page-bad-link": lambda h: h.send_body(_html("/notpdf"), "text/html"),
        "/slow": lambda h: h.trickle(b"%PDF-1.7\n", _byte_after_a_while, times=100),  # 5 s: a PDF if uncut
        "/stall": lambda h: h.trickle(b"", stall),
    }
    return Handler


def _byte_after_a_while() -> bytes:
    time.sleep(0.05)
    return b"0"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, _Server]]:
    state = _Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    state.stop.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def base(served: tuple[str, _Server]) -> str:
    return served[0]


@pytest.fixture
def server(served: tuple[str, _Server]) -> _Server:
    served[1].seen.clear()
    return served[1]


def _settings(base: str, timeout_s: float = 10.0) -> SourcesSettings:
    return SourcesSettings(
        arxiv_url=base,
        arxiv_api_url=f"{base}/api/query",
        doi_resolver=base,
        timeout_s=timeout_s,
        max_download_mb=LIMIT_MB,
    )


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    return tmp_path / "downloads"


def _saved(downloads: Path, data: bytes) -> Path:
    """The one file in `downloads`, checked to be <sha256>.pdf of `data`."""
    files = list(downloads.iterdir())
    assert files == [downloads / f"{hashlib.sha256(data).hexdigest()}.pdf"]
    assert files[0].read_bytes() == data
    return files[0]


# --- remote_kind -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("arXiv:2501.10120", "arxiv"),
        ("arxiv:2501.10120v2", "arxiv"),
        ("arXiv:hep-th/9901001", "arxiv"),
        ("https://arxiv.org/abs/2501.10120", "arxiv"),
        ("https://arxiv.org/pdf/2501.10120v1", "arxiv"),
        ("http://arxiv.org/pdf/hep-th/9901001.pdf", "arxiv"),
        ("doi:10.1145/3366423.3380211", "doi"),
        ("DOI:10.1145/3366423.3380211", "doi"),
        ("https://doi.org/10.1145/3366423.3380211", "doi"),
        ("http://dx.doi.org/10.1000/xyz", "doi"),
        ("https://example.org/paper.pdf", "url"),
        ("http://example.org/", "url"),
        ("https://doi.org/", "url"),  # a DOI URL only with a DOI in it
        ("https://arxiv.org/list/cs.CL/recent", "url"),
        ("2501.10120", None),  # a bare id may be a file's name
        ("hep-th/9901001", None),
        ("paper.pdf", None),
        ("/home/me/2501.10120.pdf", None),
        ("papers/", None),
        ("C:\\papers\\a.pdf", None),
        ("file:///etc/passwd", None),
        ("ftp://example.org/a.pdf", None),
        ("", None),
    ],
)
def test_remote_kind(spec: str, kind: str | None) -> None:
    assert remote_kind(spec) == kind


# --- successes -------------------------------------------------------------------------------------------


def test_arxiv_new_id_with_metadata(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("arXiv:2501.10120v2", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_NEW)
    meta = item.meta
    assert meta.title == "Structure-Aware Retrieval for Long Papers"
    assert meta.authors == ["Grace Hopper", "Alan Turing", "Edsger Dijkstra"]
    assert meta.year == 2025
    assert meta.doi == "10.5555/abc.def"
    assert meta.arxiv_id == "2501.10120"  # without its version
    assert meta.origin == "arxiv"
    assert meta.url == f"{base}/pdf/2501.10120v2"
    assert server.headers_of("/pdf/2501.10120v2")["user-agent"] == USER_AGENT
    assert "/api/query" in [path for path, _ in server.seen]


def test_arxiv_old_style_id(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("arXiv:hep-th/9901001", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_OLD)
    assert item.meta.arxiv_id == "hep-th/9901001"
    assert item.meta.title == "Structure-Aware Retrieval for Long Papers"  # the API was asked for this id


def test_arxiv_url_is_fetched_from_the_configured_arxiv(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("https://arxiv.org/abs/2501.10120", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_NEW)
    assert item.meta.arxiv_id == "2501.10120"
    assert item.meta.authors[0] == "Grace Hopper"


def test_arxiv_api_failure_keeps_the_pdf(base: str, server: _Server, downloads: Path) -> None:
    calls = server.api_calls
    item = fetch_remote("arXiv:2501.99999", _settings(base), downloads)
    assert server.api_calls == calls + 1  # the API was asked, and answered 503
    assert item.pdf == _saved(downloads, PDF_URL)
    meta = item.meta
    assert (meta.title, meta.authors, meta.year, meta.doi) == ("", [], None, None)
    assert meta.origin == "arxiv"
    assert meta.arxiv_id == "2501.99999"


def test_arxiv_api_reply_with_entities_is_not_parsed(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("arXiv:2501.66666", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_DIRECT)
    assert item.meta.title == ""  # the entity-laden title was never expanded
    assert item.meta.arxiv_id == "2501.66666"


def test_doi_through_a_landing_page(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("doi:10.1234/ABC", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_DOI)
    meta = item.meta
    assert meta.title == "Ranking Passages & Papers"
    assert meta.authors == ["Ada Lovelace", "Charles Babbage", "Mary Somerville"]
    assert meta.year == 2020
    assert meta.venue == "Journal of Tests"
    assert meta.doi == "10.1234/abc"  # the DOI asked for, lower-cased, over the page's citation_doi
    assert meta.arxiv_id == "2004.07180"
    assert meta.origin == "doi"
    assert meta.url == f"{base}/10.1234/abc"
    # The relative citation_pdf_url was resolved against the landing page, and the resolver's cookie not kept.
    assert [path for path, _ in server.seen] == ["/10.1234/abc", "/landing/abc", "/files/abc.pdf"]
    assert "cookie" not in server.headers_of("/landing/abc")
    assert "cookie" not in server.headers_of("/files/abc.pdf")
    assert server.headers_of("/files/abc.pdf")["user-agent"] == USER_AGENT


def test_doi_url_goes_through_the_configured_resolver(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("https://doi.org/10.1234/abc", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_DOI)
    assert item.meta.doi == "10.1234/abc"
    assert item.meta.title == "Ranking Passages & Papers"


def test_doi_resolving_to_a_pdf(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote("doi:10.1234/direct", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_DIRECT)
    assert item.meta.doi == "10.1234/direct"
    assert item.meta.origin == "doi"


def test_url_of_a_pdf_recognised_by_its_bytes(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote(f"{base}/paper.pdf", _settings(base), downloads)  # served as application/octet-stream
    assert item.pdf == _saved(downloads, PDF_URL)
    assert item.meta.origin == "url"
    assert item.meta.url == f"{base}/paper.pdf"
    assert item.meta.empty


def test_url_of_a_page_naming_its_pdf(base: str, server: _Server, downloads: Path) -> None:
    item = fetch_remote(f"{base}/page.html", _settings(base), downloads)
    assert item.pdf == _saved(downloads, PDF_URL)
    meta = item.meta
    assert meta.title == "A Page Naming Its PDF"
    assert meta.authors == ["Emmy Noether"]
    assert meta.year == 1921
    assert meta.venue == "Proceedings of Tests"
    assert meta.doi == "10.7777/page.1"
    assert meta.origin == "url"
    assert meta.url == f"{base}/page.html"


def test_the_same_pdf_twice_reuses_the_file(base: str, server: _Server, downloads: Path) -> None:
    first = fetch_remote(f"{base}/paper.pdf", _settings(base), downloads)
    assert first.pdf is not None
    inode = first.pdf.stat().st_ino
    second = fetch_remote(f"{base}/page.html", _settings(base), downloads)  # the same PDF, reached otherwise
    assert second.pdf == first.pdf
    assert second.pdf.stat().st_ino == inode  # kept, not replaced
    _saved(downloads, PDF_URL)  # one file, no temporary left


# --- failures --------------------------------------------------------------------------------------------


def _fails(spec: str, settings: SourcesSettings, downloads: Path) -> SourceError:
    with pytest.raises(SourceError) as caught:
        fetch_remote(spec, settings, downloads)
    error = caught.value
    assert "\n" not in str(error)
    assert str(error).startswith(f"{spec}: ")
    assert not downloads.exists() or list(downloads.iterdir()) == []  # no PDF, no temporary file
    return error


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/plain.html", "not a PDF (text/html, no citation_pdf_url)"),
        ("/notpdf", "not a PDF (text/plain)"),
        ("/fakepdf", "not a PDF (application/pdf)"),  # the label alone does not make a PDF
        ("/huge", f"larger than {LIMIT_MB:g} MB"),  # refused from its Content-Length
        ("/huge-stream", f"larger than {LIMIT_MB:g} MB"),  # no Content-Length, endless: counted and cut
        ("/to-file", "a redirect to file:///etc/passwd is refused (only http and https are fetched)"),
        ("/loop", "more than 5 redirects"),
        ("/page-to-file", "file:///etc/passwd is refused"),
        ("/page-bad-link", "/notpdf is not a PDF (text/plain)"),
        ("/missing", "the server answered 404"),
    ],
)
def test_url_failures(base: str, server: _Server, downloads: Path, path: str, expected: str) -> None:
    error = _fails(f"{base}{path}", _settings(base), downloads)
    assert expected in str(error)


def test_a_body_cut_short_removes_the_temporary_file(
    base: str, server: _Server, downloads: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def mkstemp(**kwargs: str | Path) -> tuple[int, str]:
        handle, name = real_mkstemp(**kwargs)  # type: ignore[call-overload]
        made.append(name)
        return handle, name

    real_mkstemp = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    error = _fails(f"{base}/broken.pdf", _settings(base), downloads)
    assert "the connection to " in str(error) and " failed (" in str(error)
    assert isinstance(error.__cause__, httpx.HTTPError)
    assert len(made) == 1 and Path(made[0]).parent == downloads  # the download had begun in the folder
    assert list(downloads.iterdir()) == []


def test_doi_unknown_to_the_resolver(base: str, server: _Server, downloads: Path) -> None:
    error = _fails("doi:10.1234/missing", _settings(base), downloads)
    assert str(error) == "doi:10.1234/missing: the resolver answered 404"


def test_doi_landing_page_without_pdf(base: str, server: _Server, downloads: Path) -> None:
    error = _fails("doi:10.1234/nopdf", _settings(base), downloads)
    expected = f"doi:10.1234/nopdf: the landing page {base}/landing/nopdf names no PDF (citation_pdf_url)"
    assert str(error) == expected


def test_doi_whose_pdf_link_is_a_page(base: str, server: _Server, downloads: Path) -> None:
    error = _fails("doi:10.1234/html-pdf-link", _settings(base), downloads)
    assert f"the PDF link {base}/plain.html is not a PDF (text/html)" in str(error)


def test_arxiv_id_unknown(base: str, server: _Server, downloads: Path) -> None:
    error = _fails("arXiv:2501.00404", _settings(base), downloads)
    assert f"arXiv ({base}/pdf/2501.00404) answered 404" in str(error)


def test_malformed_ids(base: str, downloads: Path) -> None:
    assert "not an arXiv id" in str(_fails("arXiv:not-an-id", _settings(base), downloads))
    assert "not a DOI" in str(_fails("doi:11.2/x", _settings(base), downloads))
    assert "not an arXiv id, a DOI or an http(s) URL" in str(_fails("paper.pdf", _settings(base), downloads))


def test_a_trickle_is_cut_at_the_deadline(base: str, server: _Server, downloads: Path) -> None:
    started = time.monotonic()
    error = _fails(f"{base}/slow", _settings(base, timeout_s=1.0), downloads)
    assert time.monotonic() - started < 4
    assert "no complete answer within 1 s" in str(error)


def test_a_stalled_server_times_out(base: str, server: _Server, downloads: Path) -> None:
    started = time.monotonic()
    error = _fails(f"{base}/stall", _settings(base, timeout_s=1.0), downloads)
    assert time.monotonic() - started < 4
    assert "did not answer within 1 s" in str(error)
    assert isinstance(error.__cause__, httpx.TimeoutException)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens there any more


def test_switched_off_server(downloads: Path) -> None:
    off = f"http://127.0.0.1:{_closed_port()}"
    for spec in ("arXiv:2501.10120", "doi:10.1234/abc", f"{off}/paper.pdf"):
        error = _fails(spec, _settings(off), downloads)
        assert str(error) == f"{spec}: cannot reach {off} (connection refused)"
        assert isinstance(error.__cause__, httpx.ConnectError)


def test_unknown_host_names_the_dns_failure(monkeypatch: pytest.MonkeyPatch, downloads: Path) -> None:
    def no_dns(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)  # what an offline resolver answers
    spec = "https://papers.example/x.pdf"
    error = _fails(spec, _settings("https://arxiv.example"), downloads)
    assert str(error) == f"{spec}: cannot reach https://papers.example (name not resolved)"
