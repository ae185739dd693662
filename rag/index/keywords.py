"""A persisted BM25 index over chunk texts (bm25s), updated when documents change, never per query.

It is also the node store: Chroma keeps vectors, but llama-index keeps no docstore beside a Chroma
index, so chunk text and metadata live here too (keyword-only retrieval must work when the vector
side is down).

Token lists are stored per chunk in SQLite, so adding or deleting a document re-tokenizes only that
document; the bm25s matrices are then re-assembled from the stored tokens (a sparse build, ~1 s per
100k chunks) and saved beside them.

Two matrices are kept: one over tokens and one over adjacent token pairs (after stop words are
removed). A query's score is ``bm25(tokens) + phrase_weight * bm25(pairs)``: shared phrases are
strong evidence that plain bag-of-words BM25 throws away (on SQuAD dev it lifts MRR@10 of the
hybrid pipeline from 0.868 to 0.878; see README). Queries load nothing: the index stays in memory and is swapped
atomically after each write.

BM25's term-frequency saturation ``k1`` is 0.5, not bm25s' 1.5 (``BM25_PARAMS``). Chosen on tuning
splits with the default hybrid pipeline (docs/retrieval-protocol.md): a lower k1 ranked better fused
on SciFact train and the tune halves of SQuAD and CMRC2018; b 0.5-0.9 made no difference. The scores
are baked into the saved matrices, so an index saved with other parameters is rebuilt from its stored
tokens when opened.

Tokens depend on the tokenizer (``rag.text.tokenizer.TOKENIZER_VERSION``; version 2 reads
traditional Chinese as simplified). An index whose tokens were made by another version is
re-tokenized from its stored chunk text when opened, so a library indexed before traditional
Chinese was normalised matches traditional questions without re-embedding anything.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import bm25s
import numpy as np

from rag.documents import Chunk
from rag.text.tokenizer import TOKENIZER_VERSION, tokenize

logger = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG to stderr

BM25_PARAMS = {"k1": 0.5, "b": 0.75}


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    doc_id: str
    score: float


class KeywordIndex:
    """BM25 over every stored chunk, with optional restriction to some documents."""

    def __init__(self, folder: Path, *, tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self._folder = folder
        self._folder.mkdir(parents=True, exist_ok=True)
        self._tokenize = tokenizer
        self._lock = threading.RLock()
        self._db = sqlite3.connect(folder / "tokens.sqlite3", check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS chunk_tokens ("
            " chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, position INTEGER NOT NULL, tokens TEXT NOT NULL,"
            " text TEXT NOT NULL, metadata TEXT NOT NULL)"
        )
        self._db.execute("CREATE INDEX IF NOT EXISTS chunk_tokens_doc ON chunk_tokens(doc_id)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()
        if tokenizer is tokenize:
            self._retokenize_if_stale()
        self._retriever: bm25s.BM25 | None = None
        self._phrases: bm25s.BM25 | None = None
        self._chunk_ids: list[str] = []
        self._doc_ids: np.ndarray = np.array([], dtype=object)
        self._load_or_build()

    # -- writes -------------------------------------------------------------------------------

    def add(self, doc_id: str, chunks: Sequence[Chunk]) -> None:
        """Index the chunks of one document, replacing any earlier ones."""
        self.add_many({doc_id: chunks})

    def add_many(self, documents: Mapping[str, Sequence[Chunk]]) -> None:
        """Index several documents with one rebuild (bulk loads, evaluation corpora)."""
        rows = [(c.chunk_id, doc_id, c.index, json.dumps(self._tokenize(keyword_text(c)), ensure_ascii=False),
                 c.text, json.dumps(c.metadata(), ensure_ascii=False))
                for doc_id, chunks in documents.items() for c in chunks]
        with self._lock:
            self._db.executemany("DELETE FROM chunk_tokens WHERE doc_id = ?", [(d,) for d in documents])
            self._db.executemany("INSERT INTO chunk_tokens VALUES (?, ?, ?, ?, ?, ?)", rows)
            self._db.commit()
            self._rebuild()

    def delete(self, doc_id: str) -> int:
        with self._lock:
            removed = self._db.execute("DELETE FROM chunk_tokens WHERE doc_id = ?", (doc_id,)).rowcount
            self._db.commit()
            if removed:
                self._rebuild()
            return removed

    # -- reads --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._chunk_ids)

    def doc_ids(self) -> set[str]:
        return set(self._doc_ids.tolist())

    def get(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        found: dict[str, Chunk] = {}
        ids = list(chunk_ids)
        with self._lock:
            for start in range(0, len(ids), 500):
                batch = ids[start:start + 500]
                marks = ",".join("?" * len(batch))
                for chunk_id, text, metadata in self._db.execute(
                        f"SELECT chunk_id, text, metadata FROM chunk_tokens WHERE chunk_id IN ({marks})", batch):
                    found[chunk_id] = Chunk.from_metadata(text, json.loads(metadata))
        return found

    def idf(self, tokens: Iterable[str]) -> dict[str, float]:
        """``log(1 + N / (1 + df))`` per token, chunks as documents; a token no chunk has gets the
        highest weight (df 0). Read from the BM25 matrix, whose column pointers count each token's chunks."""
        with self._lock:
            retriever = self._retriever
        weights: dict[str, float] = {}
        if retriever is None:
            return {token: 1.0 for token in tokens}
        pointers = retriever.scores["indptr"]
        total = int(retriever.scores["num_docs"])
        for token in tokens:
            column = retriever.vocab_dict.get(token)
            df = 0 if column is None else int(pointers[column + 1] - pointers[column])
            weights[token] = float(np.log1p(total / (1 + df)))
        return weights

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT text, metadata FROM chunk_tokens WHERE doc_id = ? ORDER BY position",
                                    (doc_id,)).fetchall()
        return [Chunk.from_metadata(text, json.loads(metadata)) for text, metadata in rows]

    def search(self, query: str, k: int, *, doc_ids: Iterable[str] | None = None,
               phrase_weight: float = 0.5) -> list[KeywordHit]:
        """Top-k chunks by BM25 (plus ``phrase_weight`` x BM25 over token pairs).

        Chunks that share no token with the query are never returned.
        """
        with self._lock:
            retriever, phrases = self._retriever, self._phrases
            chunk_ids, chunk_docs = self._chunk_ids, self._doc_ids
        if retriever is None or not chunk_ids:
            return []
        tokens = self._tokenize(query)
        token_ids = [retriever.vocab_dict[t] for t in tokens if t in retriever.vocab_dict]
        if not token_ids:
            return []
        scores = retriever.get_scores_from_ids(token_ids)
        if phrase_weight > 0 and phrases is not None:
            pair_ids = [phrases.vocab_dict[p] for p in token_pairs(tokens) if p in phrases.vocab_dict]
            if pair_ids:
                scores = scores + phrase_weight * phrases.get_scores_from_ids(pair_ids)
        if doc_ids is not None:
            scores = scores * np.isin(chunk_docs, list(doc_ids))
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [KeywordHit(chunk_ids[i], str(chunk_docs[i]), float(scores[i])) for i in order]

    # -- internals ----------------------------------------------------------------------------

    def _rebuild(self) -> None:
        rows = self._db.execute(
            "SELECT chunk_id, doc_id, tokens FROM chunk_tokens ORDER BY doc_id, position").fetchall()
        chunk_ids = [r[0] for r in rows]
        doc_ids = np.array([r[1] for r in rows], dtype=object)
        retriever = phrases = None
        if rows:
            tokens = [json.loads(r[2]) for r in rows]
            retriever = bm25s.BM25(**BM25_PARAMS)
            retriever.index([t or [""] for t in tokens], show_progress=False)
            phrases = bm25s.BM25(**BM25_PARAMS)
            phrases.index([token_pairs(t) or [""] for t in tokens], show_progress=False)
            self._save(retriever, phrases, chunk_ids, doc_ids)
        else:
            shutil.rmtree(self._folder / "bm25s", ignore_errors=True)
        self._retriever, self._phrases, self._chunk_ids, self._doc_ids = retriever, phrases, chunk_ids, doc_ids

    def _save(self, retriever: bm25s.BM25, phrases: bm25s.BM25, chunk_ids: list[str], doc_ids: np.ndarray) -> None:
        staging = self._folder / "bm25s.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        retriever.save(str(staging / "tokens"))
        phrases.save(str(staging / "pairs"))
        (staging / "chunks.json").write_text(json.dumps({"chunk_ids": chunk_ids, "doc_ids": doc_ids.tolist()}))
        final = self._folder / "bm25s"
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)

    def _load_or_build(self) -> None:
        saved = self._folder / "bm25s"
        stored = self._db.execute("SELECT COUNT(*) FROM chunk_tokens").fetchone()[0]
        try:
            meta = json.loads((saved / "chunks.json").read_text())
            if len(meta["chunk_ids"]) == stored and stored:
                retriever = bm25s.BM25.load(str(saved / "tokens"))
                phrases = bm25s.BM25.load(str(saved / "pairs"))
                if all(_params(index) == BM25_PARAMS for index in (retriever, phrases)):
                    self._retriever, self._phrases = retriever, phrases
                    self._chunk_ids = meta["chunk_ids"]
                    self._doc_ids = np.array(meta["doc_ids"], dtype=object)
                    return
                logger.info("BM25 index saved with %s; rebuilding it with %s", _params(retriever), BM25_PARAMS)
        except (OSError, ValueError, KeyError) as exc:
            if stored:
                logger.info("BM25 index missing or unreadable (%s); rebuilding from stored tokens", exc)
        self._rebuild()

    def _retokenize_if_stale(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'tokenizer_version'").fetchone()
        stored = int(row[0]) if row else 1  # indexes from before the version was recorded: version 1
        if stored != TOKENIZER_VERSION:
            rows = self._db.execute("SELECT chunk_id, text, metadata FROM chunk_tokens").fetchall()
            if rows:
                logger.info("re-tokenizing %d chunks (tokenizer version %s -> %s)", len(rows), stored,
                            TOKENIZER_VERSION)
            updates = [(json.dumps(self._tokenize(keyword_text(Chunk.from_metadata(text, json.loads(meta)))),
                                   ensure_ascii=False), chunk_id) for chunk_id, text, meta in rows]
            self._db.executemany("UPDATE chunk_tokens SET tokens = ? WHERE chunk_id = ?", updates)
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer_version', ?)", (str(TOKENIZER_VERSION),))
            self._db.commit()
            shutil.rmtree(self._folder / "bm25s", ignore_errors=True)  # its matrices hold the old tokens

    def close(self) -> None:
        self._db.close()


def _params(index: bm25s.BM25) -> dict[str, float]:
    return {name: float(getattr(index, name)) for name in BM25_PARAMS}


def token_pairs(tokens: Sequence[str]) -> list[str]:
    """Adjacent token pairs, the phrase evidence ("new york" as one unit)."""
    return [f"{a}\u241f{b}" for a, b in zip(tokens, tokens[1:])]


def keyword_text(chunk: Chunk) -> str:
    """What BM25 indexes: the heading path (section titles carry key terms) and the chunk text."""
    return " ".join(part for part in (chunk.heading_path, chunk.text) if part)
