"""The per-request LLM: one switch to the fallback, built once however many requests fail at once."""

from __future__ import annotations

import threading
import time

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.answer.llm_runner import LLMRunner
from tests.fakes import ScriptedLLM


class Broken(ScriptedLLM):
    def _next(self, prompt: str) -> str:
        raise ConnectionError("server gone")


def test_the_fallback_is_built_once_when_many_requests_fail_together() -> None:
    built: list[int] = []

    def slow_factory() -> ScriptedLLM:
        time.sleep(0.2)  # long enough for every thread to be waiting on the first build
        built.append(1)
        return ScriptedLLM(replies=["fallback answer"])

    runner = LLMRunner(Broken(), backend="openai", fallback_factory=slow_factory)
    answers: list[str] = []

    def ask() -> None:
        request = runner.request()
        answers.append("".join(request.stream([ChatMessage(role=MessageRole.USER, content="q")])))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert built == [1] and answers == ["fallback answer"] * 6


def test_a_failed_fallback_build_is_not_retried_and_each_request_says_why() -> None:
    calls: list[int] = []

    def failing_factory() -> ScriptedLLM:
        calls.append(1)
        raise OSError("model file missing")

    runner = LLMRunner(Broken(), backend="openai", fallback_factory=failing_factory)
    for _ in range(3):
        request = runner.request()
        assert "".join(request.stream([ChatMessage(role=MessageRole.USER, content="q")])) == ""
        assert "server gone" in request.error and request.backend == "openai"
    assert calls == [1]


def test_requests_do_not_share_their_state() -> None:
    runner = LLMRunner(Broken(), backend="openai", fallback_factory=lambda: ScriptedLLM(replies=["ok"]))
    switched, fresh = runner.request(), runner.request()
    assert switched.call("check", lambda llm: llm.chat([ChatMessage(role=MessageRole.USER, content="q")])) is not None
    assert switched.backend == "embedded" and "embedded model instead" in switched.fallback_reason
    assert fresh.backend == "openai" and fresh.fallback_reason == "" and fresh.llm is runner.llm
