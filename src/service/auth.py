"""The server's key: with `service.api_key` (PAPERSCOPE_API_KEY) set, every /v1 route asks for
`Authorization: Bearer <key>`; `/healthz`, the OpenAPI page and the web page's static files do not.

Without a key the server may listen on loopback only: `check_bind` refuses anything else before it starts,
since anyone who reached it could read, add and remove papers.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import SecretStr

from ..errors import ConfigError
from .errors import ApiError

bearer = HTTPBearer(auto_error=False, description="PAPERSCOPE_API_KEY, when the server has one.")


def is_loopback(host: str) -> bool:
    """True for addresses only this machine reaches: 127.0.0.0/8, ::1, localhost."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, api_key: SecretStr | None) -> None:
    """ConfigError, one line, when the server would listen beyond loopback without a key."""
    if api_key is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without an API key: anyone who reaches it could read, add and remove "
            "papers; set PAPERSCOPE_API_KEY (clients send it as `Authorization: Bearer KEY`), or listen on 127.0.0.1"
        )


def require_key(api_key: SecretStr | None) -> Callable[..., Awaitable[None]]:
    """A FastAPI dependency checking the bearer key (a no-op when the server has none)."""
    expected = api_key.get_secret_value().encode() if api_key is not None else None

    async def check(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
        if expected is None:
            return
        challenge = {"WWW-Authenticate": "Bearer"}
        if credentials is None:
            raise ApiError(401, "unauthorized", "this server needs `Authorization: Bearer <key>`", challenge)
        # Constant time: how much of a guess matched must not show in how long the answer takes.
        if not hmac.compare_digest(credentials.credentials.encode(), expected):
            raise ApiError(401, "unauthorized", "the bearer key is not this server's", challenge)

    return check
