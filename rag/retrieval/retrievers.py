"""llama-index retrievers over our store: dense (Chroma, one space per embedder) and BM25.

Both return ``NodeWithScore`` built from stored chunks, so every later stage sees the same node
shape whichever side found it. They are built once per configuration; the request's document filter
and reflection's widening come with each ``SearchQuery`` and are applied inside the stores, not after.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Sequence

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.documents import Chunk
from rag.index.keywords import KeywordIndex
from rag.index.vectors import VectorHit, VectorStore
from rag.models.embedding_router import EmbedderRouter, model_id_of
from rag.retrieval.nodes import annotate_node
from rag.retrieval.query import SearchQuery, as_search_query, expanded, report
from rag.text.language import detect_language


def chunk_node(chunk: Chunk, score: float) -> NodeWithScore:
    return NodeWithScore(node=chunk.to_node(), score=score)


class VectorRetriever(BaseRetriever):
    """Cosine search in every embedding space that holds vectors, merged into one list.

    Scores from different models are not comparable (e5 similarities sit around 0.8 even for
    unrelated text): with one space searched each node keeps its cosine as its score; with several,
    a hit is scored by how far its cosine stands above the mean of its own space's candidates, and
    the hits are merged by that (ties in rank-by-rank order), so one model's uniformly high noise
    cannot outrank a clear match in another space. The cosine itself is kept as
    ``metadata["cosine"]``, which relevance (and its threshold) reads.
    A Chinese query skips spaces whose model cannot read Chinese. What was not searched and why
    (vectors of a model no longer configured, a configured model that stands in for a missing one)
    goes into the running stage of the query's trace, and so do the documents in the query's scope that
    are keyword-searchable while their vectors are still being stored (``details["keyword_only"]``):
    vector search simply sees fewer of their chunks.

    English chunks also have vectors of the second English embedder (``EmbedderRouter.second_english``),
    which fusion reads as a list of its own: with ``role="second"`` this retriever returns the English
    chunks of that model's space for an English question (nothing for a Chinese one), and with the
    default ``role="language"`` it leaves them out of that space's hits, so the two lists never hold the
    same vectors. Both roles share one search per space and query (``SearchQuery.space_hits``): the
    space is searched unfiltered and split by the chunks' language afterwards, because a Chroma
    metadata filter costs 10-30 ms per search at 10k chunks and the split costs nothing. Only when the
    other language's chunks crowded a list's own out (a library holding both) is the space searched
    again, filtered to them.

    Args:
        vectors: The Chroma collections.
        router: The configured embedders (and their query-vector cache).
        top_k: Candidates per search (doubled per reflection widening).
        keyword_only: ``doc_ids or None -> [KeywordOnly]`` (``DocumentStore.keyword_only``). Defaults to none.
        role: ``"language"`` (the question's language's spaces) or ``"second"`` (the second English
            embedder's space, English chunks only). Defaults to ``"language"``.
    """

    def __init__(self, vectors: VectorStore, router: EmbedderRouter, *, top_k: int,
                 keyword_only: Callable[[Sequence[str] | None], Sequence[Any]] | None = None,
                 role: Literal["language", "second"] = "language") -> None:
        super().__init__()
        if role not in ("language", "second"):
            raise ValueError(f"role must be 'language' or 'second', got {role!r}")
        self._vectors = vectors
        self._router = router
        self._top_k = top_k
        self._keyword_only = keyword_only
        self.role = role

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = as_search_query(query_bundle)
        if self.role == "second":
            return self._second(query)
        self._note_keyword_only(query)
        top_k = expanded(self._top_k, query.expansion, doubling=True)
        language = detect_language(query.query_str)
        spaces = self._spaces(language)
        if language == "zh" and not spaces and self._vectors.model_ids():
            report(query, fallback="the question is in Chinese, but no document holds Chinese text (nothing is "
                                   "stored in the Chinese embedding space), and the other spaces cannot read Chinese")
        second = self._second_model_id()
        self._router.query_vectors_at_once(spaces, query.embedding_strs)
        per_space: list[list[VectorHit]] = []
        for model_id in spaces:
            hits = self._search(query, model_id, top_k)
            if hits is None:
                continue
            if model_id == second:  # its English chunks are the second list's
                kept = [hit for hit in hits if hit.metadata.get("language") == "zh"]
                if language == "zh" and len(kept) < top_k <= len(hits):
                    # English chunks crowded the Chinese question's own chunks out: search those alone
                    kept = self._search(query, model_id, top_k, language="zh") or []
                if language == "zh" and not kept and query.doc_ids is None:
                    report(query, fallback="the question is in Chinese, but no document holds Chinese text")
                hits = kept
            per_space.append(hits)
        return _merge_spaces(per_space, top_k)

    def _second(self, query: SearchQuery) -> list[NodeWithScore]:
        model_id = self._second_model_id()
        if model_id is None:
            return []
        if detect_language(query.query_str) == "zh":
            report(query, note="a Chinese question: the second English embedder is not searched")
            return []
        if model_id not in self._vectors.model_ids():
            report(query, note=f"no chunk has vectors of the second English embedder ({model_id}) yet")
            return []
        top_k = expanded(self._top_k, query.expansion, doubling=True)
        found = self._search(query, model_id, top_k) or []
        hits = [hit for hit in found if hit.metadata.get("language") != "zh"]
        if len(hits) < top_k <= len(found):
            # Chinese chunks (e5 scores any of them ~0.8) crowded English ones out: search those alone
            hits = self._search(query, model_id, top_k, not_language="zh") or []
        return [chunk_node(Chunk.from_metadata(hit.text, hit.metadata), hit.score) for hit in hits]

    def _second_model_id(self) -> str | None:
        embedder = self._router.second_english()
        return model_id_of(embedder) if embedder is not None else None

    def _search(self, query: SearchQuery, model_id: str, top_k: int, **language: str) -> list[VectorHit] | None:
        """``model_id``'s space searched for ``query`` (once per query, whichever role asks first), or None
        when no configured model makes its vectors (said in the trace). ``language`` / ``not_language``
        filter by the chunks' language (10-30 ms more at 10k chunks: only when an unfiltered search was
        crowded by the other language's chunks)."""
        key = (model_id, top_k, tuple(query.embedding_strs), tuple(sorted(language.items())))
        if key in query.space_hits:
            return query.space_hits[key]
        embedder = self._router.for_model_id(model_id)
        if embedder is None:
            report(query, fallback=f"vectors stored by {model_id} were not searched: no configured embedding "
                                   f"model makes them (re-index those documents, or configure that model again)")
            return None
        if getattr(embedder, "fallback_reason", ""):
            report(query, fallback=embedder.fallback_reason)
        vectors = [self._router.query_vector(model_id, text) for text in query.embedding_strs]
        query_vector = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
        hits = self._vectors.query(model_id, query_vector, top_k, doc_ids=query.doc_ids, **language)
        query.space_hits[key] = hits
        return hits

    def _note_keyword_only(self, query: Any) -> None:
        if self._keyword_only is None:
            return
        partial = list(self._keyword_only(query.doc_ids))
        if not partial:
            return
        query.trace.details["keyword_only"] = [
            {"doc_id": p.doc_id, "file_name": p.file_name, "embedded": p.embedded, "total": p.total,
             "error": p.error} for p in partial]
        report(query, note="keyword-only for now (vectors still being stored): "
                           + "; ".join(p.describe() for p in partial))

    def _spaces(self, language: str) -> list[str]:
        stored = self._vectors.model_ids()
        if language == "zh":
            chinese = model_id_of(self._router.for_language("zh"))
            return [m for m in stored if m == chinese]
        return stored


def _merge_spaces(per_space: list[list[VectorHit]], top_k: int) -> list[NodeWithScore]:
    """One list from each space's hits: cosines as they are from one space, margins from several."""
    scores = [[hit.score for hit in hits] for hits in per_space]
    if sum(1 for hits in per_space if hits) > 1:
        # one list's best is not another's: e5 scores an English question ~0.8 against any Chinese
        # chunk, MiniLM its own answer ~0.6, so raw cosines would put the other language's noise
        # first; a match shows as a cosine above its space's background, noise does not
        scores = [_margins(space) for space in scores]
    merged: list[tuple[float, int, NodeWithScore]] = []
    seen: set[str] = set()
    for rank in range(max((len(hits) for hits in per_space), default=0)):
        for space, hits in enumerate(per_space):
            if rank < len(hits) and hits[rank].chunk_id not in seen:
                seen.add(hits[rank].chunk_id)
                hit = hits[rank]
                node = chunk_node(Chunk.from_metadata(hit.text, hit.metadata), scores[space][rank])
                if scores[space][rank] != hit.score:  # the cosine stays what relevance thresholds read
                    node = annotate_node(node, cosine=hit.score)
                merged.append((scores[space][rank], len(merged), node))
    if len(scores) > 1:
        merged.sort(key=lambda entry: (-entry[0], entry[1]))  # ties keep the rank-by-rank interleaving
    return [node for _, _, node in merged[:top_k]]


def _margins(scores: list[float]) -> list[float]:
    """Each cosine minus the mean of its space's candidates (a flat list of noise is all ~0)."""
    if not scores:
        return scores
    background = sum(scores) / len(scores)
    return [score - background for score in scores]


class KeywordRetriever(BaseRetriever):
    """BM25 over the persisted index; hits that share no token with the query are dropped.

    Args:
        keywords: The BM25 index.
        top_k: Candidates per search (doubled per reflection widening).
        phrase_weight: Weight of the adjacent-token-pair index added to plain BM25.
    """

    def __init__(self, keywords: KeywordIndex, *, top_k: int, phrase_weight: float = 0.5) -> None:
        super().__init__()
        self.keywords = keywords
        self._phrase_weight = phrase_weight
        self._top_k = top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = as_search_query(query_bundle)
        top_k = expanded(self._top_k, query.expansion, doubling=True)
        hits = self.keywords.search(query.query_str, top_k, doc_ids=query.doc_ids,
                                     phrase_weight=self._phrase_weight)
        chunks = self.keywords.get([h.chunk_id for h in hits])
        return [chunk_node(chunks[h.chunk_id], h.score) for h in hits if h.chunk_id in chunks]
