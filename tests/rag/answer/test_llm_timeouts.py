"""An OpenAI-compatible server that accepts the connection and then never answers (a real socket).

The issue's target: "a server that is down or does not answer produces a clear error within 3 seconds
saying what to check; when configured, the engine falls back to the embedded LLM and records that it
did." These tests use the default request timeout (120 s), so only the first-response timeout can
make them pass.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.models.llm_openai import LLMUnavailableError, OpenAICompatibleLLM
from tests import fixtures
from tests.fakes import ScriptedLLM, make_engine


class StallingServer:
    """Listens on 127.0.0.1, accepts every connection, reads nothing and answers nothing.

    With ``answer_models=True`` a ``GET /models`` is answered (a busy but alive server) and a chat
    request is answered after ``delay_s`` with a two-chunk stream.
    """

    def __init__(self, *, answer_models: bool = False, delay_s: float = 0.0) -> None:
        self.answer_models = answer_models
        self.delay_s = delay_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)
            if self.answer_models:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        request = conn.recv(65536).decode("latin-1")
        if request.startswith("GET"):
            body = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            conn.close()
            return
        time.sleep(self.delay_s)  # processing the prompt before the first byte
        events = [b'{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
                  b'"delta":{"content":"' + piece + b'"},"finish_reason":null}]}' for piece in (b"late", b" reply")]
        payload = b"".join(b"data: " + e + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + payload)
        conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def stalling() -> Iterator[StallingServer]:
    server = StallingServer()
    yield server
    server.close()


def _llm(base_url: str) -> OpenAICompatibleLLM:
    # the defaults of LLMConfig: connect 2 s, request 120 s, first response 1 s
    return OpenAICompatibleLLM(base_url=base_url, model="m", api_key_env="TEST_RAG_LLM_KEY")


def test_server_that_accepts_but_never_answers_fails_within_3s_saying_what_to_check(stalling) -> None:
    llm = _llm(stalling.base_url)
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError) as info:
        list(llm.stream_chat([ChatMessage(role=MessageRole.USER, content="hello")]))
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, elapsed
    message = str(info.value)
    assert stalling.base_url in message and "did not answer" in message
    assert "llm.base_url" in message and "stuck or overloaded" in message
    assert stalling.connections, "the request must really have reached the socket"


def test_busy_but_alive_server_is_waited_for(tmp_path: Path) -> None:
    server = StallingServer(answer_models=True, delay_s=2.5)
    try:
        llm = _llm(server.base_url)
        started = time.monotonic()
        text = "".join(r.delta or "" for r in llm.stream_chat([ChatMessage(role=MessageRole.USER, content="hi")]))
        assert text == "late reply"
        assert time.monotonic() - started >= 2.5  # it waited past the first-response timeout
    finally:
        server.close()


def test_engine_falls_back_to_the_embedded_llm_within_3s_and_records_it(stalling, store, config: RagConfig,
                                                                        tmp_path: Path) -> None:
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert result.ok, result.error
    fallback = ScriptedLLM(replies=["yes", f"{fixtures.EN_FACT} [1]"])
    engine = make_engine(store, config, _llm(stalling.base_url), backend="openai", fallback=lambda: fallback)
    stream = engine.stream("What is the maximum daily dose of ibuprofen for adults?")
    started = time.monotonic()  # sources are ready; from here the server is asked
    tokens = iter(stream)
    first = next(tokens)
    assert time.monotonic() - started < 3.0
    assert first
    rest = "".join(tokens)
    answer = stream.result()
    assert answer.answer == (first + rest).strip()
    assert not answer.error and "1200" in answer.answer
    assert answer.llm_backend == "embedded"
    assert "did not answer" in answer.fallback_reason and "answered with the embedded model" in answer.fallback_reason


def test_engine_without_fallback_reports_the_error_within_3s(stalling, store, config: RagConfig,
                                                             tmp_path: Path) -> None:
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    no_gate = replace(config, generation=replace(config.generation, answer_check=False))
    engine = make_engine(store, no_gate, _llm(stalling.base_url), backend="openai")
    started = time.monotonic()
    answer = engine.answer("What is the maximum daily dose of ibuprofen for adults?")
    assert time.monotonic() - started < 3.0
    assert "did not answer" in answer.error and "llm.base_url" in answer.error
    assert answer.answer == "" and not answer.citations
