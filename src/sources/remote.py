"""Papers named by an arXiv id, a DOI or a URL, downloaded into the downloads folder (`fetch_remote`).

`remote_kind` tells such a name from a local path: "arXiv:2501.10120" (or "arXiv:hep-th/9901001", or an
arxiv.org /abs/ or /pdf/ URL), "doi:10.1145/..." (or a doi.org URL), any other http(s) URL. A bare id such as
"2501.10120" is not taken: a file may be named so.

- arXiv: the PDF from `<arxiv_url>/pdf/<id>`, title, authors, year and DOI from the Atom API
  (`<arxiv_api_url>?id_list=<id>`). Metadata is a bonus: when the API fails the PDF is kept without it.
- DOI: the resolver leads to a landing page; its `citation_*` meta tags (the Highwire tags Google Scholar
  reads, which most publishers write) give the metadata and `citation_pdf_url` the PDF. A resolver that ends
  at a PDF directly is fine too.
- URL: a PDF is taken as is; an HTML page is read like a DOI's landing page.

Whatever a server says is hostile input: only http and https are fetched (redirects and PDF links included), at
most `MAX_REDIRECTS` redirects are followed, every download is bounded in size (`max_download_mb`, counted
while streaming, not only from Content-Length) and in time (`timeout_s`, wall-clock, redirects included), a PDF
is recognised by its first bytes, and the Atom reply is refused if it declares a DOCTYPE or entities (the
stdlib XML parser would expand them). A PDF goes to `<downloads>/<sha256>.pdf` through a temporary file renamed
at the end, so a failed download leaves nothing behind and an identical earlier download is reused.

Every failure is one `SourceError` whose one-line message names the spec and what failed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import logging
import os
import re
import socket
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urljoin, urlsplit

import httpx

from ..config import SourcesSettings
from ..errors import SourceError
from .models import LibraryItem, PaperMeta

log = logging.getLogger(__name__)

RemoteKind = Literal["arxiv", "doi", "url"]

USER_AGENT = "paperscope (+local)"
MAX_REDIRECTS = 5
MB = 1024 * 1024
PAGE_LIMIT_MB = 4.0  # a landing page's meta tags sit in its head: more than this is not read
ATOM_LIMIT_MB = 2.0  # the Atom reply for one id is a few kB
PDF_MAGIC = b"%PDF-"
_SCHEMES = ("http", "https")

_NEW_ID = r"\d{4}\.\d{4,5}(?:v\d+)?"  # 0704.0001 .. 1412.9999, then 1501.00001 on
_OLD_ID = r"[a-z]+(?:-[a-z]+)*(?:\.[a-z]{2})?/\d{7}(?:v\d+)?"  # hep-th/9901001, math.GT/0309136
_ARXIV_ID = re.compile(rf"{_NEW_ID}|{_OLD_ID}", re.IGNORECASE)
_ARXIV_PATH = re.compile(rf"/(?:abs|pdf)/(?P<id>{_NEW_ID}|{_OLD_ID})(?:\.pdf)?/?", re.IGNORECASE)
_ARXIV_HOSTS = frozenset({"arxiv.org", "www.arxiv.org", "export.arxiv.org"})
_VERSION = re.compile(r"v\d+$", re.IGNORECASE)
_DOI = re.compile(r"10\.\d{4,9}/\S+")
_DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})
_DOI_PREFIXES = re.compile(r"^(?:doi:\s*|https?://(?:dx\.|www\.)?doi\.org/)", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
_DECLARATIONS = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV_NS = "{http://arxiv.org/schemas/atom}"

_CONNECT_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "timed out",
}


# --- what a spec names -----------------------------------------------------------------------------------


def remote_kind(spec: str) -> RemoteKind | None:
    """ "arxiv", "doi" or "url" for a spec naming a paper on the web; None for anything else (a local path).

    A spec with the "arXiv:" or "doi:" prefix counts even when what follows is malformed: `fetch_remote` then
    says so, which helps more than "no such file".
    """
    text = spec.strip()
    lowered = text.lower()
    if lowered.startswith("arxiv:"):
        return "arxiv"
    if lowered.startswith("doi:"):
        return "doi"
    parts = urlsplit(text)
    if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
        return None
    if parts.hostname in _DOI_HOSTS and _DOI.fullmatch(unquote(parts.path.lstrip("/"))):
        return "doi"
    if parts.hostname in _ARXIV_HOSTS and _ARXIV_PATH.fullmatch(parts.path):
        return "arxiv"
    return "url"


def _arxiv_id(spec: str) -> str:
    """The arXiv id (version kept) a spec names, or a SourceError."""
    text = spec.strip()
    if text.lower().startswith("arxiv:"):
        ident = text[len("arxiv:") :].strip()
        if _ARXIV_ID.fullmatch(ident):
            return ident
    else:
        match = _ARXIV_PATH.fullmatch(urlsplit(text).path)
        if match:
            return match["id"]
    raise SourceError(_one_line(f"{spec}: not an arXiv id (such as 2501.10120 or hep-th/9901001)"))


def _spec_doi(spec: str) -> str:
    """The DOI (lower-cased) a spec names, or a SourceError."""
    text = spec.strip()
    if text.lower().startswith("doi:"):
        doi = text[len("doi:") :].strip()
    else:
        doi = unquote(urlsplit(text).path.lstrip("/"))
    if not _DOI.fullmatch(doi):
        raise SourceError(_one_line(f"{spec}: not a DOI (10.<registrant>/<suffix>)"))
    return doi.lower()


# --- the one entry point ---------------------------------------------------------------------------------


def fetch_remote(spec: str, settings: SourcesSettings, downloads: Path) -> LibraryItem:
    """Download the paper `spec` names into `downloads` (as <sha256>.pdf) with the metadata found on the way.

    Raises SourceError (one line naming `spec`) when the spec is not remote, a server cannot be reached or
    answers with an error, nothing that is a PDF is found, or a limit (size, time, redirects) is passed.
    """
    kind = remote_kind(spec)
    if kind is None:
        raise SourceError(_one_line(f"{spec}: not an arXiv id, a DOI or an http(s) URL"))
    try:
        downloads.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SourceError(_one_line(f"{spec}: cannot create the downloads folder {downloads} ({exc})")) from exc
    with _client(settings) as client:
        session = _Session(spec.strip(), settings, downloads, client)
        if kind == "arxiv":
            return _fetch_arxiv(session, _arxiv_id(spec))
        if kind == "doi":
            return _fetch_doi(session, _spec_doi(spec))
        return _fetch_url(session, spec.strip())


def _client(settings: SourcesSettings) -> httpx.Client:
    # A jar whose policy accepts no domain: no cookie set by one server is sent back, not even to itself.
    jar = CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))
    return httpx.Client(
        headers={"User-Agent": USER_AGENT},
        cookies=jar,
        follow_redirects=False,  # followed by hand: each target's scheme is checked and the hops counted
        timeout=httpx.Timeout(settings.timeout_s),
    )


@dataclass
class _Session:
    """One `fetch_remote` call: what every step needs to download and to word its errors."""

    spec: str
    settings: SourcesSettings
    downloads: Path
    client: httpx.Client

    def fail(self, reason: str) -> SourceError:
        return SourceError(_one_line(f"{self.spec}: {reason}"))


# --- arXiv -----------------------------------------------------------------------------------------------


def _fetch_arxiv(s: _Session, ident: str) -> LibraryItem:
    pdf_url = f"{s.settings.arxiv_url.rstrip('/')}/pdf/{ident}"
    pdf = _download_pdf(s, pdf_url, f"arXiv ({pdf_url})")
    meta = _arxiv_meta(s, ident) or PaperMeta()
    known = {"origin": "arxiv", "arxiv_id": _VERSION.sub("", ident), "url": pdf_url}
    return LibraryItem(pdf=pdf, meta=meta.model_copy(update=known))


def _arxiv_meta(s: _Session, ident: str) -> PaperMeta | None:
    """The API's metadata of `ident`, or None (logged) when it cannot be had: the PDF is worth keeping anyway."""
    try:
        url = str(httpx.URL(s.settings.arxiv_api_url).copy_merge_params({"id_list": ident}))
        with _open(s, url, "the arXiv API", ATOM_LIMIT_MB) as body:
            data = b"".join(body.chunks)
        return _parse_atom(s, data, _VERSION.sub("", ident))
    except (SourceError, httpx.InvalidURL) as exc:
        log.warning("no metadata from the arXiv API: %s", exc)
        return None


def _parse_atom(s: _Session, data: bytes, ident: str) -> PaperMeta:
    """Title, authors, year and DOI of the entry for `ident` (without version) in an Atom reply."""
    try:
        # Decoded first so that no other encoding (UTF-16, say) hides a declaration from the check below.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise s.fail("the arXiv API's reply is not UTF-8") from exc
    if _DECLARATIONS.search(text):
        raise s.fail("the arXiv API's reply declares a DOCTYPE or entities; it is not read")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise s.fail(f"the arXiv API's reply is not XML ({exc})") from exc
    entry = _atom_entry(root, ident)
    if entry is None:
        raise s.fail("the arXiv API has no entry for it")
    published = entry.findtext(f"{_ATOM}published") or ""
    doi = _normal_doi(entry.findtext(f"{_ARXIV_NS}doi") or "")
    return PaperMeta(
        title=_one_line(entry.findtext(f"{_ATOM}title") or ""),
        authors=[_one_line(a.findtext(f"{_ATOM}name") or "") for a in entry.findall(f"{_ATOM}author")],
        year=_year(published),
        venue="arXiv",
        doi=doi,
    )


def _atom_entry(root: ET.Element, ident: str) -> ET.Element | None:
    """The entry whose id is arxiv.org/abs/<ident>[vN]; an error entry or another paper's does not count."""
    for entry in root.iter(f"{_ATOM}entry"):
        entry_id = (entry.findtext(f"{_ATOM}id") or "").strip()
        tail = entry_id.split("/abs/", 1)[-1] if "/abs/" in entry_id else ""
        if tail and _VERSION.sub("", tail).lower() == ident.lower():
            return entry
    return None


# --- DOIs and URLs ---------------------------------------------------------------------------------------


def _fetch_doi(s: _Session, doi: str) -> LibraryItem:
    url = f"{s.settings.doi_resolver.rstrip('/')}/{quote(doi, safe='/:;()')}"
    item = _fetch_page_or_pdf(s, url, "the resolver", origin="doi")
    # The DOI asked for is the paper's, whatever the landing page's tags say.
    return item.model_copy(update={"meta": item.meta.model_copy(update={"doi": doi})})


def _fetch_url(s: _Session, url: str) -> LibraryItem:
    return _fetch_page_or_pdf(s, url, "the server", origin="url")


def _fetch_page_or_pdf(s: _Session, url: str, label: str, origin: RemoteKind) -> LibraryItem:
    """A PDF at `url` (after redirects), or the one its HTML page names in citation_pdf_url."""
    with _open(s, url, label, s.settings.max_download_mb) as body:
        if body.is_pdf():
            return LibraryItem(pdf=_store_pdf(s, body), meta=PaperMeta(origin=origin, url=url))
        page_url, content_type = str(body.response.url), body.content_type
        if not body.is_html():
            where = "" if origin == "url" else f"the landing page {page_url} is "
            raise s.fail(f"{where}not a PDF ({content_type})")
        page = body.read_page(PAGE_LIMIT_MB)
        tags = _CitationTags.read(page, body.response.charset_encoding)
    pdf_links = tags.values.get("citation_pdf_url")
    if not pdf_links:
        if origin == "url":
            raise s.fail(f"not a PDF ({content_type}, no citation_pdf_url)")
        raise s.fail(f"the landing page {page_url} names no PDF (citation_pdf_url)")
    pdf_url = urljoin(urljoin(page_url, tags.base), pdf_links[0])
    pdf = _download_pdf(s, pdf_url, f"the PDF link {pdf_url}")
    return LibraryItem(pdf=pdf, meta=_page_meta(tags.values, origin, url))


def _page_meta(tags: dict[str, list[str]], origin: RemoteKind, url: str) -> PaperMeta:
    def first(*names: str) -> str:
        return next((tags[n][0] for n in names if tags.get(n)), "")

    arxiv = re.sub(r"^arxiv:\s*", "", first("citation_arxiv_id"), flags=re.IGNORECASE)
    return PaperMeta(
        title=first("citation_title"),
        authors=[_given_family(a) for a in tags.get("citation_author", [])],
        year=_year(first("citation_publication_date", "citation_date", "citation_year")),
        venue=first("citation_journal_title", "citation_conference_title"),
        doi=_normal_doi(first("citation_doi")),
        arxiv_id=_VERSION.sub("", arxiv) if _ARXIV_ID.fullmatch(arxiv) else None,
        url=url,
        origin=origin,
    )


class _CitationTags(HTMLParser):
    """The `<meta name="citation_...">` tags of a page (in order) and its `<base href>`."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: dict[str, list[str]] = {}
        self.base = ""

    @classmethod
    def read(cls, page: bytes, charset: str | None) -> _CitationTags:
        try:
            text = page.decode(charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know: the tags are ASCII in practice
            text = page.decode("utf-8", errors="replace")
        parser = cls()
        with contextlib.suppress(AssertionError, ValueError):  # markup html.parser gives up on: keep what it read
            parser.feed(text)
            parser.close()
        return parser

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k.lower(): (v or "") for k, v in attrs}
        if tag == "base" and not self.base:
            self.base = attributes.get("href", "").strip()
        if tag != "meta":
            return
        name = attributes.get("name", "").strip().lower()
        content = _one_line(attributes.get("content", ""))
        if name.startswith("citation_") and content:
            self.values.setdefault(name, []).append(content)


# --- downloading -----------------------------------------------------------------------------------------


class _Clock:
    """The wall-clock limit of one download, all redirects included."""

    def __init__(self, s: _Session) -> None:
        self._session = s
        self._ends = time.monotonic() + s.settings.timeout_s

    def remaining(self) -> float:
        """Seconds left, or a SourceError once none are."""
        left = self._ends - time.monotonic()
        if left <= 0:
            raise self._session.fail(f"no complete answer within {self._session.settings.timeout_s:g} s")
        return left


@dataclass
class _Body:
    """A response whose status was checked, its bytes read on demand within the size and time limits."""

    response: httpx.Response
    chunks: Iterator[bytes]
    head: bytes = field(default=b"")

    @property
    def content_type(self) -> str:
        return self.response.headers.get("content-type", "").split(";")[0].strip().lower() or "no content type"

    def peek(self, size: int = 1024) -> bytes:
        """The first `size` bytes (fewer for a shorter body), kept to be read again."""
        while len(self.head) < size:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            self.head += chunk
        return self.head

    def is_pdf(self) -> bool:
        # The bytes decide: servers label PDFs application/octet-stream, and HTML error pages application/pdf.
        return self.peek().startswith(PDF_MAGIC)

    def is_html(self) -> bool:
        if "html" in self.content_type:
            return True
        start = self.peek().lstrip(b"\xef\xbb\xbf \t\r\n").lower()
        return start.startswith((b"<!doctype html", b"<html"))

    def all_chunks(self) -> Iterator[bytes]:
        return itertools.chain([self.head], self.chunks)

    def read_page(self, limit_mb: float) -> bytes:
        """Up to `limit_mb` of the body; the rest is not read (the tags wanted are near the top)."""
        page = bytearray()
        for chunk in self.all_chunks():
            page += chunk
            if len(page) >= limit_mb * MB:
                break
        return bytes(page[: int(limit_mb * MB)])


@contextlib.contextmanager
def _open(s: _Session, url: str, label: str, limit_mb: float) -> Iterator[_Body]:
    """GET `url`, redirects followed, as a `_Body` no larger than `limit_mb`; closed on leaving."""
    clock = _Clock(s)
    response = _follow(s, url, label, clock)
    try:
        length = response.headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > limit_mb * MB:
            raise s.fail(f"larger than {limit_mb:g} MB")
        yield _Body(response, _chunks(s, response, clock, limit_mb))
    finally:
        response.close()


def _follow(s: _Session, url: str, label: str, clock: _Clock) -> httpx.Response:
    """The response at the end of `url`'s redirects (http and https only, at most MAX_REDIRECTS), status 2xx."""
    for hop in range(MAX_REDIRECTS + 1):
        _check_scheme(s, url, "a redirect to" if hop else "the URL")
        response = _send(s, url, clock)
        if response.is_redirect:
            url = urljoin(str(response.url), response.headers["location"])
            response.close()
            continue
        if not response.is_success:
            response.close()
            who = label if hop == 0 else str(response.url)
            raise s.fail(f"{who} answered {response.status_code}")
        return response
    raise s.fail(f"more than {MAX_REDIRECTS} redirects from {label}")


def _check_scheme(s: _Session, url: str, what: str) -> None:
    scheme = urlsplit(url).scheme.lower()
    if scheme not in _SCHEMES:
        shown = url if len(url) <= 100 else url[:100] + "..."
        raise s.fail(f"{what} {shown} is refused (only http and https are fetched)")


def _send(s: _Session, url: str, clock: _Clock) -> httpx.Response:
    # Each hop may take only what is left of the download's time, so redirects cannot stretch it.
    timeout = httpx.Timeout(clock.remaining())
    try:
        request = s.client.build_request("GET", url, timeout=timeout)
        return s.client.send(request, stream=True)
    except httpx.InvalidURL as exc:
        raise s.fail(f"bad URL {url} ({exc})") from exc
    except httpx.HTTPError as exc:
        raise s.fail(_transport_failure(exc, url, s.settings.timeout_s)) from exc


def _chunks(s: _Session, response: httpx.Response, clock: _Clock, limit_mb: float) -> Iterator[bytes]:
    """The body's (decoded) bytes, stopped past `limit_mb` or the deadline: a server may send forever."""
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit_mb * MB:
                raise s.fail(f"larger than {limit_mb:g} MB")
            clock.remaining()  # the read timeout alone would let a trickle of bytes go on for ever
            yield chunk
    except httpx.HTTPError as exc:
        raise s.fail(_transport_failure(exc, str(response.url), s.settings.timeout_s)) from exc


def _download_pdf(s: _Session, url: str, label: str) -> Path:
    """The PDF at `url` saved in the downloads folder; anything else is a SourceError."""
    with _open(s, url, label, s.settings.max_download_mb) as body:
        if not body.is_pdf():
            raise s.fail(f"{label} is not a PDF ({body.content_type})")
        return _store_pdf(s, body)


def _store_pdf(s: _Session, body: _Body) -> Path:
    """Write the body to <downloads>/<sha256>.pdf through a temporary file; nothing is left if it fails."""
    try:
        handle, name = tempfile.mkstemp(dir=s.downloads, prefix=".download-", suffix=".part")
    except OSError as exc:
        raise s.fail(f"cannot write in {s.downloads} ({exc.strerror or exc})") from exc
    temp = Path(name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(handle, "wb") as out:
            for chunk in body.all_chunks():
                digest.update(chunk)
                out.write(chunk)
        return _settle(temp, s.downloads / f"{digest.hexdigest()}.pdf")
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise s.fail(f"cannot write in {s.downloads} ({exc.strerror or exc})") from exc
    except BaseException:  # a SourceError from the stream, or an interrupt: no partial file stays
        temp.unlink(missing_ok=True)
        raise


def _settle(temp: Path, final: Path) -> Path:
    """Rename `temp` to `final`, or drop it when `final` already holds the same bytes (its name is their hash)."""
    if final.is_file() and final.stat().st_size == temp.stat().st_size:
        temp.unlink()
    else:
        os.replace(temp, final)
    return final


# --- wording and small parsers ---------------------------------------------------------------------------


def _transport_failure(exc: httpx.HTTPError, url: str, timeout_s: float) -> str:
    """What went wrong on the wire, in a few words naming the server."""
    origin = _origin(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return f"cannot reach {origin} (no answer within {timeout_s:g} s)"
    if isinstance(exc, httpx.TimeoutException):
        return f"{origin} did not answer within {timeout_s:g} s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot reach {origin} ({_connect_reason(exc)})"
    return f"the connection to {origin} failed ({_one_line(str(exc)) or type(exc).__name__})"


def _connect_reason(exc: BaseException) -> str:
    """ "connection refused", "name not resolved", ... from the OSError under httpx's and httpcore's wrappers."""
    cause: BaseException | None = exc
    for _ in range(10):  # the chain is short; the bound only guards against a cycle
        if cause is None:
            break
        if isinstance(cause, socket.gaierror):
            return "name not resolved"
        if isinstance(cause, OSError) and cause.errno in _CONNECT_REASONS:
            return _CONNECT_REASONS[cause.errno]
        cause = cause.__cause__ or cause.__context__
    text = str(exc).lower()
    if "name or service not known" in text or "name resolution" in text or "nodename nor servname" in text:
        return "name not resolved"
    return _one_line(str(exc)) or "connection failed"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


def _normal_doi(text: str) -> str | None:
    """A DOI without resolver prefix, lower-cased, or None when `text` is none."""
    doi = unquote(_DOI_PREFIXES.sub("", text.strip())).lower()
    return doi if _DOI.fullmatch(doi) else None


def _year(text: str) -> int | None:
    match = _YEAR.search(text)
    return int(match[1]) if match else None


def _given_family(name: str) -> str:
    """'Family, Given' (the citation_author convention) as 'Given Family'; other forms as they are."""
    family, comma, given = name.partition(",")
    if comma and given.strip() and "," not in given:
        return f"{given.strip()} {family.strip()}"
    return name.strip()


def _one_line(text: str) -> str:
    """`text` with every run of whitespace, line breaks included, as one space."""
    return " ".join(text.split())
