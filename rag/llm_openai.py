"""A llama-index LLM for any OpenAI-compatible chat server (llama-server, vLLM, Ollama, OpenAI).

Uses the ``openai`` client directly with no retries and short connect timeouts, so an unreachable
server is reported within seconds and the caller can fall back to the embedded model. The API key
is read from the environment variable named in the config at each request, never stored.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Sequence

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

logger = logging.getLogger(__name__)

PLACEHOLDER_API_KEY = "not-needed"


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
        temperature: Sampling temperature. Defaults to 0.1.
        max_tokens: Answer length limit. Defaults to 384.
        context_window: Reported to llama-index for prompt budgeting. Defaults to 4096.
    """

    base_url: str
    model: str = Field(default="local-model")
    api_key_env: str = Field(default="RAG_LLM_API_KEY")
    connect_timeout_s: float = Field(default=2.0, gt=0)
    request_timeout_s: float = Field(default=120.0, gt=0)
    temperature: float = Field(default=0.1, ge=0.0, le=2.0)
    max_tokens: int = Field(default=384, ge=1)
    context_window: int = Field(default=4096, ge=256)
    _client: Any = PrivateAttr()

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(base_url=base_url.rstrip("/"), **kwargs)
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=PLACEHOLDER_API_KEY, max_retries=0,
            timeout=httpx.Timeout(self.request_timeout_s, connect=self.connect_timeout_s))

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
        return self._stream_chat(messages, **kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        response = _last_chat_response(self._stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)],
                                                         **kwargs))
        return CompletionResponse(text=response.message.content or "")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return _as_completion_gen(self._stream_chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs))

    # --- internals ------------------------------------------------------------------------------

    def _stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        stream = self._create(messages, **kwargs)

        def gen() -> ChatResponseGen:
            text = ""
            try:
                for chunk in stream:
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta.content or ""
                    if delta:
                        text += delta
                        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
                                           delta=delta, raw=chunk)
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                raise LLMUnavailableError(f"The LLM server at {self.base_url} stopped answering: {exc}") from exc
            finally:
                stream.close()

        return gen()

    def _api_key(self) -> str:
        return os.environ.get(self.api_key_env) or PLACEHOLDER_API_KEY

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key()}"}

    def _create(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Any:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        params.update({k: v for k, v in kwargs.items() if k in ("temperature", "max_tokens", "stop", "top_p", "seed")})
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
