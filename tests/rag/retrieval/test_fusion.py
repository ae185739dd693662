from __future__ import annotations

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever, RetrievalError
from rag.retrieval.fusion_scores import carry_max_relevance, normalize_scores, reciprocal_rank_fusion, weighted_score_fusion
from rag.retrieval.nodes import annotate_node
from rag.retrieval.query import SearchQuery
from rag.retrieval.trace import QueryTrace


def _hit(node_id: str, score: float | None) -> NodeWithScore:
    meta = {"chunk_id": node_id, "doc_id": f"doc-{node_id}", "file_name": "f.pdf", "page_start": 1, "page_end": 1}
    return NodeWithScore(node=TextNode(id_=node_id, text=f"text of {node_id}", metadata=meta,
                                       excluded_embed_metadata_keys=list(meta),
                                       excluded_llm_metadata_keys=list(meta)), score=score)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


class StaticRetriever(BaseRetriever):
    """Returns the same hits for every query and records the queries it saw."""

    def __init__(self, hits: list[NodeWithScore]) -> None:
        self.hits = hits
        self.queries: list[str] = []
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        return list(self.hits)


class BrokenRetriever(BaseRetriever):
    def __init__(self) -> None:
        self.calls = 0
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls += 1
        raise ConnectionError("chroma is down")


LIST_A = [_hit("a", 10.0), _hit("b", 5.0), _hit("c", 0.0)]
LIST_B = [_hit("c", 0.9), _hit("a", 0.5), _hit("d", 0.1)]


# --- reciprocal_rank_fusion -------------------------------------------------------------------


def test_rrf_worked_example() -> None:
    fused = reciprocal_rank_fusion([LIST_A, LIST_B], k=60)

    # a: 1/61 + 1/62 = .03252, c: 1/63 + 1/61 = .03227, b: 1/62, d: 1/63
    assert _ids(fused) == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[3].score == pytest.approx(1 / 63)


def test_weighted_rrf_can_favour_one_list() -> None:
    fused = reciprocal_rank_fusion([LIST_A, LIST_B], k=60, weights=[1.0, 3.0])

    # c: 1/63 + 3/61 = .06505 beats a: 1/61 + 3/62 = .06478; d: 3/63 beats b: 1/62
    assert _ids(fused) == ["c", "a", "d", "b"]


def test_rrf_dedupes_within_and_across_lists_and_keeps_first_node() -> None:
    duplicate = [_hit("a", 1.0), _hit("a", 0.5), _hit("b", 0.1)]

    fused = reciprocal_rank_fusion([duplicate, [_hit("b", 3.0)]], k=1)

    assert _ids(fused) == ["b", "a"]  # b: 1/3 + 1/2, a: 1/2 (its second occurrence ignored)
    assert fused[1].node is duplicate[0].node


def test_rrf_ties_break_by_best_rank_then_first_seen() -> None:
    fused = reciprocal_rank_fusion([[_hit("x", 1), _hit("y", 1)], [_hit("z", 1), _hit("w", 1)]])

    assert _ids(fused) == ["x", "z", "y", "w"]


def test_rrf_zero_weight_equals_the_other_list_and_top_n() -> None:
    assert _ids(reciprocal_rank_fusion([LIST_A, LIST_B], weights=[0, 1])) == ["c", "a", "d"]
    assert _ids(reciprocal_rank_fusion([LIST_A, LIST_B], top_n=2)) == ["a", "c"]
    assert reciprocal_rank_fusion([]) == []


@pytest.mark.parametrize("weights", [[1.0], [-1.0, 1.0], [0.0, 0.0]], ids=["count", "negative", "all-zero"])
def test_fusion_rejects_bad_weights(weights: list[float]) -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([LIST_A, LIST_B], weights=weights)
    with pytest.raises(ValueError):
        weighted_score_fusion([LIST_A, LIST_B], weights=weights)


# --- weighted_score_fusion --------------------------------------------------------------------


def test_weighted_score_fusion_worked_example() -> None:
    fused = weighted_score_fusion([LIST_A, LIST_B], weights=[0.5, 0.5])

    # minmax: A -> a 1, b .5, c 0; B -> c 1, a .5, d 0
    assert _ids(fused) == ["a", "c", "b", "d"]
    assert [n.score for n in fused] == pytest.approx([0.75, 0.5, 0.25, 0.0])


@pytest.mark.parametrize("weights,expected", [([1, 0], LIST_A), ([0, 1], LIST_B)], ids=["first", "second"])
def test_weighted_fusion_with_0_1_weights_equals_the_single_list(weights, expected) -> None:
    fused = weighted_score_fusion([LIST_A, LIST_B], weights=weights)

    assert _ids(fused) == _ids(expected)
    assert [n.node for n in fused] == [n.node for n in expected]


def test_normalize_scores_degenerate_lists() -> None:
    assert normalize_scores([3.2]) == [1.0]
    assert normalize_scores([0.4, 0.4]) == [1.0, 1.0]
    assert normalize_scores([0.0, 0.0]) == [0.0, 0.0]
    assert normalize_scores([2.0, None, 1.0]) == [1.0, 0.0, 0.0]
    assert normalize_scores([]) == []


def test_normalize_scores_methods() -> None:
    assert normalize_scores([12.0, 6.0, 0.0], "max") == [1.0, 0.5, 0.0]
    assert normalize_scores([1.3, 0.5, -0.2], "clip") == [1.0, 0.5, 0.0]
    assert normalize_scores([1.0, 2.718281828459045 ** -0.25], "chroma_cosine") == pytest.approx([1.0, 0.75])
    assert normalize_scores([4.0, 2.0], lambda s: [x / 4 for x in s]) == [1.0, 0.5]
    with pytest.raises(ValueError):
        normalize_scores([1.0], "zscore")


def test_weighted_fusion_single_element_list_counts_fully() -> None:
    fused = weighted_score_fusion([[_hit("solo", 0.2)], [_hit("x", 9.0), _hit("solo", 1.0)]])

    assert _ids(fused) == ["solo", "x"]  # solo: 1 + 0, x: 1
    assert fused[0].score == pytest.approx(1.0)


def test_carry_max_relevance_across_variant_lists() -> None:
    first = [annotate_node(_hit("a", 0.03), relevance=0.4), annotate_node(_hit("b", 0.02), relevance=0.9)]
    second = [annotate_node(_hit("a", 0.03), relevance=0.7), _hit("c", 0.01)]
    fused = reciprocal_rank_fusion([first, second])

    carried = carry_max_relevance(fused, [first, second])

    assert _ids(carried) == ["a", "b", "c"]
    assert [n.node.metadata.get("relevance") for n in carried] == [0.7, 0.9, None]
    assert fused[0].node.metadata["relevance"] == 0.4  # the fused input is left alone
    assert [n.score for n in carried] == [n.score for n in fused]


# --- annotate_node -----------------------------------------------------------------------------


def test_annotate_node_copies_and_hides_keys_from_llm_and_embedder() -> None:
    original = _hit("a", 0.5)

    annotated = annotate_node(original, score=0.9, relevance=0.8)

    assert annotated.score == 0.9 and annotated.node.metadata["relevance"] == 0.8
    assert "relevance" not in original.node.metadata
    assert "relevance" not in annotated.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "relevance" not in annotated.node.get_content(metadata_mode=MetadataMode.EMBED)
    assert annotated.node.node_id == "a"


# --- FusionRetriever ---------------------------------------------------------------------------


def test_a_widened_search_asks_for_more_candidates() -> None:
    hits = [_hit(c, 1.0 - i / 10) for i, c in enumerate("abcdef")]
    retriever = FusionRetriever({"vector": StaticRetriever(hits)}, top_k=2)

    normal = retriever.retrieve(SearchQuery(query_str="a question about fusion"))
    widened = retriever.retrieve(SearchQuery(query_str="a question about fusion", expansion=1))

    assert _ids(normal) == ["a", "b"] and _ids(widened) == ["a", "b", "c", "d"]


def _run(retriever: FusionRetriever, query: str | QueryBundle,
         trace: QueryTrace | None = None) -> tuple[list[NodeWithScore], QueryTrace]:
    """Retrieve with a ``SearchQuery`` carrying ``trace`` (a new one by default); return both."""
    bundle = QueryBundle(query) if isinstance(query, str) else query
    trace = trace if trace is not None else QueryTrace(query=bundle.query_str)
    nodes = retriever.retrieve(SearchQuery(query_str=bundle.query_str, custom_embedding_strs=bundle.custom_embedding_strs,
                                           trace=trace))
    return nodes, trace


def _retriever(**kwargs) -> tuple[FusionRetriever, StaticRetriever, StaticRetriever]:
    vector = StaticRetriever([_hit("a", 0.80), _hit("b", 0.60), _hit("c", 0.30)])
    bm25 = StaticRetriever([_hit("c", 12.0), _hit("d", 6.0), _hit("z", 0.0)])
    return FusionRetriever({"vector": vector, "bm25": bm25}, **kwargs), vector, bm25


def test_fusion_retriever_rrf_with_trace() -> None:
    retriever, vector, bm25 = _retriever()

    nodes, trace = _run(retriever, "how are rankings fused together")

    # c: 1/63 + 1/61, a: 1/61; b and d tie at 1/62 and b was seen first (vector runs first)
    assert _ids(nodes) == ["c", "a", "b", "d"]
    assert [s.name for s in trace.stages] == ["vector", "bm25", "fusion"]
    assert [c.chunk_id for c in trace.get("bm25").candidates] == ["c", "d"]  # zero-score z dropped
    assert "dropped 1 hits with score <= 0" in trace.get("bm25").notes
    assert trace.get("fusion").fallback_reason == ""
    assert [c.chunk_id for c in trace.get("fusion").candidates] == _ids(nodes)


def test_relevance_is_max_of_cosine_and_max_normalised_bm25_in_both_modes() -> None:
    rrf, _, _ = _retriever(mode="rrf")
    weighted, _, _ = _retriever(mode="weighted", weights={"vector": 0.7, "bm25": 0.3})
    query = "how are rankings fused together"

    by_mode = [{n.node.node_id: n.node.metadata["relevance"] for n in r.retrieve(query)} for r in (rrf, weighted)]

    expected = {"a": 0.80, "b": 0.60, "c": 1.0, "d": 0.5}  # c: max(0.30, 12/12), d: 6/12
    assert by_mode[0] == pytest.approx(expected)
    assert by_mode[1] == pytest.approx(expected)


def test_fusion_retriever_does_not_mutate_sub_retriever_nodes() -> None:
    retriever, vector, _ = _retriever()

    nodes = retriever.retrieve("how are rankings fused together")

    assert "relevance" not in vector.hits[0].node.metadata
    by_id = {n.node.node_id: n for n in nodes}
    assert by_id["c"].node.metadata["retrieval_ranks"] == {"vector": 3, "bm25": 1}


def test_weighted_mode_uses_weights_and_top_k() -> None:
    retriever, _, _ = _retriever(mode="weighted", weights={"vector": 1.0, "bm25": 0.0}, top_k=2)

    nodes = retriever.retrieve("how are rankings fused together")

    assert _ids(nodes) == ["a", "b"]


@pytest.mark.parametrize("query,tokens", [("BM25", 1), ("RRF fusion", 2), ("什么", 2)],
                         ids=["one-word", "two-words", "cjk"])
def test_short_query_goes_keyword_only(query: str, tokens: int) -> None:
    retriever, vector, bm25 = _retriever()

    nodes, trace = _run(retriever, query)

    assert vector.queries == [] and bm25.queries == [query]
    assert _ids(nodes) == ["c", "d"]
    assert trace.get("fusion").fallback_reason == f"short query ({tokens} tokens <= 2): keyword only"
    assert trace.get("vector") is None


def test_three_cjk_characters_are_not_short() -> None:
    retriever, vector, bm25 = _retriever()

    retriever.retrieve("检索器")

    assert vector.queries and bm25.queries


def test_failing_retriever_is_skipped_with_reason() -> None:
    bm25 = StaticRetriever([_hit("c", 12.0), _hit("d", 6.0)])
    retriever = FusionRetriever({"vector": BrokenRetriever(), "bm25": bm25})

    nodes, trace = _run(retriever, "a question long enough for both retrievers")

    assert _ids(nodes) == ["c", "d"]
    assert trace.get("vector").error == "ConnectionError: chroma is down"
    assert trace.get("vector").fallback_reason == "retriever raised; skipped"
    assert trace.get("fusion").fallback_reason == (
        "vector failed (ConnectionError: chroma is down); continued without it")


def test_short_query_falls_back_to_vector_when_keyword_fails() -> None:
    vector = StaticRetriever([_hit("a", 0.8)])
    retriever = FusionRetriever({"vector": vector, "bm25": BrokenRetriever()})

    nodes, trace = _run(retriever, "BM25")

    assert _ids(nodes) == ["a"]
    reason = trace.get("fusion").fallback_reason
    assert reason.startswith("short query (1 tokens <= 2): keyword only; keyword retriever failed")
    assert "bm25 failed (ConnectionError: chroma is down)" in reason


def test_all_retrievers_failing_raises() -> None:
    retriever = FusionRetriever({"vector": BrokenRetriever(), "bm25": BrokenRetriever()})

    with pytest.raises(RetrievalError, match="vector: ConnectionError"):
        retriever.retrieve("a question long enough for both retrievers")


def test_zero_weight_survivor_still_returns_results() -> None:
    bm25 = StaticRetriever([_hit("c", 12.0)])
    retriever = FusionRetriever({"vector": BrokenRetriever(), "bm25": bm25}, weights={"vector": 1.0, "bm25": 0.0})

    nodes, trace = _run(retriever, "a question long enough for both retrievers")

    assert _ids(nodes) == ["c"]
    assert any("used equal weights" in note for note in trace.get("fusion").notes)


def test_empty_query_returns_nothing_with_reason() -> None:
    retriever, vector, _ = _retriever()

    nodes, trace = _run(retriever, "   ")

    assert nodes == [] and vector.queries == []
    assert trace.get("fusion").fallback_reason == "empty query: nothing retrieved"


def test_appends_to_the_querys_trace_and_passes_the_query_bundle() -> None:
    retriever, vector, _ = _retriever()
    trace = QueryTrace(query="q")
    trace.add("rewrite")

    _run(retriever, QueryBundle("how are rankings fused together", custom_embedding_strs=["h"]), trace)

    assert [s.name for s in trace.stages] == ["rewrite", "vector", "bm25", "fusion"]
    assert vector.queries == ["how are rankings fused together"]


def test_from_config_maps_weights_mode_and_sources() -> None:
    vector, bm25 = StaticRetriever([_hit("a", 0.8)]), StaticRetriever([_hit("c", 1.0)])
    config = RetrievalConfig(fusion="weighted", vector_weight=0.6, keyword_weight=0.4, candidate_k=7, rrf_k=10)

    retriever = FusionRetriever.from_config({"vector": vector, "bm25": bm25}, config)
    vector_only = FusionRetriever.from_config({"vector": vector, "bm25": bm25}, RetrievalConfig(sources="vector"))
    keyword_only = FusionRetriever.from_config({"vector": vector, "bm25": bm25}, RetrievalConfig(sources="keyword"))

    assert (retriever.mode, retriever.top_k, retriever.rrf_k) == ("weighted", 7, 10)
    assert retriever.weights == {"vector": 0.6, "bm25": 0.4}
    assert list(vector_only.retrievers) == ["vector"] and vector_only.keyword_source is None
    assert list(keyword_only.retrievers) == ["bm25"] and keyword_only.keyword_source == "bm25"


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="unknown sources"):
        FusionRetriever({"vector": StaticRetriever([])}, weights={"bm25": 1.0})
    with pytest.raises(ValueError):
        FusionRetriever({})
    with pytest.raises(ValueError):
        FusionRetriever({"vector": StaticRetriever([])}, mode="sum")  # type: ignore[arg-type]
