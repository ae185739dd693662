"""A document-level signal: each document's LLM-written metadata as its own searchable entry, which
boosts that document's passages when the query matches it.

``DocumentSignal`` indexes one entry per document (summary, keywords, topics and key phrases from the
registry) with BM25, tokenised like the keyword index (stemmed English, jieba-cut Chinese), and scores
a query against every entry, normalised so the best-matching document gets 1.0. ``DocumentBoost
Postprocessor`` blends that score into the fused passage scores::

    score' = (1 - weight) * minmax(passage score) + weight * document score

It only reorders candidates that retrieval already found; documents without metadata score 0, and a
query that matches no entry leaves the order untouched. It is not part of the app's retrieval chain:
measured by ``python -m rag.lab bench docsignal``, the weight chosen on SQuAD's tuning half did not
help on its test half (docs/documents.md, "Document metadata"), so it is no default. Wiring it would
mean building ``DocumentSignal.from_records(store.documents())`` when the store's version changes and
running the postprocessor right after fusion, before the similarity threshold and top-k.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import bm25s
import numpy as np
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import Field, PrivateAttr

from rag.documents import DocumentRecord
from rag.retrieval.nodes import annotate_node, best_first, doc_id_of
from rag.text.tokenizer import tokenize

logger = logging.getLogger(__name__)

Tokenizer = Callable[[str], list[str]]


@dataclass(frozen=True)
class DocumentEntry:
    """The searchable text that stands for one document."""

    doc_id: str
    text: str


def entries_from_records(records: Iterable[DocumentRecord]) -> list[DocumentEntry]:
    """One entry per completed document with metadata: summary, keywords, topics and key phrases."""
    entries = []
    for record in records:
        text = "\n".join(part for part in (record.summary, record.keywords, record.topics, record.key_phrases) if part)
        if record.status == "completed" and text.strip():
            entries.append(DocumentEntry(record.doc_id, text))
    return entries


class DocumentSignal:
    """BM25 over one metadata entry per document.

    Args:
        entries: The documents' entries; documents without one simply score 0.
        tokenizer: Text to tokens. Defaults to the keyword index's tokenizer.
    """

    def __init__(self, entries: Sequence[DocumentEntry], *, tokenizer: Tokenizer = tokenize) -> None:
        self._tokenize = tokenizer
        tokens = [tokenizer(entry.text) for entry in entries]
        kept = [(entry, words) for entry, words in zip(entries, tokens) if words]
        self._doc_ids = [entry.doc_id for entry, _ in kept]
        self._index: bm25s.BM25 | None = None
        if kept:
            self._index = bm25s.BM25(k1=1.2, b=0.75)
            self._index.index([words for _, words in kept], show_progress=False)

    @classmethod
    def from_records(cls, records: Iterable[DocumentRecord], **kwargs) -> DocumentSignal:
        return cls(entries_from_records(records), **kwargs)

    def __len__(self) -> int:
        return len(self._doc_ids)

    def scores(self, query: str) -> dict[str, float]:
        """Document id -> score in (0, 1] for every entry sharing a token with ``query`` (best = 1)."""
        if self._index is None:
            return {}
        words = [word for word in self._tokenize(query) if word in self._index.vocab_dict]
        if not words:
            return {}
        raw = np.asarray(self._index.get_scores(words), dtype=np.float64)
        best = float(raw.max())
        if best <= 0:
            return {}
        return {doc_id: float(score / best) for doc_id, score in zip(self._doc_ids, raw) if score > 0}


class DocumentBoostPostprocessor(BaseNodePostprocessor):
    """Re-rank candidates by blending in how well their document's metadata matches the query.

    Args:
        signal: The documents' entries (``DocumentSignal``), built once per store version.
        weight: Share of the document score in the blended score, 0 (off) to 1. Defaults to 0.2.
    """

    weight: float = Field(default=0.2, ge=0.0, le=1.0)
    _signal: DocumentSignal = PrivateAttr()

    def __init__(self, signal: DocumentSignal, weight: float = 0.2) -> None:
        super().__init__(weight=weight)
        self._signal = signal

    @classmethod
    def class_name(cls) -> str:
        return "DocumentBoostPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if not nodes or query_bundle is None or self.weight == 0:
            return nodes
        documents = self._signal.scores(query_bundle.query_str)
        if not documents:
            return nodes  # no document's metadata matches: keep retrieval's order
        scores = np.asarray([node.score or 0.0 for node in nodes], dtype=np.float64)
        spread = scores.max() - scores.min()
        normalised = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
        boosted = []
        for node, base in zip(nodes, normalised):
            document = documents.get(doc_id_of(node), 0.0)
            blended = (1 - self.weight) * float(base) + self.weight * document
            boosted.append(annotate_node(node, score=blended, document_signal=round(document, 4)))
        return best_first(boosted)
