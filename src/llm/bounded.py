"""`BoundedChatOpenAI`: `ChatOpenAI` with the limits a laptop user needs from a local model server.

- each request has a timeout (`llm.timeout`): no byte for that long fails it, and a stream still running
  after it is cut; replies are capped at `llm.max_tokens`;
- a question has a budget (`llm.question_budget`) that all its model calls share (`with model.question():`);
- only connection errors and HTTP 5xx are retried (`llm.retries`, backoff doubling from `llm.backoff`);
- a cancelled question (`cancel`, set by a server whose client hung up) makes no more calls, and the call under
  way is cut (its connection is shut: deadline.py);
- every failure becomes one `LLMError` naming the model and the endpoint. Once the endpoint has failed in a
  question, its later calls in that question fail at once, so a dead server costs one timeout, not one per call.

The request limit is wall-clock. httpx's read timeout is inter-byte: an endpoint that streams only SSE comments
(`: keepalive` every few seconds) resets it forever, and the SDK's event parser never yields for a comment, so
no check between events runs either. The HTTP client paperscope hands the SDK (`bounded_http_client`) therefore
cuts every response at its request's timeout, counting every byte read, comments and keep-alives included.
Whatever the server does with `max_tokens`, a reply is also cut once it is longer than paperscope prints and
stores (`reply_cap`: about 8 characters a token).

It lives apart from client.py because importing langchain-openai takes a second or more: only a command that has
a model configured pays for it.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import Field, PrivateAttr

from ..cancellation import Cancellation
from ..errors import LLMError
from .deadline import deadline_passed
from .endpoint import OPENAI_URL, one_line

logger = logging.getLogger("paperscope.llm")

CHARS_PER_TOKEN_CAP = 8  # a reply longer than max_tokens * this many characters ignored max_tokens: it is cut


class BoundedChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` with per-request timeouts, a per-question budget, narrow retries and one error type."""

    call_timeout: float = Field(60.0, description="Seconds one request may take (see module docstring).")
    question_budget: float = Field(180.0, description="Seconds from a question's start its model calls must end by.")
    retries: int = Field(2, description="Retries after a connection error or HTTP 5xx.")
    backoff: float = Field(1.0, description="Seconds before the first retry; doubled for each next.")
    endpoint: str = Field(OPENAI_URL, description="The endpoint's URL, for messages.")
    keep_failures: bool = Field(
        False, description="Keep an endpoint failure across questions (a batch such as eval stops calling it)."
    )
    cancel: Cancellation | None = Field(None, exclude=True, description="Set when the question is given up.")

    _deadline: float | None = PrivateAttr(default=None)
    _depth: int = PrivateAttr(default=0)
    _failure: LLMError | None = PrivateAttr(default=None)

    # --- the question scope ------------------------------------------------------------------------------

    @contextmanager
    def question(self) -> Iterator[None]:
        """All model calls inside share one budget; nested scopes (the agent's fallback) join the outer one."""
        outer = self._depth == 0
        if outer:
            self._deadline = time.monotonic() + self.question_budget
            if not self.keep_failures:
                self._failure = None
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if outer:
                self._deadline = None

    @property
    def failure(self) -> LLMError | None:
        """The endpoint failure of the current (or last) question, if any."""
        return self._failure

    # --- calls -------------------------------------------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        for attempt in itertools.count():
            timeout = self._time_for_call()
            try:
                args = {**kwargs, "timeout": timeout}
                return self._capped(super()._generate(messages, stop=stop, run_manager=run_manager, **args))
            except Exception as exc:  # every way a request can fail ends as one LLMError
                error = self._classify(exc, timeout)
                if not self._retry(error, attempt):
                    raise self._failed(error) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for attempt in itertools.count():
            timeout = self._time_for_call()
            ends = time.monotonic() + timeout
            started = False
            size = 0
            chunks = super()._stream(messages, stop=stop, run_manager=run_manager, **{**kwargs, "timeout": timeout})
            try:
                for chunk in chunks:
                    started = True
                    size += _reply_size(chunk.message)
                    if size > self.reply_cap:
                        # The server ignored max_tokens: stop reading and end the reply as one cut at the cap.
                        logger.info("cut a reply of %s at %d characters", self.endpoint, self.reply_cap)
                        yield ChatGenerationChunk(
                            message=AIMessageChunk(content="", response_metadata={"finish_reason": "length"})
                        )
                        return
                    yield chunk
                    self._check_cancelled()
                    # A stall is the read timeout's job; a stream that never ends is cut here.
                    if time.monotonic() > ends:
                        reason = f"the reply was still streaming after {_seconds(timeout)}"
                        raise self._failed(self._error("timeout", reason))
                if not started:  # e.g. a 200 with "{}" or HTML where server-sent events were due
                    raise self._failed(self._error("bad_response", "the reply is not a chat completion (no events)"))
                return
            except LLMError:
                raise
            except Exception as exc:
                error = self._classify(exc, timeout)
                # Once text reached the caller a retry would repeat it: only a stream that never started is retried.
                if started or not self._retry(error, attempt):
                    raise self._failed(error) from exc
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()  # closes the HTTP response of a stream that was cut

    # --- limits and errors -------------------------------------------------------------------------------

    @property
    def reply_cap(self) -> int:
        """Characters of one reply (text and tool-call arguments) paperscope reads: max_tokens' worth, generously."""
        return max(256, int(self.max_tokens or 512) * CHARS_PER_TOKEN_CAP)

    def _capped(self, result: ChatResult) -> ChatResult:
        """`result` with a reply longer than `reply_cap` cut there and marked as cut (finish_reason "length")."""
        for i, gen in enumerate(result.generations):
            message = gen.message
            if isinstance(message, AIMessage) and _reply_size(message) > self.reply_cap:
                text = str(message.content)[: self.reply_cap] if isinstance(message.content, str) else ""
                meta = {**message.response_metadata, "finish_reason": "length"}
                cut = AIMessage(content=text, response_metadata=meta, usage_metadata=message.usage_metadata)
                result.generations[i] = ChatGeneration(message=cut, generation_info=gen.generation_info)
        return result

    def _time_for_call(self) -> float:
        """Seconds the next request may take, or an LLMError when the endpoint already failed, time is up or the
        question was cancelled."""
        self._check_cancelled()
        if self._failure is not None:
            raise LLMError(self._failure.model, self._failure.endpoint, self._failure.kind, self._failure.reason)
        if self._deadline is None:
            return self.call_timeout
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            reason = f"the question's {_seconds(self.question_budget)} budget is spent"
            raise self._failed(self._error("budget", reason))
        return min(self.call_timeout, remaining)

    def _check_cancelled(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise self._failed(self._error("cancelled", f"the question was cancelled ({self.cancel.reason})"))

    def _retry(self, error: LLMError, attempt: int) -> bool:
        """Wait and return True when `error` deserves another attempt."""
        if error.kind not in ("unreachable", "server") or attempt >= self.retries:
            return False
        wait = self.backoff * 2**attempt
        if self._deadline is not None and time.monotonic() + wait >= self._deadline:
            return False
        logger.info("retrying %s after %s (%.1f s)", self.endpoint, error.reason, wait)
        time.sleep(wait)
        return True

    def _failed(self, error: LLMError) -> LLMError:
        # Remembered for the rest of the question (or the batch); a call outside any question stands alone.
        if error.endpoint_down and (self._depth > 0 or self.keep_failures):
            self._failure = error
        return error

    def _error(self, kind: str, reason: str) -> LLMError:
        return LLMError(self.model_name, self.endpoint, kind, one_line(reason))

    def _classify(self, exc: Exception, timeout: float) -> LLMError:
        """What went wrong, in one line the user can act on."""
        import openai

        if isinstance(exc, LLMError):
            return exc
        if self.cancel is not None and self.cancel.is_set():  # the connection was shut under the call
            return self._error("cancelled", f"the question was cancelled ({self.cancel.reason})")
        if (late := deadline_passed(exc)) is not None:
            return self._error("timeout", str(late))
        if isinstance(exc, openai.APITimeoutError) or "timeout" in type(exc).__name__.lower():
            return self._error("timeout", f"no reply within {_seconds(timeout)}")
        if isinstance(exc, openai.APIConnectionError):
            cause = _root_cause(exc)
            detail = re.sub(r"^\[Errno -?\d+\]\s*", "", str(cause)) if cause is not exc else ""
            return self._error("unreachable", f"cannot connect ({detail})" if detail else "cannot connect")
        if isinstance(exc, openai.APIStatusError):
            kind = "server" if exc.status_code >= 500 else "rejected"
            message = re.sub(r"^Error code: \d+ - ", "", exc.message)
            return self._error(kind, f"HTTP {exc.status_code}: {message}")
        if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2", "h11"):
            return self._error("unreachable", f"the connection broke ({type(exc).__name__}: {exc})")
        return self._error("bad_response", f"the reply is not a chat completion ({type(exc).__name__}: {exc})")


def _root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of a chain (e.g. ConnectionRefusedError under the client's "Connection error.")."""
    seen = {id(exc)}
    while (nxt := exc.__cause__ or exc.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        exc = nxt
    return exc


def _reply_size(message: BaseMessage) -> int:
    """Characters of a reply (or a piece of one): its text and its tool calls' arguments."""
    size = len(message.content) if isinstance(message.content, str) else len(str(message.content))
    for call in getattr(message, "tool_call_chunks", None) or []:
        size += len(call.get("args") or "")
    if not getattr(message, "tool_call_chunks", None):
        size += sum(len(str(c.get("args") or "")) for c in getattr(message, "tool_calls", None) or [])
    return size


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
