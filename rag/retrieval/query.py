"""A search request as llama-index sees it, plus what one request carries beyond the words.

``SearchQuery`` is a ``QueryBundle`` (so every llama-index retriever and postprocessor accepts it)
that also carries the request's document filter, how far reflection has widened the search, and the
request's ``QueryTrace``. Components built once per configuration read these per request from the
query instead of being rebuilt for it, and report into the trace it carries.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.question_kind import is_broad
from rag.retrieval.trace import QueryTrace

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000


class QueryError(ValueError):
    """The query cannot be run as given; the message says why and what to do."""


@dataclass
class SearchQuery(QueryBundle):
    """A ``QueryBundle`` with the request's filter, widening and trace.

    Args:
        doc_ids: Only these documents, or None for all.
        expansion: 0 for a normal search; reflection's n-th widening asks for more candidates
            (``candidate_k * 2**n``), more passages (``top_k * (1 + n)``) and a larger context budget.
        trace: Where the stages of this request are recorded.
        space_hits: Each embedding space's search for this query, kept so that two dense lists drawn
            from one space (``VectorRetriever``'s roles) cost one search.
        broad: Whether the request's question is broad, as the answering engine read it (by its wording, or as
            the user asked for it); None reads it from its wording (``question_is_broad``).
    """

    doc_ids: list[str] | None = None
    expansion: int = 0
    trace: QueryTrace = field(default_factory=QueryTrace)
    space_hits: dict[tuple[Any, ...], list[Any]] = field(default_factory=dict, repr=False, compare=False)
    broad: bool | None = None

    def derive(self, query_str: str, *, expansion: int | None = None, trace: QueryTrace | None = None,
               custom_embedding_strs: list[str] | None = None) -> SearchQuery:
        """Another query for the same request (a rewritten variant, a reflection round)."""
        return SearchQuery(query_str=query_str, custom_embedding_strs=custom_embedding_strs,
                           doc_ids=self.doc_ids, expansion=self.expansion if expansion is None else expansion,
                           trace=self.trace if trace is None else trace, broad=self.broad)


def as_search_query(query: QueryBundle | str | None) -> SearchQuery:
    """Any llama-index query as a ``SearchQuery`` (a plain bundle gets an empty filter and a new trace)."""
    if isinstance(query, SearchQuery):
        return query
    if query is None:
        return SearchQuery(query_str="")
    if isinstance(query, str):
        return SearchQuery(query_str=query, trace=QueryTrace(query=query))
    return SearchQuery(query_str=query.query_str, custom_embedding_strs=query.custom_embedding_strs,
                       embedding=query.embedding, trace=QueryTrace(query=query.query_str))


def question_is_broad(query: QueryBundle | None) -> bool:
    """Whether the request's question is broad: as the engine read it, else by its wording."""
    if isinstance(query, SearchQuery) and query.broad is not None:
        return query.broad
    return is_broad(query.query_str) if query is not None else False


def report(query: QueryBundle | None, *, note: str = "", fallback: str = "") -> None:
    """Record a note or a degradation in the stage of ``query``'s trace that is running now.

    A plain ``QueryBundle`` carries no trace: the message is logged instead.
    """
    stage = query.trace.current if isinstance(query, SearchQuery) else None
    if stage is None:
        if note or fallback:
            logger.info("%s", fallback or note)
        return
    if note:
        stage.note(note)
    if fallback:
        stage.fallback(fallback)


@dataclass
class RetrievalResult:
    """The passages for one question and how every stage got there."""

    query: str
    nodes: list[NodeWithScore]
    trace: QueryTrace
    empty_reason: str = ""  # why ``nodes`` is empty, when it is
    cached: bool = False

    @property
    def details(self) -> dict[str, Any]:
        """Rewrite variants, the HyDE passage and reflection rounds, when those stages ran."""
        return self.trace.details


def validate_query(query: str | None) -> str:
    """The query with whitespace collapsed; ``QueryError`` when it is empty or too long."""
    if query is None or not str(query).strip():
        raise QueryError("The question is empty: type a question about your documents.")
    query = " ".join(str(query).split())
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"The question is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,}. "
                         "Ask about one thing at a time, or quote a shorter passage.")
    return query


def expanded(value: int, expansion: int, *, doubling: bool = False) -> int:
    """``value`` widened for reflection round ``expansion``: doubled per round, or grown linearly."""
    return value * (2 ** expansion) if doubling else value * (1 + expansion)
