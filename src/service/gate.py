"""The door every request passes before a route reads a byte of its body.

In order:
1. **Host.** A server on loopback answers only to loopback names (`localhost`, 127.0.0.0/8, ::1) and
   `service.allowed_hosts`: a web page under a name an attacker made resolve to 127.0.0.1 (DNS rebinding) is
   refused, since to the browser it is that page's own origin. A server on another address (which needs a key)
   checks the Host only when `service.allowed_hosts` is set.
2. **Browsers on other sites.** A browser says where a request comes from (`Sec-Fetch-Site`, `Origin`). A
   request to /v1 from another site, and any write (POST, PUT, PATCH, DELETE) whose Origin is not this server's
   or in `service.allowed_origins`, is refused: a multipart upload is a "simple" request a page on any origin may
   send without asking. Clients that are not browsers send neither header and pass.
3. **The key.** With `service.api_key` set, every /v1 route asks for `Authorization: Bearer <key>` (constant-time
   compared); `/healthz`, the API's pages and the web page's files do not.
4. **Body size.** A body larger than its route takes (`service.max_body_mb`; uploads `service.max_upload_mb`) is
   refused: at once when its Content-Length says so, else as soon as that much has come in. The rest of a refused
   body is read and dropped (up to DRAIN_CAP) so a client still sending hears the answer.

Without a key the server may listen on loopback only (`check_bind`): anyone who reached it could read, add and
remove papers.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from pydantic import SecretStr
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError
from .errors import ApiError, error_body

#: Documents the key in the API's pages; the Gate does the checking, before any body is read.
bearer = HTTPBearer(auto_error=False, description="PAPERSCOPE_API_KEY, when the server has one.")

MIN_KEY_CHARS = 16  # a key guessable in a day of tries is no key
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
UPLOAD_PATH = "/v1/documents"
MULTIPART_SLACK = 64 * 1024  # bytes of a multipart body that are not the file (boundaries, other fields)
DRAIN_CAP = 256 * 1024 * 1024  # bytes of a refused body read and dropped; past that the connection is closed
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """True for addresses only this machine reaches: 127.0.0.0/8, ::1, localhost."""
    if host.strip().lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, api_key: SecretStr | None) -> None:
    """ConfigError, one line, when the server would listen beyond loopback without a key worth the name, or was
    given a blank key."""
    key = api_key.get_secret_value() if api_key is not None else None
    if key is not None and not key.strip():
        raise ConfigError("PAPERSCOPE_API_KEY is blank: set a key, or unset it to serve loopback without one")
    if is_loopback(host):
        return
    if key is None:
        raise ConfigError(
            f"refusing to listen on {host} without an API key: anyone who reaches it could read, add and remove "
            "papers; set PAPERSCOPE_API_KEY (clients send it as `Authorization: Bearer KEY`), or listen on 127.0.0.1"
        )
    if len(key) < MIN_KEY_CHARS:
        raise ConfigError(
            f"refusing to listen on {host} with a {len(key)}-character API key: use {MIN_KEY_CHARS} or more, e.g. "
            "`python -c 'import secrets; print(secrets.token_urlsafe())'`"
        )


def host_name(host: str) -> str:
    """The name part of a Host header ("[::1]:8000" -> "::1", "Example.org:80" -> "example.org")."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Gate:
    """ASGI middleware: the checks of the module docstring, in that order, before the app sees the request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bound: str,
        api_key: SecretStr | None,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        max_body: int,
        upload_path: str = UPLOAD_PATH,
        max_upload: int,
    ) -> None:
        """`bound`: the address the server listens on; `max_body`: bytes a request body may have, `max_upload`
        bytes the file of an upload to `upload_path` may have (its multipart body a little more)."""
        self.app = app
        self.loopback = is_loopback(bound)
        self.hosts = {host_name(h) for h in allowed_hosts}
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}
        self.key = api_key.get_secret_value().encode() if api_key is not None else None
        self.max_body = max_body
        self.upload_path = upload_path
        self.max_upload = max_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        path: str = scope.get("path", "")
        upload = path == self.upload_path
        limit = self.max_upload + MULTIPART_SLACK if upload else self.max_body
        try:
            self._check_host(headers.get("host", ""))
            self._check_site(scope.get("method", "GET"), path, headers)
            if path.startswith("/v1/"):
                self._check_key(headers.get("authorization", ""))
            length = headers.get("content-length", "")
            if length.isdigit() and int(length) > limit:
                raise self._too_large(upload)
        except ApiError as error:
            await _drain(receive)
            response = JSONResponse(error_body(error.code, error.message), error.status, headers=error.headers)
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    if message.get("more_body", False):
                        await _drain(receive)
                    raise self._too_large(upload)  # the route reading the body answers it (errors.py)
            return message

        await self.app(scope, counted, send)

    def _too_large(self, upload: bool) -> ApiError:
        return too_large(self.max_upload) if upload else too_large(self.max_body, "the request body", "max_body_mb")

    def _check_host(self, host: str) -> None:
        name = host_name(host)
        if name in self.hosts or (not self.loopback and not self.hosts) or (self.loopback and is_loopback(name)):
            return
        raise ApiError(
            400,
            "bad_host",
            f"Host {host[:100]!r} is not a name of this server; a server on loopback answers to localhost, 127.0.0.1 "
            "and ::1 (add other names to service.allowed_hosts)",
        )

    def _check_site(self, method: str, path: str, headers: Mapping[str, str]) -> None:
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site", "").lower()
        if origin is not None and origin.rstrip("/").lower() in self.origins:
            return
        own = origin is not None and _same_origin(origin, headers.get("host", ""))
        if site in ("cross-site", "same-site") and not own and (path.startswith("/v1/") or method in WRITES):
            raise _cross_site(origin or site)
        if method in WRITES and origin is not None and not own:
            raise _cross_site(origin)

    def _check_key(self, authorization: str) -> None:
        if self.key is None:
            return
        challenge = {"WWW-Authenticate": "Bearer"}
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise ApiError(401, "unauthorized", "this server needs `Authorization: Bearer <key>`", challenge)
        # Constant time: how much of a guess matched must not show in how long the answer takes.
        if not hmac.compare_digest(given.strip().encode(), self.key):
            raise ApiError(401, "unauthorized", "the bearer key is not this server's", challenge)


def _same_origin(origin: str, host: str) -> bool:
    """True when `origin` (scheme://host[:port]) names the host the request was sent to."""
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and parts.netloc.lower() == host.strip().lower()


def _cross_site(origin: str) -> ApiError:
    return ApiError(
        403,
        "cross_site",
        f"a browser request from another site ({origin[:100]}) may not use this server; "
        "list its origin in service.allowed_origins to let it",
    )


def too_large(limit: int, what: str = "the file", setting: str = "max_upload_mb") -> ApiError:
    """413 for a file (or a body) over `limit` bytes."""
    return ApiError(
        413, "too_large", f"{what} is larger than the server takes ({limit / 1_000_000:g} MB, service.{setting})"
    )


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a request body (up to DRAIN_CAP)."""
    budget = DRAIN_CAP
    while budget > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        budget -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return
