"""A persisted BM25 index over chunk texts (bm25s), updated when documents change, never per query.

It is also the node store: Chroma keeps vectors, but llama-index keeps no docstore beside a Chroma
index, so chunk text and metadata live here too (keyword-only retrieval must work when the vector
side is down).

Token lists are stored per chunk in SQLite (``keyword_rows``, the source of truth), so adding or
deleting a document re-tokenizes only that document; the matrices are then re-assembled from the
stored tokens (a sparse build, ~1 s per 100k chunks) and saved atomically, checked by content on load
(``bm25_files``).
Queries load nothing: the index stays in memory and is swapped after each write. Another instance
over the same folder (another store or process) notices a save by the identity of the ``CURRENT``
file (one ``stat`` per query) and loads it.

Two matrices are kept, over tokens and over adjacent token pairs (``bm25_files.build``). A query's
score is ``bm25(tokens) + phrase_weight * bm25(pairs)``: shared phrases are strong evidence that plain
bag-of-words BM25 throws away (on SQuAD dev it lifts MRR@10 of the hybrid pipeline from 0.868 to
0.878; see README).

BM25's term-frequency saturation ``k1`` is 0.5, not bm25s' 1.5 (``BM25_PARAMS``). Chosen on tuning
splits with the default hybrid pipeline (docs/retrieval-protocol.md): a lower k1 ranked better fused
on SciFact train and the tune halves of SQuAD and CMRC2018; b 0.5-0.9 made no difference. The scores
are baked into the saved matrices, so an index saved with other parameters is rebuilt from its stored
tokens when opened; so is one whose rows an older tokenizer made, after they are re-tokenized
(``retokenize_if_stale``, which the store runs under the write lock).

Documents that ``hidden`` names (the store passes every registry row that is not completed) are never
returned by ``search``, so a half-written or half-deleted document stays out of retrieval.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import bm25s
import numpy as np

from rag.documents import Chunk
from rag.index import bm25_files, token_counts
from rag.index.bm25_files import token_pairs
from rag.index.failpoints import reached
from rag.index.keyword_rows import KeywordRows
from rag.text.table_text import table_period_words
from rag.text.tokenizer import tokenize

logger = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG to stderr

BM25_PARAMS = {"k1": 0.5, "b": 0.75}


@dataclass(frozen=True)
class KeywordHit:
    chunk_id: str
    doc_id: str
    score: float


@dataclass(frozen=True)
class _View:
    """One consistent in-memory index: matrices, their chunk order, and where they came from."""

    retriever: bm25s.BM25 | None = None
    phrases: bm25s.BM25 | None = None
    chunk_ids: list[str] = field(default_factory=list)
    doc_ids: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    digest: str = ""
    identity: tuple[int, int, int] | None = None  # of the CURRENT file this view was loaded from or saved as


class KeywordIndex:
    """BM25 over every stored chunk, with optional restriction to some documents.

    Args:
        folder: Where the tokens and the saved matrices live.
        tokenizer: Text to BM25 tokens. Defaults to ``rag.text.tokenizer.tokenize``.
        hidden: Documents ``search`` must skip (called per query; cache inside). Defaults to none.
        may_save: Whether this instance may write on open (re-tokenize rows an older tokenizer made, save
            rebuilt matrices); the store allows it only while it holds the library's write lock.
            Defaults to always.
    """

    def __init__(self, folder: Path, *, tokenizer: Callable[[str], list[str]] = tokenize,
                 hidden: Callable[[], frozenset[str]] | None = None,
                 may_save: Callable[[], bool] | None = None) -> None:
        self._folder = folder
        self._folder.mkdir(parents=True, exist_ok=True)
        self._tokenize = tokenizer
        self._hidden = hidden or frozenset
        self._may_save = may_save or (lambda: True)
        self._lock = threading.RLock()
        self._rows_db = KeywordRows(folder / "tokens.sqlite3")
        self._view = _View()
        self._seen: tuple[int, int, int] | None = None
        self._mask: tuple[tuple[int, frozenset[str]], np.ndarray] | None = None
        self.generation = 0  # changes whenever the in-memory index does (keys caches)
        if self._may_save() and tokenizer is tokenize:
            self._rows_db.retokenize(tokenize, keyword_text)
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
            self._rows_db.replace(documents, rows)
            reached("bm25.tokens_committed")
            self._rebuild(save=True)

    def delete(self, doc_id: str) -> int:
        with self._lock:
            removed = self._rows_db.delete(doc_id)
            if removed:
                reached("bm25.tokens_committed")
                self._rebuild(save=True)
            return removed

    def save_if_stale(self) -> bool:
        """Rebuild and save if the in-memory or the saved matrices were not built from the current token
        rows (a writer died between committing tokens and saving); the caller holds the library's write
        lock. Returns whether it saved."""
        with self._lock:
            self.refresh()
            digest = self._rows_digest()
            if self._view.digest == digest and bm25_files.saved_digest(self._folder) == digest:
                return False
            self._rebuild(save=True)
            return True

    def retokenize_if_stale(self) -> bool:
        """Re-tokenize rows an older tokenizer made, then rebuild and save; the caller holds the
        library's write lock. Returns whether it did."""
        if self._tokenize is not tokenize:  # a custom tokenizer has no version to compare
            return False
        with self._lock:
            if not self._rows_db.retokenize(tokenize, keyword_text):
                return False
            self._rebuild(save=True)
            return True

    # -- reads --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._current().chunk_ids)

    def doc_ids(self) -> set[str]:
        return set(self._current().doc_ids.tolist())

    def get(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        return self._rows_db.get(chunk_ids)

    def idf(self, tokens: Iterable[str]) -> dict[str, float]:
        """``log(1 + N / (1 + df))`` per token, chunks as documents (``token_counts.idf``)."""
        return token_counts.idf(self._current().retriever, tokens)

    def main_holder(self, token: str) -> str:
        """The document holding more than half of the chunks that contain ``token``, or "" when none does."""
        view = self._current()
        return token_counts.main_holder(view.retriever, view.doc_ids, token)

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        return self._rows_db.chunks_of(doc_id)

    def chunk_ids_by_doc(self) -> dict[str, set[str]]:
        """Every stored chunk id per document, from the token rows (for consistency checks)."""
        found: dict[str, set[str]] = {}
        for chunk_id, doc_id, _tokens in self._rows():
            found.setdefault(doc_id, set()).add(chunk_id)
        return found

    def search(self, query: str, k: int, *, doc_ids: Iterable[str] | None = None,
               phrase_weight: float = 0.5) -> list[KeywordHit]:
        """Top-k chunks by BM25 (plus ``phrase_weight`` x BM25 over token pairs).

        Chunks that share no token with the query, and chunks of hidden documents, are never returned.
        """
        view = self._current()
        retriever, phrases = view.retriever, view.phrases
        if retriever is None or not view.chunk_ids:
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
            scores = scores * np.isin(view.doc_ids, list(doc_ids))
        visible = self._visible(view)
        if visible is not None:
            scores = scores * visible
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        return [KeywordHit(view.chunk_ids[i], str(view.doc_ids[i]), float(scores[i])) for i in order]

    def refresh(self) -> bool:
        """Load the index another instance saved, if ``CURRENT`` changed since this one looked; returns
        whether the in-memory index changed. A saved index that does not match the token rows (its
        writer is still at work, or died) is skipped: this instance keeps its last good index."""
        identity = bm25_files.current_identity(self._folder)
        if identity == self._seen:
            return False
        with self._lock:
            if identity == self._seen:
                return False
            self._seen = identity
            try:
                saved = bm25_files.load(self._folder, BM25_PARAMS)
            except bm25_files.InvalidIndex as exc:
                logger.debug("not reloading the BM25 index: %s", exc)
                return False
            if saved.digest != self._rows_digest():
                logger.debug("not reloading the BM25 index %s: built from other token rows", saved.name)
                return False
            self._set(_View(saved.retriever, saved.phrases, saved.chunk_ids,
                            np.array(saved.doc_ids, dtype=object), saved.digest, identity))
            return True

    # -- internals ----------------------------------------------------------------------------

    def _current(self) -> _View:
        self.refresh()
        return self._view

    def _set(self, view: _View) -> None:
        self._view = view
        self.generation += 1

    def _visible(self, view: _View) -> np.ndarray | None:
        hidden = self._hidden()
        if not hidden:
            return None
        key = (self.generation, hidden)
        mask = self._mask
        if mask is None or mask[0] != key:
            mask = (key, (~np.isin(view.doc_ids, list(hidden))).astype(np.float32))
            self._mask = mask
        return mask[1]

    def _rows(self) -> list[tuple[str, str, str]]:
        return self._rows_db.rows()

    def _rows_digest(self) -> str:
        return bm25_files.rows_digest(self._rows())

    def _rebuild(self, *, save: bool) -> None:
        with self._lock:
            version = self._data_version()
            rows = self._rows()
            digest = bm25_files.rows_digest(rows)
            chunk_ids = [r[0] for r in rows]
            doc_ids = [r[1] for r in rows]
            retriever, phrases = bm25_files.build([json.loads(r[2]) for r in rows], BM25_PARAMS)
            self._set(_View(retriever, phrases, chunk_ids, np.array(doc_ids, dtype=object), digest, None))
            if not save:
                return
            name = bm25_files.save(self._folder, retriever, phrases, chunk_ids, doc_ids, digest, BM25_PARAMS,
                                   still_current=lambda: self._data_version() == version)
            if name is not None:
                identity = bm25_files.current_identity(self._folder)
                self._seen = identity
                self._set(_View(retriever, phrases, chunk_ids, self._view.doc_ids, digest, identity))

    def _data_version(self) -> int:
        return self._rows_db.data_version()

    def _load_or_build(self) -> None:
        try:
            saved = bm25_files.load(self._folder, BM25_PARAMS)
            if saved.digest == self._rows_digest():
                identity = bm25_files.current_identity(self._folder)
                self._seen = identity
                self._set(_View(saved.retriever, saved.phrases, saved.chunk_ids,
                                np.array(saved.doc_ids, dtype=object), saved.digest, identity))
                return
            logger.info("the saved BM25 index was built from other token rows; rebuilding it")
        except bm25_files.InvalidIndex as exc:
            if self._rows_db.any():
                logger.info("BM25 index not usable (%s); rebuilding from stored tokens", exc)
        self._seen = bm25_files.current_identity(self._folder)
        self._rebuild(save=self._may_save())

    def close(self) -> None:
        with self._lock:
            self._rows_db.close()


# Chunk fields BM25 indexes before the text: section titles carry key terms, a table's context names its document.
# Fusion reads the same fields back from a hit's metadata (rag.retrieval.fusion).
KEYWORD_FIELDS = ("heading_path", "context")


def keyword_text(chunk: Chunk) -> str:
    """What BM25 indexes: the ``KEYWORD_FIELDS`` of ``chunk``, its text, and a table's period names."""
    periods = table_period_words(chunk.text) if chunk.kind == "table" else ""  # "Q1 2022" (rag.text.table_text)
    return " ".join(part for part in (*(getattr(chunk, name) for name in KEYWORD_FIELDS), chunk.text, periods) if part)
