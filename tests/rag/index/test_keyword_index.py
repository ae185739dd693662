from __future__ import annotations

import math
from pathlib import Path

import pytest

from rag.documents import Chunk
from rag.index.keywords import KeywordIndex
from rag.text.tokenizer import tokenize


def test_tokenizer_stems_english_and_segments_chinese() -> None:
    tokens = tokenize("The running dogs; 布洛芬每日最大剂量为1200毫克")
    assert "run" in tokens and "dog" in tokens and "the" not in tokens
    assert {"布洛芬", "最大", "剂量", "1200", "毫克"} <= set(tokens)


def _chunks(doc_id: str, *texts: str) -> list[Chunk]:
    return [Chunk(chunk_id=f"{doc_id}:{i}", doc_id=doc_id, file_name=f"{doc_id}.pdf", text=text, index=i,
                  page_start=1, page_end=1, char_start=0, char_end=len(text)) for i, text in enumerate(texts)]


def test_search_ranks_drops_zero_scores_and_filters(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    index.add("d1", _chunks("d1", "Aspirin reduces fever and pain.", "The weather was sunny."))
    index.add("d2", _chunks("d2", "布洛芬每日最大剂量为1200毫克。", "aspirin aspirin dosage for adults"))
    hits = index.search("aspirin dosage", k=10)
    assert [h.chunk_id for h in hits] == ["d2:1", "d1:0"]  # sunny weather shares no token: dropped
    assert all(h.score > 0 for h in hits)
    assert [h.chunk_id for h in index.search("aspirin", k=10, doc_ids={"d1"})] == ["d1:0"]
    assert index.search("布洛芬 剂量", k=3)[0].chunk_id == "d2:0"
    assert index.search("zebra", k=3) == []
    assert index.get(["d2:0"])["d2:0"].text == "布洛芬每日最大剂量为1200毫克。"
    assert [c.chunk_id for c in index.chunks_of("d1")] == ["d1:0", "d1:1"]


def test_persists_and_deletes_incrementally(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    index.add("d1", _chunks("d1", "alpha beta"))
    index.add("d2", _chunks("d2", "beta gamma"))
    index.close()

    reopened = KeywordIndex(tmp_path / "bm25")
    assert len(reopened) == 2 and reopened.doc_ids() == {"d1", "d2"}
    assert reopened.delete("d1") == 1
    assert [h.chunk_id for h in reopened.search("beta", k=5)] == ["d2:0"]
    reopened.add("d2", _chunks("d2", "delta"))  # re-adding a document replaces its chunks
    assert reopened.search("gamma", k=5) == []
    reopened.delete("d2")
    assert len(reopened) == 0 and reopened.search("delta", k=5) == []


def test_an_index_saved_with_other_bm25_parameters_is_rebuilt_when_opened(tmp_path: Path, monkeypatch) -> None:
    import rag.index.keywords as keyword_index

    texts = ("aspirin aspirin aspirin aspirin fever", "aspirin fever relief in adults")
    monkeypatch.setattr(keyword_index, "BM25_PARAMS", {"k1": 1.5, "b": 0.75})  # bm25s' own default
    old = KeywordIndex(tmp_path / "bm25")
    old.add("d", _chunks("d", *texts))
    old_scores = {h.chunk_id: h.score for h in old.search("aspirin", k=2)}
    old.close()

    monkeypatch.setattr(keyword_index, "BM25_PARAMS", {"k1": 0.7, "b": 0.75})
    reopened = KeywordIndex(tmp_path / "bm25")
    fresh = KeywordIndex(tmp_path / "fresh")
    fresh.add("d", _chunks("d", *texts))
    new_scores = {h.chunk_id: h.score for h in reopened.search("aspirin", k=2)}
    assert new_scores == pytest.approx({h.chunk_id: h.score for h in fresh.search("aspirin", k=2)})
    # a lower k1 saturates term frequency sooner: four "aspirin"s gain less over one
    assert new_scores["d:0"] / new_scores["d:1"] < old_scores["d:0"] / old_scores["d:1"]
    reopened.close()
    assert KeywordIndex(tmp_path / "bm25").search("aspirin", k=2)[0].score == pytest.approx(new_scores["d:0"])


def test_shared_phrases_outrank_scattered_words(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    index.add("d", _chunks("d", "The bank river flooded; a new york times reporter saw the river bank.",
                           "The river bank in New York flooded."))
    scattered, phrase = "d:0", "d:1"
    assert [h.chunk_id for h in index.search("river bank new york", k=2, phrase_weight=1.0)][0] == phrase
    plain = {h.chunk_id: h.score for h in index.search("river bank new york", k=2, phrase_weight=0.0)}
    boosted = {h.chunk_id: h.score for h in index.search("river bank new york", k=2, phrase_weight=1.0)}
    assert boosted[phrase] - plain[phrase] > boosted[scattered] - plain[scattered]


def test_idf_counts_the_chunks_holding_each_token(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    assert index.idf(["beta"]) == {"beta": 1.0}  # empty index: every word weighs the same
    index.add("d1", _chunks("d1", "alpha beta", "beta gamma", "beta delta"))
    weights = index.idf(["beta", "alpha", "zebra"])
    assert weights["beta"] == pytest.approx(math.log1p(3 / 4))
    assert weights["alpha"] == pytest.approx(math.log1p(3 / 2))
    assert weights["zebra"] == pytest.approx(math.log1p(3))  # in no chunk: the rarest of all
