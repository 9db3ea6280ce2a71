"""GET /healthz says whether a language model writes the answers (the web page's note), without naming it."""

from __future__ import annotations

from tests.served import Served


def test_health_says_no_model_writes_the_answers(server: Served) -> None:
    with server.client(key=None) as anonymous:  # no key needed, as before
        health = anonymous.get("/healthz")
    assert health.status_code == 200
    assert health.json() == {**health.json(), "ok": True, "llm": False}


def test_health_says_a_model_writes_them_without_naming_it(hostile: Served) -> None:
    with hostile.client() as http:
        health = http.get("/healthz").json()
    assert health["ok"] is True and health["llm"] is True
    assert "scripted-model" not in str(health)
