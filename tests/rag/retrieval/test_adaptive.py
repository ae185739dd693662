"""Query-adaptive fusion: weak keyword evidence moves weight to the dense side, for that query only."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.adaptive import COVERAGE_BELOW, adapt_weights, lexical_coverage
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.trace import QueryTrace
from rag.retrieval.query import SearchQuery
from tests.rag.retrieval.test_fusion import StaticRetriever


def _node(node_id: str, text: str, score: float) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id, text=text), score=score)


def test_coverage_weighs_rare_terms_more() -> None:
    idf = lambda terms: {t: {"ibuprofen": 3.0, "dose": 1.0, "adult": 1.0}.get(t, 1.0) for t in terms}  # noqa: E731
    query = "maximum ibuprofen dose for adults"  # tokens: maximum, ibuprofen, dose, adult

    assert lexical_coverage(query, "The ibuprofen leaflet.", idf) == pytest.approx(3 / 6)
    assert lexical_coverage(query, "The ibuprofen leaflet.") == pytest.approx(1 / 4)  # no IDF: equal weights
    assert lexical_coverage(query, "The maximum adult dose of ibuprofen.", idf) == 1.0
    assert lexical_coverage("the of and", "anything") is None  # stop words only: no search terms


def test_weights_move_to_the_dense_side_only_below_the_threshold() -> None:
    base = {"vector": 0.4, "bm25": 0.6}

    shifted, note = adapt_weights(base, 0.2, dense_sources=["vector"], keyword_source="bm25")
    unchanged, none = adapt_weights(base, 0.8, dense_sources=["vector"], keyword_source="bm25")

    assert shifted == pytest.approx({"vector": 0.5, "bm25": 0.5}) and "20%" in note
    assert unchanged == pytest.approx(base) and none == ""
    assert adapt_weights({"vector": 0.95, "bm25": 0.05}, 0.0, dense_sources=["vector"],
                         keyword_source="bm25")[0] == pytest.approx({"vector": 1.0, "bm25": 0.0})
    assert adapt_weights(base, None, dense_sources=["vector"], keyword_source="bm25")[0] == pytest.approx(base)


def test_the_shift_is_shared_by_two_dense_lists_in_proportion_and_weights_sum_to_one() -> None:
    three = {"bm25": 1.0, "vector": 0.25, "vector_second": 0.75}  # sums to 2: halved first

    shifted, note = adapt_weights(three, 0.1, dense_sources=["vector", "vector_second"], keyword_source="bm25")
    kept, _ = adapt_weights(three, 0.9, dense_sources=["vector", "vector_second"], keyword_source="bm25")

    assert shifted == pytest.approx({"bm25": 0.4, "vector": 0.125 + 0.025, "vector_second": 0.375 + 0.075})
    assert "vector, vector_second" in note
    assert kept == pytest.approx({"bm25": 0.5, "vector": 0.125, "vector_second": 0.375})
    # dense lists of weight 0 share the shift equally
    even, _ = adapt_weights({"bm25": 1.0, "a": 0.0, "b": 0.0}, 0.1, dense_sources=["a", "b"], keyword_source="bm25")
    assert even == pytest.approx({"bm25": 0.9, "a": 0.05, "b": 0.05})


def _fusion(**kwargs) -> FusionRetriever:
    # the dense side prefers "para"; BM25 prefers "echo", a passage that repeats a few of the query's words
    vector = StaticRetriever([_node("para", "A paraphrase of the answer.", 0.80), _node("echo", "x", 0.59),
                              _node("z", "z", 0.10)])
    bm25 = StaticRetriever([_node("echo", "Which reservoir supplies the town?", 9.0),
                            _node("para", "A paraphrase of the answer.", 7.0), _node("y", "y", 1.0)])
    return FusionRetriever({"vector": vector, "bm25": bm25}, mode="weighted", weights={"vector": 0.4, "bm25": 0.6},
                           **kwargs)


def test_the_fusion_leans_on_vectors_when_the_best_keyword_hit_misses_the_question() -> None:
    weak_query = "where does the city get its drinking water from"  # the top keyword hit holds none of it
    strong_query = "which reservoir supplies the town"  # the top keyword hit holds all of it

    fixed = _fusion()
    adaptive = _fusion(coverage_below=COVERAGE_BELOW)
    trace = QueryTrace(query=weak_query)
    weak = adaptive.retrieve(SearchQuery(query_str=weak_query, trace=trace))

    assert [n.node.node_id for n in fixed.retrieve(weak_query)][:2] == ["echo", "para"]
    assert [n.node.node_id for n in weak][:2] == ["para", "echo"]
    assert any("moved to vector" in note for note in trace.stages[-1].notes)
    assert [n.node.node_id for n in adaptive.retrieve(strong_query)] == [n.node.node_id for n in fixed.retrieve(strong_query)]


def test_from_config_turns_it_on_for_the_weighted_mode() -> None:
    retriever = FusionRetriever.from_config({"vector": StaticRetriever([]), "bm25": StaticRetriever([])},
                                            RetrievalConfig())
    assert retriever.coverage_below == COVERAGE_BELOW and retriever.mode == "weighted"
