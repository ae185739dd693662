from __future__ import annotations

import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.models import llms
from rag.config import GenerationConfig, LLMConfig
from rag.models.llm_embedded import EmbeddedLLM
from rag.models.llm_openai import LLMUnavailableError, OpenAICompatibleLLM

REPLY = ["Paris", " is", " the", " capital", "."]
REPLY_LOGPROBS = [math.log(0.5), math.log(0.9), math.log(0.9), math.log(0.9), math.log(0.9)]


class FakeOpenAIServer:
    """An OpenAI-compatible chat server on 127.0.0.1; paths under /slow/ never answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _hang_if_slow(self) -> bool:
                if self.path.startswith("/slow/"):
                    server.release.wait(30)
                    return True
                return False

            def do_GET(self) -> None:
                if self._hang_if_slow():
                    return
                self._send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "authorization": self.headers.get("Authorization")})
                if self._hang_if_slow():
                    return
                if self.path == "/strict/v1/chat/completions" and body.get("logprobs"):
                    self._send_json({"error": {"message": "logprobs not supported", "type": "invalid_request"}},
                                    status=400)
                    return
                if self.path not in ("/v1/chat/completions", "/strict/v1/chat/completions"):
                    self.send_error(404)
                    return
                if not body.get("stream"):
                    self._send_json({"id": "c1", "object": "chat.completion", "created": 0, "model": "fake-model",
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": "".join(REPLY)}}]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for i, piece in enumerate(REPLY):
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
                             "choices": [{"index": 0, "finish_reason": None,
                                          "delta": {"role": "assistant", "content": piece} if i == 0
                                          else {"content": piece}}]}
                    if body.get("logprobs"):  # log(P) of each piece as REPLY_LOGPROBS says, the top token 0.9
                        chunk["choices"][0]["logprobs"] = {"content": [{
                            "token": piece, "logprob": REPLY_LOGPROBS[i], "bytes": None,
                            "top_logprobs": [{"token": "x", "logprob": math.log(0.9), "bytes": None}]}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _send_json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def slow_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slow/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer()
    yield fake
    fake.close()


@pytest.fixture
def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _llm(base_url: str, **kwargs: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=base_url, model="fake-model", api_key_env="TEST_RAG_LLM_KEY", **kwargs)


def test_stream_chat_yields_deltas_and_sends_settings(server: FakeOpenAIServer) -> None:
    llm = _llm(server.base_url, temperature=0.2, max_tokens=50)
    messages = [ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
                ChatMessage(role=MessageRole.USER, content="Capital of France?")]
    responses = list(llm.stream_chat(messages))
    assert [r.delta for r in responses] == REPLY
    assert responses[-1].message.content == "Paris is the capital."
    body = server.requests[-1]["body"]
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Capital of France?"}]


def test_the_answer_records_the_servers_token_probabilities(server: FakeOpenAIServer) -> None:
    llm = _llm(server.base_url)
    assert "".join(r.delta for r in llm.stream_chat([ChatMessage(role=MessageRole.USER, content="Capital?")])) \
        == "Paris is the capital."
    assert server.requests[-1]["body"]["logprobs"] is True
    assert [(t, round(p, 3), round(top, 3)) for t, p, top in llm.last_token_probs] == [
        ("Paris", 0.5, 0.9), (" is", 0.9, 0.9), (" the", 0.9, 0.9), (" capital", 0.9, 0.9), (".", 0.9, 0.9)]


def test_a_server_refusing_logprobs_still_answers_without_them(server: FakeOpenAIServer) -> None:
    llm = _llm(f"http://127.0.0.1:{server.port}/strict/v1")
    for _ in range(2):
        text = "".join(r.delta for r in llm.stream_chat([ChatMessage(role=MessageRole.USER, content="Capital?")]))
        assert text == "Paris is the capital." and llm.last_token_probs == []
    strict = [r for r in server.requests if r["path"].startswith("/strict/")]
    assert [bool(r["body"].get("logprobs")) for r in strict] == [True, False, False]  # asked once, then never


def test_complete_and_stream_complete(server: FakeOpenAIServer) -> None:
    llm = _llm(server.base_url)
    assert llm.complete("Capital of France?").text == "Paris is the capital."
    assert "".join(r.delta for r in llm.stream_complete("Capital?")) == "Paris is the capital."
    assert llm.chat([ChatMessage(role=MessageRole.USER, content="hi")]).message.content == "Paris is the capital."
    assert server.requests[-1]["body"]["messages"] == [{"role": "user", "content": "hi"}]


def test_api_key_is_read_from_the_env_at_request_time(server: FakeOpenAIServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    llm = _llm(server.base_url)
    monkeypatch.delenv("TEST_RAG_LLM_KEY", raising=False)
    llm.complete("x")
    assert server.requests[-1]["authorization"] == "Bearer not-needed"
    monkeypatch.setenv("TEST_RAG_LLM_KEY", "sk-test")
    llm.complete("x")
    assert server.requests[-1]["authorization"] == "Bearer sk-test"


def test_health_check_passes_on_a_live_server(server: FakeOpenAIServer) -> None:
    _llm(server.base_url).health_check()


def test_dead_port_fails_fast_with_an_actionable_message(dead_url: str) -> None:
    llm = _llm(dead_url)
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError) as info:
        llm.health_check()
    assert time.monotonic() - started < 3
    message = str(info.value)
    assert f"No LLM server answered at {dead_url} within 2s" in message
    assert "llm.base_url / RAG_LLM_BASE_URL" in message
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError):
        llm.complete("hello")
    assert time.monotonic() - started < 3


def test_slow_server_times_out(server: FakeOpenAIServer) -> None:
    llm = _llm(server.slow_url, connect_timeout_s=0.5, request_timeout_s=0.8)
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match="within 0.5s"):
        llm.health_check()
    assert time.monotonic() - started < 2
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError):
        list(llm.stream_chat([ChatMessage(role=MessageRole.USER, content="hello")]))
    assert time.monotonic() - started < 3


# --- build_llm --------------------------------------------------------------------------------


class FakeLlama:
    """Stands in for ``llama_cpp.Llama``: streams a fixed reply, tokenizes by bytes."""

    def __init__(self, reply: list[str] = REPLY, delay_s: float = 0.0) -> None:
        self.reply, self.delay_s = reply, delay_s
        self.calls: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0

    def create_chat_completion(self, messages: list[dict[str, str]], stream: bool = False, **kwargs: Any):
        self.calls.append({"messages": messages, **kwargs})
        assert stream

        def gen():
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            try:
                yield {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
                for piece in self.reply:
                    time.sleep(self.delay_s)
                    yield {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            finally:
                self.active -= 1

        return gen()

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(text)


@pytest.fixture
def fake_embedded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path]]:
    loads: list[tuple[str, Path]] = []

    def load(config: LLMConfig, generation: GenerationConfig, cache_dir: Path) -> EmbeddedLLM:
        loads.append((config.embedded_model, cache_dir))
        return EmbeddedLLM(FakeLlama(), model_name=config.embedded_model, n_ctx=config.n_ctx)

    monkeypatch.setattr(llms, "load_embedded_llm", load)
    return loads


def test_build_llm_openai_when_the_server_answers(server: FakeOpenAIServer, tmp_path: Path,
                                                   fake_embedded) -> None:
    handle = llms.build_llm(LLMConfig(backend="openai", base_url=server.base_url, model="fake-model"),
                            GenerationConfig(max_answer_tokens=64, temperature=0.0), tmp_path)
    assert (handle.backend_used, handle.model_name, handle.fallback_reason) == ("openai", "fake-model", "")
    assert handle.llm.max_tokens == 64 and handle.llm.temperature == 0.0
    assert fake_embedded == []


def test_build_llm_falls_back_to_embedded(dead_url: str, tmp_path: Path, fake_embedded) -> None:
    started = time.monotonic()
    handle = llms.build_llm(LLMConfig(backend="openai", base_url=dead_url), GenerationConfig(), tmp_path)
    assert time.monotonic() - started < 3
    assert handle.backend_used == "embedded" and isinstance(handle.llm, EmbeddedLLM)
    assert handle.model_name == "qwen2.5-1.5b-instruct"
    assert "No LLM server answered" in handle.fallback_reason
    assert fake_embedded == [("qwen2.5-1.5b-instruct", tmp_path)]


def test_build_llm_without_fallback_raises(dead_url: str, tmp_path: Path, fake_embedded) -> None:
    with pytest.raises(LLMUnavailableError, match="RAG_LLM_BASE_URL"):
        llms.build_llm(LLMConfig(backend="openai", base_url=dead_url, fallback_to_embedded=False),
                       GenerationConfig(), tmp_path)
    assert fake_embedded == []


def test_build_llm_embedded_backend(tmp_path: Path, fake_embedded) -> None:
    handle = llms.build_llm(LLMConfig(embedded_model="qwen2.5-0.5b-instruct"), GenerationConfig(), tmp_path)
    assert (handle.backend_used, handle.model_name, handle.fallback_reason) == ("embedded",
                                                                                "qwen2.5-0.5b-instruct", "")


# --- EmbeddedLLM with a fake llama.cpp ---------------------------------------------------------


def test_embedded_llm_streams_through_the_chat_template() -> None:
    fake = FakeLlama()
    llm = EmbeddedLLM(fake, model_name="fake", n_ctx=2048, temperature=0.3, max_tokens=77)
    messages = [ChatMessage(role=MessageRole.SYSTEM, content="sys"), ChatMessage(role=MessageRole.USER, content="q")]
    responses = list(llm.stream_chat(messages))
    assert [r.delta for r in responses] == REPLY
    assert responses[-1].message.content == "Paris is the capital."
    assert fake.calls[-1]["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}]
    assert fake.calls[-1]["temperature"] == 0.3 and fake.calls[-1]["max_tokens"] == 77
    assert llm.complete("q").text == "Paris is the capital."
    assert fake.calls[-1]["messages"] == [{"role": "user", "content": "q"}]
    assert [r.delta for r in llm.stream_complete("q", max_tokens=5)] == REPLY
    assert fake.calls[-1]["max_tokens"] == 5
    assert llm.metadata.is_chat_model and llm.metadata.context_window == 2048
    assert llm.count_tokens("abc") == 3


def test_every_embedded_answer_samples_from_the_same_seed() -> None:
    # llama-cpp-python derives each call's seed from the last one's when none is given, so an answer at
    # temperature 0.1 depended on how many model calls came before it
    from rag.models.llm_embedded import SAMPLING_SEED

    fake = FakeLlama()
    llm = EmbeddedLLM(fake, model_name="fake", n_ctx=2048, temperature=0.1)
    llm.complete("q")
    list(llm.stream_chat([ChatMessage(role=MessageRole.USER, content="q")]))
    assert [call["seed"] for call in fake.calls] == [SAMPLING_SEED, SAMPLING_SEED]
    llm.complete("q", seed=7)  # a caller's own seed still wins
    assert fake.calls[-1]["seed"] == 7


def test_embedded_llm_serializes_concurrent_generations() -> None:
    fake = FakeLlama(delay_s=0.01)
    llm = EmbeddedLLM(fake, model_name="fake")
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(llm.complete("q").text)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["Paris is the capital."] * 3
    assert fake.max_active == 1


def test_abandoned_stream_releases_the_lock() -> None:
    llm = EmbeddedLLM(FakeLlama(), model_name="fake")
    stream = llm.stream_complete("q")
    next(stream)
    stream.close()
    assert llm.complete("q").text == "Paris is the capital."
