"""A llama-index LLM for any OpenAI-compatible chat server (llama-server, vLLM, Ollama, OpenAI).

Uses the ``openai`` client directly with no retries and short connect timeouts, so an unreachable
server is reported within seconds and the caller can fall back to the embedded model. The API key
is read from the environment variable named in the config at each request, never stored.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Any, Iterator, Sequence

import httpx
import openai
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from rag.models.token_probs import CONFIDENCE_TOKENS, server_token_probs

logger = logging.getLogger(__name__)

PLACEHOLDER_API_KEY = "not-needed"
ERROR_BUDGET_S = 3.0  # a server that does not answer is reported within this (issue 4)


class LLMUnavailableError(RuntimeError):
    """No usable LLM: the server did not answer, or the model could not be loaded."""


class OpenAICompatibleLLM(CustomLLM):
    """Chat completions (streamed) from an OpenAI-compatible server.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8080/v1``.
        model: The model name sent with each request.
        api_key_env: Environment variable holding the API key; "not-needed" is sent when unset.
        connect_timeout_s: Seconds to wait for a TCP connection (and for the health check).
        request_timeout_s: Seconds to wait for a response or between streamed chunks.
        first_response_timeout_s: Seconds to wait for the server to answer a request before checking that
            it is alive at all (a stuck server is then reported within about 3 s). Defaults to 1.0.
        temperature: Sampling temperature. Defaults to 0.1.
        max_tokens: Answer length limit. Defaults to 384.
        context_window: Reported to llama-index for prompt budgeting. Defaults to 4096.
    """

    base_url: str
    model: str = Field(default="local-model")
    api_key_env: str = Field(default="RAG_LLM_API_KEY")
    connect_timeout_s: float = Field(default=2.0, gt=0)
    request_timeout_s: float = Field(default=120.0, gt=0)
    first_response_timeout_s: float = Field(default=1.0, gt=0)
    temperature: float = Field(default=0.1, ge=0.0, le=2.0)
    max_tokens: int = Field(default=384, ge=1)
    context_window: int = Field(default=4096, ge=256)
    last_token_probs: list[tuple[str, float, float]] = Field(
        default_factory=list, exclude=True,
        description="(text, P(chosen token), P(likeliest token)) of the last streamed answer's first tokens, "
                    "from the server's logprobs; empty when it gives none.")
    _client: Any = PrivateAttr()
    _no_logprobs: bool = PrivateAttr(default=False)

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url=base_url.rstrip("/"), **kwargs)
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=PLACEHOLDER_API_KEY, max_retries=0,
            timeout=httpx.Timeout(self.request_timeout_s, connect=self.connect_timeout_s))
        # the openai client imports its resource modules on first use (~1 s on a loaded machine): do it
        # now, so it is not charged to the first request's 3-second error budget
        _ = self._client.chat.completions.create

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.max_tokens,
                           is_chat_model=True, model_name=self.model)

    def health_check(self, timeout_s: float | None = None) -> None:
        """Raise :class:`LLMUnavailableError` unless the server answers HTTP within ``timeout_s``.

        Any HTTP answer from ``GET {base_url}/models`` counts as alive except 401/403 (a key
        problem). Defaults to ``connect_timeout_s`` for connecting and for the answer.
        """
        limit = timeout_s or self.connect_timeout_s
        started = time.monotonic()
        try:
            response = httpx.get(f"{self.base_url}/models", headers=self._auth_headers(),
                                 timeout=httpx.Timeout(limit))
        except httpx.HTTPError as exc:
            raise LLMUnavailableError(self._unreachable_message(limit, exc)) from exc
        if response.status_code in (401, 403):
            raise LLMUnavailableError(
                f"The LLM server at {self.base_url} refused the API key (HTTP {response.status_code}) — "
                f"check the environment variable {self.api_key_env}")
        logger.debug("LLM server %s answered HTTP %s in %.2fs", self.base_url, response.status_code,
                     time.monotonic() - started)

    # --- llama-index LLM interface -------------------------------------------------------------

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return _last_chat_response(self._stream_chat(messages, **kwargs))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, record_probs=True, **kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        response = _last_chat_response(self._stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)],
                                                         **kwargs))
        return CompletionResponse(text=response.message.content or "")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return _as_completion_gen(self._stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs))

    # --- internals ------------------------------------------------------------------------------

    def yes_no_probability(self, messages: Sequence[ChatMessage], yes_words: Sequence[str],
                           no_words: Sequence[str]) -> tuple[float | None, str] | None:
        """P(yes) / P(yes or no) for the first reply token from the server's ``top_logprobs``.

        Returns None when the server does not give log-probabilities (the caller then reads the reply
        text instead). Connection problems raise ``LLMUnavailableError`` as for any request.
        """
        import math

        try:
            chunks = self._open(messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=10)
        except openai.BadRequestError:
            return None
        probabilities: dict[str, float] = {}
        for chunk in chunks:
            choice = chunk.choices[0] if chunk.choices else None
            content = getattr(getattr(choice, "logprobs", None), "content", None) or []
            for item in content[:1]:
                for top in getattr(item, "top_logprobs", None) or []:
                    probabilities[top.token] = probabilities.get(top.token, 0.0) + math.exp(top.logprob)
        yes = sum(p for token, p in probabilities.items() if token in yes_words)
        no = sum(p for token, p in probabilities.items() if token in no_words)
        return (yes / (yes + no), "logprobs") if yes + no > 0 else None

    def _stream_chat(self, messages: Sequence[ChatMessage], record_probs: bool = False, **kwargs: Any) -> ChatResponseGen:
        self.last_token_probs = []
        chunks = self._open_recording(messages, **kwargs) if record_probs else self._open(messages, **kwargs)
        recorded: list[tuple[str, float, float]] = []

        def gen() -> ChatResponseGen:
            text = ""
            for chunk in chunks:
                if not chunk.choices:
                    continue
                if record_probs and len(recorded) < CONFIDENCE_TOKENS:
                    recorded.extend(server_token_probs(chunk.choices[0])[:CONFIDENCE_TOKENS - len(recorded)])
                    self.last_token_probs = list(recorded)
                delta = chunk.choices[0].delta.content or ""
                if delta:
                    text += delta
                    yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
                                       delta=delta, raw=chunk)

        return gen()

    def _open_recording(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[Any]:
        """``_open`` asking for the tokens' log-probabilities; a server that refuses them is asked again without
        (and never with them again), so the answer never fails for want of them."""
        if not self._no_logprobs:
            try:
                return self._open(messages, logprobs=True, top_logprobs=1, **kwargs)
            except openai.BadRequestError as exc:
                logger.info("the LLM server gives no logprobs (%s); answer confidence is not recorded", exc)
                self._no_logprobs = True
        return self._open(messages, **kwargs)

    def _open(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[Any]:
        """Start a streamed request; return once the server has answered, else raise within seconds.

        The request runs in a worker thread so that a server which accepts the connection but never
        answers is detected after ``first_response_timeout_s``: a quick ``GET /models`` then tells a busy
        server (it answers: keep waiting, up to ``request_timeout_s``) from a stuck or wrong one (raise
        ``LLMUnavailableError`` saying what to check). The abandoned worker ends with its own read timeout.
        """
        events: queue.Queue = queue.Queue()
        cancelled = threading.Event()

        def worker() -> None:
            try:
                stream = self._create(messages, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                events.put(("error", exc))
                return
            events.put(("open", None))
            try:
                for chunk in stream:
                    if cancelled.is_set():
                        break
                    events.put(("chunk", chunk))
                events.put(("end", None))
            except (openai.APIConnectionError, openai.APITimeoutError, httpx.HTTPError) as exc:
                events.put(("error", LLMUnavailableError(
                    f"The LLM server at {self.base_url} stopped answering mid-reply ({type(exc).__name__}: {exc}) "
                    "— check the server's log and that it is still running")))
            except BaseException as exc:  # noqa: BLE001
                events.put(("error", exc))
            finally:
                stream.close()

        started = time.monotonic()
        threading.Thread(target=worker, name="llm-request", daemon=True).start()
        try:
            kind, value = events.get(timeout=self.first_response_timeout_s)
        except queue.Empty:
            if not self._alive(started):
                cancelled.set()
                waited = time.monotonic() - started
                raise LLMUnavailableError(
                    f"The LLM server at {self.base_url} accepted the connection but did not answer within "
                    f"{waited:.1f}s — check that the server is not stuck or overloaded and that llm.base_url "
                    "points to its OpenAI-compatible API (ending in /v1)") from None
            try:
                kind, value = events.get(timeout=self.request_timeout_s)
            except queue.Empty:
                cancelled.set()
                raise LLMUnavailableError(
                    f"The LLM server at {self.base_url} answered its health check but not the request within "
                    f"{self.request_timeout_s:g}s — check the server's log and load") from None
        if kind == "error":
            raise value
        return self._drain(events, cancelled)

    def _drain(self, events: queue.Queue, cancelled: threading.Event) -> Iterator[Any]:
        try:
            while True:
                try:
                    kind, value = events.get(timeout=self.request_timeout_s + 1)
                except queue.Empty:
                    raise LLMUnavailableError(
                        f"The LLM server at {self.base_url} stopped sending for {self.request_timeout_s:g}s "
                        "— check the server's log and load") from None
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                yield value
        finally:
            cancelled.set()

    def _alive(self, started: float) -> bool:
        """Whether ``GET /models`` answers within 1 s, or less when the 3-second error budget is running out
        (0.8 s are kept for building the probe's client and the error, which is slow on a loaded machine)."""
        left = max(0.3, min(1.0, ERROR_BUDGET_S - (time.monotonic() - started) - 0.8))
        try:
            self.health_check(timeout_s=left)
        except LLMUnavailableError:
            return False
        return True

    def _api_key(self) -> str:
        return os.environ.get(self.api_key_env) or PLACEHOLDER_API_KEY

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key()}"}

    def _create(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        params.update({k: v for k, v in kwargs.items()
                       if k in ("temperature", "max_tokens", "stop", "top_p", "seed", "logprobs", "top_logprobs")})
        try:
            return self._client.with_options(api_key=self._api_key()).chat.completions.create(
                model=self.model, messages=to_openai_messages(messages), stream=True, **params)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise LLMUnavailableError(self._unreachable_message(self.connect_timeout_s, exc)) from exc
        except openai.AuthenticationError as exc:
            raise LLMUnavailableError(f"The LLM server at {self.base_url} refused the API key — "
                                      f"check the environment variable {self.api_key_env}") from exc

    def _unreachable_message(self, limit: float, exc: Exception) -> str:
        return (f"No LLM server answered at {self.base_url} within {limit:g}s — check that the server is "
                f"running and that llm.base_url / RAG_LLM_BASE_URL is right ({type(exc).__name__})")


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """llama-index chat messages as OpenAI ``{"role", "content"}`` dicts (text only)."""
    out = []
    for message in messages:
        role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
        if role not in ("system", "user", "assistant"):
            role = "user"
        out.append({"role": role, "content": message.content or ""})
    return out


def _last_chat_response(responses: ChatResponseGen) -> ChatResponse:
    last = ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=""))
    for last in responses:
        pass
    return last


def _as_completion_gen(responses: ChatResponseGen) -> CompletionResponseGen:
    for response in responses:
        yield CompletionResponse(text=response.message.content or "", delta=response.delta)
