"""Every error as JSON: the client's mistakes as 4xx in one line, a fault of the server as a 5xx whose error id
is in the server's log with the traceback, never in the response; a stream cut by a fault just ends."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict

from paperscope.errors import ConfigError, StoreError, UnknownPaper
from paperscope.service import errors
from paperscope.service.errors import ApiError, UnknownKnowledgeBase


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int


def make_app() -> FastAPI:
    app = FastAPI()
    errors.install(app)

    @app.get("/bug")
    async def bug() -> None:
        raise RuntimeError("secret detail /home/me/.paperscope")

    @app.get("/store")
    async def store() -> None:
        raise StoreError("knowledge base 'papers': Milvus at http://db:19530 does not answer")

    @app.get("/bad")
    async def bad() -> None:
        raise ConfigError("retriever: unknown retriever 'x'")

    @app.get("/kb")
    async def kb() -> None:
        raise UnknownKnowledgeBase("knowledge base 'x' does not exist")

    @app.get("/paper")
    async def paper() -> None:
        raise UnknownPaper("paper abcd is not a paper in knowledge base 'papers'")

    @app.get("/teapot")
    async def teapot() -> None:
        raise ApiError(418, "teapot", "short and stout", {"X-Why": "tea"})

    @app.post("/body")
    async def body(value: Body) -> int:
        return value.k

    @app.get("/model")
    async def model() -> None:
        Body.model_validate({"k": "many"})

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def pieces() -> AsyncIterator[bytes]:
            yield b"data: 1\n\n"
            raise RuntimeError("broke mid-stream")

        return StreamingResponse(pieces(), media_type="text/event-stream")

    return app


@pytest.fixture
def client() -> TestClient:
    return TestClient(make_app(), raise_server_exceptions=False)


def test_a_fault_is_a_500_with_an_id_that_the_log_has(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="paperscope.service"):
        response = client.get("/bug")
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["code"] == "internal" and re.fullmatch(r"[0-9a-f]{12}", error["id"])
    assert error["message"] == f"internal error (id {error['id']}); the server log has the details"
    assert "secret detail" not in response.text and "Traceback" not in response.text
    [record] = [r for r in caplog.records if error["id"] in r.getMessage()]
    assert "GET /bug" in record.getMessage() and record.exc_info is not None  # the traceback is logged


def test_a_store_failure_is_a_503_with_an_id(client: TestClient) -> None:
    response = client.get("/store")
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "store_unavailable" and error["id"] in error["message"]
    assert "does not answer" in error["message"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [("/bad", 400, "invalid_option"), ("/kb", 404, "unknown_kb"), ("/paper", 404, "unknown_paper")],
)
def test_the_clients_errors_are_4xx_in_its_words(client: TestClient, path: str, status: int, code: str) -> None:
    response = client.get(path)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code and "id" not in response.json()["error"]


def test_an_api_error_keeps_its_status_and_headers(client: TestClient) -> None:
    response = client.get("/teapot")
    assert response.status_code == 418 and response.headers["x-why"] == "tea"
    assert response.json() == {"error": {"code": "teapot", "message": "short and stout"}}


def test_validation_errors_name_the_field(client: TestClient) -> None:
    extra = client.post("/body", json={"k": 1, "kk": 2})
    assert extra.status_code == 422 and extra.json()["error"]["message"] == "unknown option 'kk'"
    wrong = client.post("/body", json={"k": "x"})
    assert wrong.json()["error"]["message"].startswith("k: Input should be a valid integer")
    missing = client.post("/body", json={})
    assert missing.json()["error"]["message"] == "k: required"
    built = client.get("/model")  # a model a route builds itself
    assert built.status_code == 422 and built.json()["error"]["message"].startswith("k: ")


def test_unknown_routes_and_methods(client: TestClient) -> None:
    assert client.get("/nowhere").json() == {"error": {"code": "not_found", "message": "no route GET /nowhere"}}
    assert client.delete("/bug").status_code == 405


def test_a_stream_cut_by_a_fault_ends_and_is_logged(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="paperscope.service"):
        response = client.get("/stream")
    assert response.status_code == 200 and response.text.startswith("data: 1")
    assert "Traceback" not in response.text
    assert any("broke mid-stream" in r.getMessage() for r in caplog.records)
