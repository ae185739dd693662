"""Calling the answering LLM for one request, switching once to the embedded model when a server fails.

The engine is shared by every session, so nothing about one request lives on it: a ``RequestLLM`` is
made per request and remembers which model that request is on now, why it switched, and the error
that ended it, if any.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TypeVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM

logger = logging.getLogger(__name__)

T = TypeVar("T")


class LLMRunner:
    """The answering LLM, how it was chosen, and a lazily built fallback shared by all requests.

    Args:
        llm: The answering LLM.
        backend: "embedded" or "openai" (shown in results). Defaults to "embedded".
        chosen_because: Why ``llm`` is already a fallback (from ``build_llm``). Defaults to "".
        fallback_factory: Builds the embedded LLM when ``llm`` fails mid-request; called at most once, under
            a lock, and its result reused. Defaults to none (a failure ends the request with a clear error).
        queue_timeout_s: How long a call waits for the embedded model while others use it (``llm.queue_timeout_s``);
            set on a copy sharing the loaded model. Defaults to the model's own.
    """

    def __init__(self, llm: LLM, *, backend: str = "embedded", chosen_because: str = "",
                 fallback_factory: Callable[[], LLM] | None = None, queue_timeout_s: float | None = None) -> None:
        self.queue_timeout_s = queue_timeout_s
        self.llm = self._with_wait(llm)
        self.backend = backend
        self.chosen_because = chosen_because
        self._fallback_factory = fallback_factory
        self._fallback: LLM | None = None
        self._fallback_failed = False
        self._lock = threading.Lock()

    def request(self) -> RequestLLM:
        return RequestLLM(self, self.llm, self.backend)

    def fallback(self) -> LLM | None:
        """The embedded fallback LLM, built on first need; None when there is none or it failed to load."""
        if self._fallback_factory is None:
            return None
        with self._lock:
            if self._fallback is None and not self._fallback_failed:
                try:
                    self._fallback = self._with_wait(self._fallback_factory())
                except Exception as exc:  # noqa: BLE001
                    logger.error("the fallback LLM could not be built: %s", exc)
                    self._fallback_failed = True
            return self._fallback

    def _with_wait(self, llm: LLM) -> LLM:
        """``llm`` waiting ``queue_timeout_s`` for its turn: a pydantic copy shares the weights and the queue."""
        fields = getattr(type(llm), "model_fields", {})
        if self.queue_timeout_s is None or "queue_timeout_s" not in fields or llm.queue_timeout_s == self.queue_timeout_s:
            return llm
        return llm.model_copy(update={"queue_timeout_s": self.queue_timeout_s})


@dataclass
class RequestLLM:
    """The LLM of one request: ``llm`` is the one in use now; ``error`` ends the request when set."""

    runner: LLMRunner
    llm: LLM
    backend: str
    error: str = ""
    fallback_reason: str = ""
    restarted: bool = False  # the answer was restarted on the fallback after some tokens streamed
    stats: dict[str, Any] = field(default_factory=dict)

    def call(self, step: str, work: Callable[[LLM], T]) -> T | None:
        """``work(llm)``, retried once on the fallback if it raises; None (with ``error`` set) if both fail."""
        for attempt in (1, 2):
            try:
                return work(self.llm)
            except Exception as exc:  # noqa: BLE001 - any backend failure becomes a clear message
                if not self._switch(exc, attempt, step):
                    return None
        return None

    def stream(self, messages: list[ChatMessage], **sampling: Any) -> Iterator[str]:
        """Answer deltas; on a failure the answer restarts once on the fallback (after a blank line).

        Args:
            messages: The answer prompt.
            **sampling: Sampling options for this answer (``repeat_penalty``); a backend ignores those it lacks.
        """
        for attempt in (1, 2):
            produced = False
            try:
                for response in self.llm.stream_chat(messages, **sampling):
                    delta = response.delta or ""
                    if delta:
                        produced = True
                        yield delta
                return
            except Exception as exc:  # noqa: BLE001 - any backend failure becomes a clear message
                if not self._switch(exc, attempt, "answering"):
                    return
                self.restarted = produced
                if produced:
                    yield "\n\n"

    def _switch(self, exc: BaseException, attempt: int, step: str) -> bool:
        message = llm_error_message(exc, self.backend)
        logger.warning("LLM failed during %s: %s", step, message)
        fallback = self.runner.fallback() if attempt == 1 else None
        if fallback is None:
            self.error = message + (" (fallback model also failed)" if attempt > 1 else "")
            return False
        self.fallback_reason = f"{message}; answered with the embedded model instead"
        self.backend, self.llm = "embedded", fallback
        return True


def llm_error_message(exc: BaseException, backend: str) -> str:
    """What went wrong and what to check, in one sentence for the UI."""
    from rag.models.llm_openai import LLMUnavailableError
    from rag.models.turns import ModelBusyError

    if isinstance(exc, (LLMUnavailableError, ModelBusyError)):  # these already say what happened and what to do
        return str(exc)
    if backend == "openai":
        return (f"The LLM server failed while answering ({type(exc).__name__}: {exc}) — check that the server "
                "is running, llm.base_url and llm.model are right, and the API key variable is set")
    return (f"The embedded LLM failed while answering ({type(exc).__name__}: {exc}) — check llm.embedded_model "
            "and that the model file is intact (python -m rag.lab bench llm)")
