"""What the BM25 token matrix says about single tokens: how rare each is (``idf``), and which document holds most
of the chunks that contain it (``main_holder``).

bm25s stores the matrix column by column (compressed sparse columns): a token's column pointers count the chunks
that contain it, and its row indices say which chunks those are.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np


def idf(retriever: Any, tokens: Iterable[str]) -> dict[str, float]:
    """``log(1 + N / (1 + df))`` per token, chunks as documents; a token no chunk has gets the highest weight
    (df 0), and every token weighs 1.0 in an empty index (``retriever`` None)."""
    if retriever is None:
        return {token: 1.0 for token in tokens}
    pointers = retriever.scores["indptr"]
    total = int(retriever.scores["num_docs"])
    weights: dict[str, float] = {}
    for token in tokens:
        column = retriever.vocab_dict.get(token)
        df = 0 if column is None else int(pointers[column + 1] - pointers[column])
        weights[token] = float(np.log1p(total / (1 + df)))
    return weights


def main_holder(retriever: Any, doc_ids: np.ndarray, token: str) -> str:
    """The document (``doc_ids``: each matrix row's) holding more than half of the chunks that contain ``token``,
    or "" when none does."""
    column = None if retriever is None else retriever.vocab_dict.get(token)
    if column is None:
        return ""
    pointers, rows = retriever.scores["indptr"], retriever.scores["indices"]
    holders, counts = np.unique(doc_ids[rows[pointers[column]:pointers[column + 1]]], return_counts=True)
    if not len(counts):
        return ""
    best = int(np.argmax(counts))
    return str(holders[best]) if 2 * counts[best] > counts.sum() else ""
