from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.documents import Chunk
from rag.index.keywords import KeywordIndex
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.models.embedding_router import EmbedderRouter
from rag.text.tokenizer import TOKENIZER_VERSION, tokenize


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


def test_a_words_main_holder_is_the_document_with_most_of_its_chunks(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    assert index.main_holder("beta") == ""  # empty index
    index.add("d1", _chunks("d1", "alpha beta", "beta gamma", "delta"))
    index.add("d2", _chunks("d2", "beta epsilon", "gamma", "alpha"))
    assert index.main_holder("beta") == "d1"  # two of its three chunks
    assert index.main_holder("epsilon") == "d2"
    assert index.main_holder("gamma") == "" and index.main_holder("alpha") == ""  # one chunk each: neither has most
    assert index.main_holder("zebra") == ""


def test_a_saved_index_is_checked_against_the_stored_tokens_not_just_their_count(tmp_path: Path) -> None:
    import json
    import sqlite3

    from rag.index.keywords import keyword_text

    index = KeywordIndex(tmp_path / "bm25")
    index.add("d1", _chunks("d1", "alpha beta", "gamma delta"))
    index.close()
    # what a crash between committing new tokens and saving the matrices leaves: as many rows, other words
    db = sqlite3.connect(tmp_path / "bm25" / "tokens.sqlite3")
    db.execute("DELETE FROM chunk_tokens")
    db.executemany("INSERT INTO chunk_tokens (chunk_id, doc_id, position, tokens, text, metadata) "
                   "VALUES (?, ?, ?, ?, ?, ?)",
                   [(c.chunk_id, c.doc_id, c.index, json.dumps(tokenize(keyword_text(c))), c.text,
                     json.dumps(c.metadata())) for c in _chunks("d2", "zebra yak", "walrus vole")])
    db.commit()
    db.close()

    reopened = KeywordIndex(tmp_path / "bm25")
    assert [h.chunk_id for h in reopened.search("zebra", k=3)] == ["d2:0"]
    assert reopened.search("alpha", k=3) == []


def test_two_writers_saving_at_once_leave_a_complete_current_index(tmp_path: Path, monkeypatch) -> None:
    import bm25s

    first = KeywordIndex(tmp_path / "bm25")
    second = KeywordIndex(tmp_path / "bm25")
    original_save = bm25s.BM25.save
    interleaved = []

    def save_with_another_writer_in_between(self, *args, **kwargs):
        original_save(self, *args, **kwargs)
        if not interleaved:
            interleaved.append(True)
            second.add("d2", _chunks("d2", "gamma delta"))  # saves completely while the first is half-way

    monkeypatch.setattr(bm25s.BM25, "save", save_with_another_writer_in_between)
    first.add("d1", _chunks("d1", "alpha beta"))
    monkeypatch.undo()
    assert interleaved

    builds = []
    original_index = bm25s.BM25.index
    monkeypatch.setattr(bm25s.BM25, "index", lambda self, *a, **k: builds.append(1) or original_index(self, *a, **k))
    reopened = KeywordIndex(tmp_path / "bm25")
    assert builds == []  # the saved index is complete and current: nothing to rebuild
    assert {h.doc_id for h in reopened.search("alpha gamma", k=5)} == {"d1", "d2"}


def test_another_instance_sees_each_write_without_reopening(tmp_path: Path) -> None:
    writer = KeywordIndex(tmp_path / "bm25")
    reader = KeywordIndex(tmp_path / "bm25")
    writer.add("d1", _chunks("d1", "alpha beta", "beta gamma"))
    assert [h.chunk_id for h in reader.search("alpha", k=5)] == ["d1:0"] and len(reader) == 2
    writer.delete("d1")
    assert reader.search("alpha", k=5) == [] and len(reader) == 0


def test_a_store_retokenizes_rows_an_older_tokenizer_made_only_under_its_write_lock(
        config: RagConfig, fake_router: EmbedderRouter) -> None:
    store = DocumentStore(config, fake_router)
    result = Ingestor(store, config).ingest_bytes("鑼鼓經是傳統器樂常用的記譜方法。".encode(), "tw.txt")
    assert result.ok, result.error
    store.close()
    folder = config.data_path / "bm25" / config.storage.collection
    with sqlite3.connect(folder / "tokens.sqlite3") as db:  # what a version-1 library stored
        db.execute("UPDATE chunk_tokens SET tokens = ?", (json.dumps(["鑼鼓", "經是", "傳統"], ensure_ascii=False),))
        db.execute("DELETE FROM meta")

    reader = KeywordIndex(folder, may_save=lambda: False)  # e.g. a store opened while another process writes
    assert reader.search("锣鼓经", k=1) == []  # it searches the old tokens and leaves them alone
    reader.close()
    with sqlite3.connect(folder / "tokens.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM meta").fetchone() == (0,)

    reopened = DocumentStore(config, fake_router)  # opening recovers under the write lock
    assert [h.doc_id for h in reopened.keywords.search("锣鼓经", k=1)] == [result.doc_id]
    reopened.close()
    with sqlite3.connect(folder / "tokens.sqlite3") as db:
        assert db.execute("SELECT value FROM meta").fetchone() == (str(TOKENIZER_VERSION),)
