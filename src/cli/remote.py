"""The commands that take `--server URL` (or PAPERSCOPE_SERVER), over HTTP to a running `paperscope serve`.

`ask`, `retrieve`, `chat`, `papers`, `ingest`, `remove` and `check` send the same options to the server
(docs/http-api.md) and print what comes back with the same code as locally: the server's objects are the ones the
local commands print (Answer, the retrieve JSON, the papers list, ingest rows, the check report). PAPERSCOPE_API_KEY,
when set, is sent as the bearer key. Nothing of the store or the models is loaded here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ..errors import PaperscopeError

if TYPE_CHECKING:
    from ..answer.model import Answer
    from ..rag.store import PaperRecord, StoredChunk

KEY_ENV = "PAPERSCOPE_API_KEY"
POLL_SECONDS = 0.25


class RemoteError(PaperscopeError):
    """The server could not be reached (`status` None), or answered with an error (`status`, `detail`: its
    message, one line)."""

    def __init__(self, message: str, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail or message


class Remote:
    """A client of one paperscope server."""

    def __init__(self, url: str, timeout: float = 600.0) -> None:
        self.url = url.rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise RemoteError(f"--server {url!r}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000")
        key = os.environ.get(KEY_ENV)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Timeout(timeout, connect=10.0)
        # Plain http has no certificates to check: skipping the CA bundle saves a tenth of a second per command.
        verify = self.url.startswith("https://")
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=limits, verify=verify)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- plumbing ------------------------------------------------------------------------------------------

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON of a request; RemoteError, one line, when it fails."""
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None
        self._check(response)
        return response.json()

    def _unreachable(self, exc: httpx.HTTPError) -> RemoteError:
        why = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.ConnectError):
            why = f"{why} (is `paperscope serve` running there?)"
        return RemoteError(f"cannot reach paperscope serve at {self.url}: {why}")

    def _check(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        try:
            message = str(response.json()["error"]["message"])
        except (ValueError, KeyError, TypeError):
            message = response.text.strip()[:200] or response.reason_phrase
        if response.status_code == 401:
            message += f" (set {KEY_ENV} to the server's key)"
        raise RemoteError(f"server {self.url}: {message}", response.status_code, message)

    def events(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The events of a text/event-stream response, until `[DONE]`."""
        try:
            with self.client.stream("POST", path, json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    self._check(response)
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    yield json.loads(data)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None

    # --- what the commands ask -----------------------------------------------------------------------------

    def papers(self, kb: str | None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.call("GET", "/v1/documents", params=_params(kb=kb))
        return rows

    def citing(self, kind: str, paper: str, kb: str | None) -> dict[str, Any]:
        """A paper's references (`kind` "references") or the papers citing it ("cited_by")."""
        route = "/v1/references" if kind == "references" else "/v1/cited-by"
        found: dict[str, Any] = self.call("GET", route, params=_params(kb=kb, paper=paper))
        return found

    def retrieve(self, body: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = self.call("POST", "/v1/retrieve", json=_body(body))
        return found

    def ask(self, body: dict[str, Any]) -> Answer:
        found = self.call("POST", "/v1/chat", json=_body(body))
        from ..answer.model import Answer  # after the call: a server that is down is said at once

        return Answer.model_validate(found)

    def chat(self, body: dict[str, Any], on_token: Callable[[str], None] | None = None) -> Answer:
        """A streamed answer: its text pieces to `on_token` as they come; the Answer at the end."""
        from ..answer.model import Answer

        for event in self.events("/v1/chat", {**_body(body), "stream": True}):
            kind = event.get("type")
            # A piece marked whole is the answer written at once (extracted): printed as locally, not streamed.
            if kind == "token" and on_token is not None and not event.get("whole"):
                on_token(str(event.get("text", "")))
            elif kind == "answer":
                return Answer.model_validate(event["answer"])
            elif kind == "error":
                raise RemoteError(f"server {self.url}: {event.get('message', 'the question failed')}")
        raise RemoteError(f"server {self.url}: the answer stream ended without an answer")

    def upload(self, path: Path, kb: str | None, strategy: str | None, enrich: str | None = None) -> dict[str, Any]:
        with path.open("rb") as fh:
            files = {"file": (path.name, fh, "application/octet-stream")}
            accepted: dict[str, Any] = self.call(
                "POST", "/v1/documents", files=files, data=_params(kb=kb, strategy=strategy, enrich=enrich)
            )
        return accepted

    def job(self, job_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.call("GET", f"/v1/jobs/{job_id}")
        return found

    def wait(self, job_ids: Sequence[str], on_update: Callable[[dict[str, Any]], None]) -> dict[str, dict[str, Any]]:
        """Poll the jobs until each is done or failed; `on_update` hears each job's state as it is read."""
        pending = list(job_ids)
        final: dict[str, dict[str, Any]] = {}
        while pending:
            for job_id in list(pending):
                job = self.job(job_id)
                on_update(job)
                if job["state"] in ("done", "failed"):
                    final[job_id] = job
                    pending.remove(job_id)
            if pending:
                time.sleep(POLL_SECONDS)
        return final

    def remove(self, doc_id: str, kb: str | None) -> dict[str, Any]:
        removed: dict[str, Any] = self.call("DELETE", f"/v1/documents/{doc_id}", params=_params(kb=kb))
        return removed

    def check(self, kb: str | None, repair: bool) -> dict[str, Any]:
        """The server's check of the knowledge base (the CheckReport's JSON), repaired first if asked."""
        path, method = ("/v1/check/repair", "POST") if repair else ("/v1/check", "GET")
        report: dict[str, Any] = self.call(method, path, params=_params(kb=kb))
        return report

    def chunk(self, doc_id: str, index: int, window: int, kb: str | None) -> dict[str, Any]:
        found: dict[str, Any] = self.call(
            "GET", f"/v1/documents/{doc_id}/chunks/{index}", params=_params(kb=kb, window=window)
        )
        return found


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _body(body: dict[str, Any]) -> dict[str, Any]:
    """A JSON body without the options not given (the server's settings decide those)."""
    return {k: v for k, v in body.items() if v is not None and v != []}


# --- chat over HTTP: what chat_loop needs of a runner and its store -----------------------------------------


class RemoteStore:
    """The parts of a store `paperscope chat` reads (the banner, /papers, /sources), from the server."""

    def __init__(self, remote: Remote, kb: str | None) -> None:
        self.remote = remote
        self.kb = kb or "papers"
        self._kb = kb

    def list_papers(self, brief: bool = False) -> list[PaperRecord]:
        from ..rag.store import PaperRecord

        fields = set(PaperRecord.model_fields) - {"aliases", "sections"}
        return [PaperRecord(**{k: v for k, v in row.items() if k in fields}) for row in self.remote.papers(self._kb)]

    def get_context_window(self, doc_id: str, center_chunk_index: int, window_size: int = 1) -> list[StoredChunk]:
        from ..parser.models import SectionCategory
        from ..rag.store import StoredChunk

        found = self.remote.chunk(doc_id, center_chunk_index, window_size, self._kb)
        return [
            StoredChunk(
                id=0,
                doc_id=c["doc_id"],
                title=c["title"],
                year=None,
                chunk_index=c["chunk_index"],
                text=c["text"],
                index_text=c["text"],
                section_title=c["section_title"],
                parent_section="",
                section_category=SectionCategory[c["section_category"]],
                hierarchy_level=0,
                page_number=c["page"],
                kind=c.get("kind", "chunk"),
                metadata={"page_end": c.get("page_end"), "boxes": c.get("boxes", [])},
            )
            for c in found["window"]
        ]


class RemoteRunner:
    """Answers `paperscope chat` questions through the server, streamed, with the conversation as history."""

    def __init__(self, remote: Remote, kb: str | None, no_agent: bool, options: dict[str, Any] | None = None) -> None:
        self.remote = remote
        self.store = RemoteStore(remote, kb)
        self.kb = kb
        self.no_agent = no_agent
        self.options = {key: value for key, value in (options or {}).items() if value is not None}

    def run(
        self, query: str, history: Sequence[Answer] | None = None, on_token: Callable[[str], None] | None = None
    ) -> Answer:
        messages: list[dict[str, Any]] = []
        for earlier in history or []:
            messages.append({"role": "user", "content": earlier.query})
            messages.append(
                {"role": "assistant", "content": earlier.answer, "sources": [s.citation for s in earlier.sources]}
            )
        body = {"query": query, "kb": self.kb, "no_agent": self.no_agent or None, "history": messages, **self.options}
        return self.remote.chat(body, on_token)
