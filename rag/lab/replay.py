"""Cached per-query candidate lists for choosing retrieval defaults without the engine.

Choosing fusion weights, BM25 parameters or an embedder means scoring many settings on the same
questions. Each question's dense list is computed once per embedder (corpus and query vectors are
cached as ``.npy`` files under ``$CITEWISE_HOME/lab``) and its BM25 list once per BM25 setting;
every fusion setting is then a cheap replay over those lists (``rag.lab.tune_fusion``).

Dense search here is exact (a dot product over all normalised vectors), where the app uses Chroma's
HNSW index; on corpora of a few thousand passages the two rank alike. BM25 is the app's own
``KeywordIndex`` scoring (tokens plus ``phrase_weight`` x token pairs) rebuilt with the asked k1/b.
"""

from __future__ import annotations

import hashlib
import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import bm25s
import numpy as np
from scipy import sparse

from rag.config import DEFAULT_HOME
from rag.evaluation.datasets import EvalDataset, document_text
from rag.index.keywords import token_pairs
from rag.text.tokenizer import tokenize

logger = logging.getLogger(__name__)

Hits = list[tuple[str, float]]  # (doc_id, score), best first
LAB_HOME = DEFAULT_HOME / "lab"


@dataclass(frozen=True)
class BM25Setting:
    """One BM25 configuration to replay.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation.
        phrase_weight: Weight of the token-pair index added to plain BM25.
    """

    k1: float = 0.7
    b: float = 0.75
    phrase_weight: float = 0.5


def _cache_file(kind: str, dataset_key: str, spec: str, texts: list[str]) -> Path:
    digest = hashlib.sha256("\x00".join([spec, *texts]).encode("utf-8")).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in f"{dataset_key}-{spec}")
    return LAB_HOME / f"{safe}-{kind}-{digest}.npy"


def cached_vectors(kind: str, dataset_key: str, spec: str, texts: list[str],
                   encode: Callable[[list[str]], list[list[float]]], *, batch: int = 64) -> np.ndarray:
    """Vectors of ``texts`` by ``encode``, read from or written to the lab cache.

    Args:
        kind: ``"corpus"`` or ``"queries"`` (part of the cache name).
        dataset_key: The dataset's label.
        spec: The embedder spec (part of the cache name and key).
        texts: What to embed; the cache key hashes them, so edited text is re-embedded.
        encode: Embeds a batch of texts.
        batch: Texts per call (progress is printed after each). Defaults to 64.
    """
    path = _cache_file(kind, dataset_key, spec, texts)
    if path.exists():
        return np.load(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = []
    for start in range(0, len(texts), batch):
        parts.append(np.asarray(encode(texts[start:start + batch]), dtype=np.float32))
        print(f"\r  {spec}: embedded {min(start + batch, len(texts))}/{len(texts)} {kind}", end="", file=sys.stderr)
    print(file=sys.stderr)
    vectors = np.concatenate(parts) if parts else np.zeros((0, 1), dtype=np.float32)
    np.save(path, vectors)
    return vectors


@dataclass(frozen=True)
class DenseVectors:
    """One dataset's cached corpus and question vectors under one embedder (rows normalised).

    Args:
        doc_ids: Corpus ids, in the order of ``corpus``'s rows.
        corpus: One row per passage.
        qids: Question ids, in the order of ``queries``'s rows.
        queries: One row per question.
    """

    doc_ids: list[str]
    corpus: np.ndarray
    qids: list[str]
    queries: np.ndarray


def dense_vectors(dataset: EvalDataset, spec: str, embedder) -> DenseVectors:
    """The corpus and question vectors of ``dataset`` under ``embedder``, from or into the lab cache."""
    doc_ids = list(dataset.corpus)
    corpus = cached_vectors("corpus", dataset.name, spec, [document_text(dataset.corpus[d]) for d in doc_ids],
                            lambda texts: embedder.get_text_embedding_batch(texts))
    qids = list(dataset.queries)
    # the lambdas defer reaching the embedder until a cache miss, so a lazily built model is never loaded
    queries = cached_vectors("queries", dataset.name, spec, [dataset.queries[q] for q in qids],
                             lambda texts: embedder.get_query_embedding_batch(texts))
    return DenseVectors(doc_ids, corpus, qids, queries)


def nearest(queries: np.ndarray, corpus: np.ndarray, doc_ids: list[str], depth: int = 100) -> list[Hits]:
    """Per row of ``queries``, the ``depth`` most similar corpus rows by dot product (best first)."""
    lists: list[Hits] = []
    for start in range(0, len(queries), 256):
        for row in queries[start:start + 256] @ corpus.T:
            top = np.argpartition(-row, min(depth, row.size - 1))[:depth]
            top = top[np.argsort(-row[top], kind="stable")]
            lists.append([(doc_ids[i], float(row[i])) for i in top])
    return lists


def dense_lists(dataset: EvalDataset, spec: str, embedder, *, depth: int = 100) -> dict[str, Hits]:
    """qid -> the ``depth`` nearest documents by cosine similarity under ``embedder``."""
    vectors = dense_vectors(dataset, spec, embedder)
    return dict(zip(vectors.qids, nearest(vectors.queries, vectors.corpus, vectors.doc_ids, depth)))


class BM25Replay:
    """The app's BM25 scoring over one dataset's corpus, tokenized once, re-indexed per setting."""

    def __init__(self, dataset: EvalDataset, tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self.dataset = dataset
        self._tokenize = tokenizer
        self.doc_ids = list(dataset.corpus)
        self.tokens = [tokenizer(document_text(dataset.corpus[d])) for d in self.doc_ids]
        self.query_tokens = {q: tokenizer(text) for q, text in dataset.queries.items()}
        self._indexes: dict[tuple[float, float], tuple[bm25s.BM25, bm25s.BM25]] = {}
        self._positions = {doc_id: i for i, doc_id in enumerate(self.doc_ids)}
        self._idf: dict[str, float] | None = None
        self._matrices: dict[tuple[float, float], sparse.csr_matrix] = {}

    def _index(self, k1: float, b: float) -> tuple[bm25s.BM25, bm25s.BM25]:
        if (k1, b) not in self._indexes:
            words = bm25s.BM25(k1=k1, b=b)
            words.index([t or [""] for t in self.tokens], show_progress=False)
            pairs = bm25s.BM25(k1=k1, b=b)
            pairs.index([token_pairs(t) or [""] for t in self.tokens], show_progress=False)
            self._indexes[(k1, b)] = (words, pairs)
        return self._indexes[(k1, b)]

    def lists(self, setting: BM25Setting, *, depth: int = 100) -> dict[str, Hits]:
        """qid -> the top ``depth`` documents with a score > 0, as ``KeywordIndex.search`` ranks them."""
        return {qid: self.top(self.scores(tokens, setting), depth) for qid, tokens in self.query_tokens.items()}

    def scores(self, tokens: list[str], setting: BM25Setting, extra: dict[str, float] | None = None) -> np.ndarray:
        """Every document's score for ``tokens``, as ``KeywordIndex.search`` scores them, plus weighted terms.

        Args:
            tokens: The question's tokens (a repeated token counts again, as in the app).
            setting: k1 / b / phrase weight.
            extra: token -> weight: each adds ``weight`` x its one-term BM25 score (query expansion);
                tokens the corpus lacks are ignored.
        """
        words, pairs = self._index(setting.k1, setting.b)
        ids = [words.vocab_dict[t] for t in tokens if t in words.vocab_dict]
        scores = words.get_scores_from_ids(ids) if ids else np.zeros(len(self.doc_ids), dtype=np.float32)
        pair_ids = [pairs.vocab_dict[p] for p in token_pairs(tokens) if p in pairs.vocab_dict]
        if setting.phrase_weight > 0 and pair_ids:
            scores = scores + setting.phrase_weight * pairs.get_scores_from_ids(pair_ids)
        known = {words.vocab_dict[t]: w for t, w in (extra or {}).items() if t in words.vocab_dict}
        if known:
            # one row of the token x document score matrix per extra term, summed with its weight
            matrix = self._matrix(setting.k1, setting.b)
            rows = list(known)
            scores = scores + matrix[rows].T @ np.asarray([known[r] for r in rows], dtype=np.float32)
        return scores

    def top(self, scores: np.ndarray, depth: int = 100) -> Hits:
        """The ``depth`` best documents of ``scores`` with a score > 0, best first."""
        hits = np.flatnonzero(scores > 0)
        if hits.size > depth:
            hits = hits[np.argpartition(-scores[hits], depth - 1)[:depth]]
        hits = hits[np.argsort(-scores[hits], kind="stable")]
        return [(self.doc_ids[i], float(scores[i])) for i in hits]

    def doc_tokens(self, doc_id: str) -> list[str]:
        """The tokens of one corpus document."""
        return self.tokens[self._positions[doc_id]]

    def _matrix(self, k1: float, b: float) -> sparse.csr_matrix:
        if (k1, b) not in self._matrices:
            words, _ = self._index(k1, b)
            s = words.scores
            self._matrices[(k1, b)] = sparse.csr_matrix((s["data"], s["indices"], s["indptr"]),
                                                        shape=(len(s["indptr"]) - 1, s["num_docs"]))
        return self._matrices[(k1, b)]

    def idf(self) -> dict[str, float]:
        """``log(1 + N / (1 + df))`` per corpus token, as ``KeywordIndex.idf`` weighs them."""
        if self._idf is None:
            df: dict[str, int] = {}
            for tokens in self.tokens:
                for token in set(tokens):
                    df[token] = df.get(token, 0) + 1
            total = len(self.tokens)
            self._idf = {token: math.log1p(total / (1 + count)) for token, count in df.items()}
        return self._idf

    def coverage(self, qid: str, doc_id: str) -> float:
        """IDF-weighted share of the question's distinct tokens that ``doc_id`` holds (0..1)."""
        idf, total = self.idf(), len(self.tokens)
        tokens = set(self.query_tokens[qid])
        weights = {t: idf.get(t, math.log1p(total)) for t in tokens}
        held = set(self.tokens[self._positions[doc_id]])
        whole = sum(weights.values())
        return sum(w for t, w in weights.items() if t in held) / whole if whole else 0.0

