"""The bounded wait on the embedded model (issue #14, suite 4): calls take turns, first come first served;
one that cannot get the model within ``llm.queue_timeout_s`` fails saying how many questions were ahead.

The model is the app's own ``EmbeddedLLM`` around ``ScriptedLlama`` (a llama.cpp stand-in): the
turn-taking under test is the real one, and a test holds the model by holding the stand-in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from rag.answer.llm_runner import LLMRunner
from rag.config import ConfigError, LLMConfig, RagConfig
from rag.lab.stand_ins import ScriptedLlama
from rag.models.llm_embedded import EmbeddedLLM
from rag.models.llms import LLMHandle
from rag.models.turns import ModelBusyError, ModelTurns, listen_for_turns
from rag.runtime import build_llm_runner, with_generation
from tests import fixtures
from tests.fakes import make_engine

pytestmark = pytest.mark.timeout(60)  # on code without a bounded wait these tests would wait for ever


def _held() -> tuple[EmbeddedLLM, ScriptedLlama, threading.Event]:
    hold = threading.Event()
    llama = ScriptedLlama(hold=hold)
    return EmbeddedLLM(llama, model_name="scripted", queue_timeout_s=0.3), llama, hold


def _in_thread(work) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def _wait_until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the test's own setup"
        time.sleep(0.005)


def test_a_call_that_cannot_get_the_model_in_time_fails_saying_how_many_were_ahead() -> None:
    llm, llama, hold = _held()
    patient = llm.model_copy(update={"queue_timeout_s": 10.0})  # another session's copy: same model, same queue
    done: list[str] = []
    first = _in_thread(lambda: done.append(patient.complete("first").text))
    llama.entered.wait(5)
    second = _in_thread(lambda: done.append(patient.complete("second").text))
    _wait_until(lambda: llm.waiting == 1)

    started = time.monotonic()
    with pytest.raises(ModelBusyError) as caught:
        llm.complete("third")
    waited = time.monotonic() - started

    assert caught.value.ahead == 2 and 0.25 <= waited < 2.0
    assert "2 questions were ahead of yours" in str(caught.value) and "llm.queue_timeout_s" in str(caught.value)
    assert llm.waiting == 1  # the one that gave up left the queue; the other still waits
    hold.set()
    first.join(5)
    second.join(5)
    assert len(done) == 2 and llama.max_active == 1  # answers stayed serialised


def test_waiters_are_served_in_arrival_order() -> None:
    turns = ModelTurns()
    order: list[int] = []

    def call(number: int) -> None:
        with turns.turn(5.0):
            order.append(number)

    with turns.turn(5.0):
        threads = []
        for number in range(5):
            threads.append(_in_thread(lambda n=number: call(n)))
            _wait_until(lambda n=number: turns.waiting == n + 1)  # each is queued before the next arrives
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4] and turns.waiting == 0 and not turns.busy


def test_a_waiting_caller_hears_the_queue_move_and_then_its_turn() -> None:
    turns = ModelTurns()
    heard: list[int] = []
    release_first, release_second = threading.Event(), threading.Event()

    def hold_until(event: threading.Event) -> None:
        with turns.turn(5.0):
            event.wait(5)

    first = _in_thread(lambda: hold_until(release_first))
    _wait_until(lambda: turns.busy)
    second = _in_thread(lambda: hold_until(release_second))
    _wait_until(lambda: turns.waiting == 1)

    def listen() -> None:
        with listen_for_turns(heard.append), turns.turn(5.0):
            heard.append(-1)  # inside the turn

    third = _in_thread(listen)
    _wait_until(lambda: heard == [2])
    release_first.set()
    _wait_until(lambda: heard == [2, 1])
    release_second.set()
    for thread in (first, second, third):
        thread.join(5)
    assert heard == [2, 1, 0, -1]


def test_a_free_model_is_taken_without_telling_anyone() -> None:
    heard: list[int] = []
    turns = ModelTurns()
    with listen_for_turns(heard.append), turns.turn(1.0):
        pass
    assert heard == []


def test_queue_timeout_is_a_bounded_llm_setting() -> None:
    assert LLMConfig().queue_timeout_s == 120.0
    with pytest.raises(ConfigError, match=r"^llm\.queue_timeout_s: must be between"):
        RagConfig().with_overrides({"llm.queue_timeout_s": 1e9})
    with pytest.raises(ConfigError, match=r"^llm\.queue_timeout_s: must be between"):
        RagConfig().with_overrides({"llm.queue_timeout_s": 0})


def test_the_runner_waits_as_long_as_the_config_says_on_the_one_shared_model() -> None:
    loaded = EmbeddedLLM(ScriptedLlama(), model_name="scripted")
    config = RagConfig().with_overrides({"llm.queue_timeout_s": 7, "generation.temperature": 0.5})
    handle = LLMHandle(with_generation(loaded, config.generation), "embedded", "scripted")
    runner = build_llm_runner(config, handle)
    assert runner.llm.queue_timeout_s == 7 and loaded.queue_timeout_s == 120  # the cached model is not changed
    assert runner.llm.temperature == 0.5
    assert runner.llm._turns is loaded._turns and runner.llm._llama is loaded._llama  # one model, one queue


def test_a_question_that_cannot_get_the_model_fails_with_the_message_and_keeps_its_sources(store, config,
                                                                                           tmp_path) -> None:
    from rag.ingest.ingestor import Ingestor

    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    llm, llama, hold = _held()
    engine = make_engine(store, config, llm)
    holder = _in_thread(lambda: llm.complete("a long answer for someone else"))
    llama.entered.wait(5)

    result = engine.answer("What is the maximum daily dose of ibuprofen for adults?")

    assert result.error.startswith("The model is busy: 1 question was ahead of yours"), result.error
    assert "check llm.embedded_model" not in result.error  # not mistaken for a broken model
    assert result.sources and result.answer == ""
    hold.set()
    holder.join(5)
    answered = engine.answer("What is the maximum daily dose of ibuprofen for adults?")
    assert not answered.error and answered.answer.endswith("[1].") and answered.citations
    assert llama.max_active == 1


def test_an_openai_runner_falling_back_to_a_busy_embedded_model_says_it_is_busy() -> None:
    from tests.fakes import ScriptedLLM

    class Down(ScriptedLLM):
        def _next(self, prompt: str) -> str:
            raise ConnectionError("server gone")

    llm, llama, hold = _held()
    holder = _in_thread(lambda: llm.complete("someone else"))
    llama.entered.wait(5)
    runner = LLMRunner(Down(), backend="openai", fallback_factory=lambda: llm, queue_timeout_s=0.2)
    request = runner.request()
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    assert "".join(request.stream([ChatMessage(role=MessageRole.USER, content="q")])) == ""
    assert "The model is busy: 1 question was ahead of yours" in request.error
    hold.set()
    holder.join(5)


def test_a_call_can_keep_the_model_for_its_threads_next_call() -> None:
    turns = ModelTurns()
    order: list[str] = []

    def check_then_answer() -> None:
        with turns.turn(5.0, keep_for_s=2.0):
            order.append("check")
            _in_thread(other)
            _wait_until(lambda: turns.waiting == 1)  # another question is in line before the check ends
        with turns.turn(5.0):
            order.append("answer")

    def other() -> None:
        with turns.turn(5.0):
            order.append("other")

    mine = _in_thread(check_then_answer)
    mine.join(5)
    _wait_until(lambda: len(order) == 3)
    assert order == ["check", "answer", "other"]


def test_a_kept_model_goes_on_when_its_caller_does_not_come_back() -> None:
    turns = ModelTurns()
    with turns.turn(5.0, keep_for_s=0.3):
        pass
    waited: list[float] = []

    def other() -> None:
        started = time.monotonic()
        with turns.turn(5.0):
            waited.append(time.monotonic() - started)

    _in_thread(other).join(5)
    assert len(waited) == 1 and 0.25 <= waited[0] < 1.5  # it waited for the keep to run out, no longer


def test_the_answerability_check_keeps_the_model_for_the_answer_that_follows() -> None:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    llama = ScriptedLlama()
    llm = EmbeddedLLM(llama, model_name="scripted")
    prompt = [ChatMessage(role=MessageRole.USER, content="<<<SOURCE 1>>>\nThe code is 4711.\n<<<END SOURCE 1>>>")]
    done = threading.Event()

    def question() -> None:
        llm.yes_no_probability(prompt, ["yes"], ["no"])
        _wait_until(lambda: llm.waiting == 1)  # someone else asked meanwhile
        list(llm.stream_chat(prompt))
        done.set()

    def someone_else() -> None:
        llm.complete("someone else's question")

    hold = threading.Event()
    llama.hold = hold
    first = _in_thread(question)
    llama.entered.wait(5)
    other = _in_thread(someone_else)
    _wait_until(lambda: llm.waiting == 1)
    hold.set()
    first.join(5)
    other.join(5)
    contents = [messages[-1]["content"] for messages in llama.calls]
    assert contents == [prompt[0].content, prompt[0].content, "someone else's question"]
