from __future__ import annotations

import math

import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, ValidationError
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.retrieval.postprocessors import (ContextBudgetPostprocessor, CrossEncoderRerankPostprocessor, MMRPostprocessor,
                                          SimilarityThresholdPostprocessor, TracedPostprocessor)
from rag.retrieval.query import SearchQuery
from rag.retrieval.trace import StageTrace


def _traced(processor: TracedPostprocessor, nodes: list[NodeWithScore],
            query: str = "query") -> tuple[list[NodeWithScore], StageTrace]:
    """Run ``processor`` on a query that carries a trace; return its output and its stage record."""
    bundle = SearchQuery(query_str=query)
    out = processor.postprocess_nodes(nodes, query_bundle=bundle)
    return out, bundle.trace.get(processor.stage_name)


def _unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


VECTORS = {
    "query": _unit(1, 0, 0, 0),
    "alpha": _unit(0.9, 0.1, 0, 0),
    "alpha again": _unit(0.9, 0.12, 0, 0),  # a near-duplicate of alpha
    "beta": _unit(0.6, 0, 0.8, 0),
    "gamma": _unit(0.5, 0, 0, 0.866),
    "资产负债表": _unit(1, 0, 0, 0),  # simplified forms only: a traditional text has no vector here
    "应付职工薪酬": _unit(0.9, 0.1, 0, 0),
    "递延收益": _unit(0.2, 0, 1, 0),
}


class TableEmbedding(BaseEmbedding):
    """Fixed vectors per text; records each batch it is asked to embed."""

    batches: list[list[str]] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "TableEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return VECTORS[query]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return VECTORS[query]

    def _get_text_embedding(self, text: str) -> list[float]:
        return VECTORS[text]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [VECTORS[t] for t in texts]


class BrokenEmbedding(TableEmbedding):
    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedder offline")


def _node(text: str, score: float | None = 0.5, *, node_id: str | None = None, embedding: list[float] | None = None,
          **meta) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id or text, text=text, metadata=meta, embedding=embedding,
                                       excluded_embed_metadata_keys=list(meta), excluded_llm_metadata_keys=list(meta)),
                         score=score)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


# --- MMR ---------------------------------------------------------------------------------------


def test_mmr_picks_the_diverse_node_over_the_near_duplicate() -> None:
    embed = TableEmbedding()
    nodes = [_node("alpha"), _node("alpha again"), _node("beta")]

    picked = MMRPostprocessor(embed, top_n=2, lambda_mult=0.3).postprocess_nodes(nodes, query_str="query")

    assert _ids(picked) == ["alpha", "beta"]
    assert embed.batches == [["alpha", "alpha again", "beta"]]  # one batch for the missing vectors


def test_mmr_embeds_traditional_texts_and_question_in_simplified_script_like_stored_vectors() -> None:
    embed = TableEmbedding()
    nodes = [_node("遞延收益"), _node("應付職工薪酬")]

    picked = MMRPostprocessor(embed, top_n=2, lambda_mult=1.0).postprocess_nodes(nodes, query_str="資產負債表")

    assert _ids(picked) == ["應付職工薪酬", "遞延收益"]
    assert embed.batches == [["递延收益", "应付职工薪酬"]]


def test_mmr_with_lambda_one_ranks_by_relevance() -> None:
    nodes = [_node("beta"), _node("alpha again"), _node("alpha")]

    picked = MMRPostprocessor(TableEmbedding(), top_n=3, lambda_mult=1.0).postprocess_nodes(nodes, query_str="query")

    assert _ids(picked) == ["alpha", "alpha again", "beta"]
    assert picked[0].score == 0.5  # the incoming score is kept
    assert picked[0].node.metadata["mmr_score"] == pytest.approx(0.9939, abs=1e-3)


def test_mmr_penalises_similarity_to_all_selected_not_just_the_last() -> None:
    nodes = [_node("alpha"), _node("alpha again"), _node("beta"), _node("gamma")]

    picked = MMRPostprocessor(TableEmbedding(), top_n=3, lambda_mult=0.4).postprocess_nodes(nodes, query_str="query")

    # after alpha, gamma: "alpha again" is far from gamma (the last pick) but a copy of alpha
    assert _ids(picked) == ["alpha", "gamma", "beta"]


def test_mmr_uses_stored_node_embeddings_and_query_bundle_embedding() -> None:
    embed = TableEmbedding()
    nodes = [_node("x1", embedding=VECTORS["alpha"]), _node("x2", embedding=VECTORS["alpha again"]), _node("beta")]
    bundle = QueryBundle("not in the table", embedding=VECTORS["query"])

    picked = MMRPostprocessor(embed, top_n=2, lambda_mult=0.3).postprocess_nodes(nodes, query_bundle=bundle)

    assert _ids(picked) == ["x1", "beta"]
    assert embed.batches == [["beta"]]


def test_mmr_falls_back_to_incoming_order_when_embedding_fails() -> None:
    processor = MMRPostprocessor(BrokenEmbedding(), top_n=2)
    nodes = [_node("beta"), _node("alpha"), _node("gamma")]

    picked, stage = _traced(processor, nodes)

    assert _ids(picked) == ["beta", "alpha"]
    assert "embedding failed (RuntimeError: embedder offline)" in stage.fallback_reason
    assert [c.chunk_id for c in stage.candidates] == ["beta", "alpha"]


def test_mmr_small_inputs_and_validation() -> None:
    processor = MMRPostprocessor(TableEmbedding(), top_n=3)
    assert processor.postprocess_nodes([], query_str="query") == []
    assert _ids(processor.postprocess_nodes([_node("beta")], query_str="query")) == ["beta"]
    with pytest.raises(ValueError, match="query bundle"):
        processor.postprocess_nodes([_node("alpha"), _node("beta")])
    with pytest.raises(ValidationError):
        MMRPostprocessor(TableEmbedding(), top_n=0)
    with pytest.raises(ValidationError):
        MMRPostprocessor(TableEmbedding(), lambda_mult=1.5)
    with pytest.raises(TypeError):
        MMRPostprocessor(object())
    assert MMRPostprocessor.class_name() == "MMRPostprocessor"


# --- cross-encoder rerank ----------------------------------------------------------------------


class FakeScorer:
    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.calls.append(list(pairs))
        return [self.scores[text] for _, text in pairs]


def test_rerank_orders_by_scorer_and_keeps_retrieval_score() -> None:
    scorer = FakeScorer({"p": 0.1, "q": 0.9, "r": 0.5})
    nodes = [_node("p", 0.03, relevance=0.9), _node("q", 0.02), _node("r", 0.01)]

    reranked = CrossEncoderRerankPostprocessor(scorer, top_n=2, candidates=3).postprocess_nodes(nodes, query_str="Q")

    assert _ids(reranked) == ["q", "r"]
    assert [n.score for n in reranked] == [0.9, 0.5]
    assert reranked[0].node.metadata["retrieval_score"] == 0.02
    assert reranked[0].node.metadata["rerank_score"] == 0.9
    assert scorer.calls == [[("Q", "p"), ("Q", "q"), ("Q", "r")]]
    assert "rerank_score" not in nodes[1].node.metadata  # inputs untouched


def test_rerank_scores_only_the_first_candidates() -> None:
    scorer = FakeScorer({"p": 0.1, "q": 0.2, "r": 0.99})

    reranked = CrossEncoderRerankPostprocessor(scorer, top_n=1, candidates=2).postprocess_nodes(
        [_node("p"), _node("q"), _node("r")], query_str="Q")

    assert _ids(reranked) == ["q"]
    assert len(scorer.calls[0]) == 2


class RaisingScorer:
    def predict(self, pairs):
        raise RuntimeError("CUDA out of memory")


class ShortScorer:
    def predict(self, pairs):
        return [0.5]


@pytest.mark.parametrize("scorer,message", [(RaisingScorer(), "RuntimeError: CUDA out of memory"),
                                            (ShortScorer(), "scorer returned 1 scores for 3 pairs")],
                         ids=["raises", "wrong-length"])
def test_rerank_failure_keeps_retrieval_order(scorer, message: str) -> None:
    processor = CrossEncoderRerankPostprocessor(scorer, top_n=2, candidates=5)

    reranked, stage = _traced(processor, [_node("p"), _node("q"), _node("r")], "Q")

    assert _ids(reranked) == ["p", "q"]
    assert message in stage.fallback_reason


def test_rerank_validation() -> None:
    with pytest.raises(TypeError):
        CrossEncoderRerankPostprocessor(object())
    with pytest.raises(ValueError, match="candidates"):
        CrossEncoderRerankPostprocessor(FakeScorer({}), top_n=5, candidates=2)
    with pytest.raises(ValueError, match="query bundle"):
        CrossEncoderRerankPostprocessor(FakeScorer({})).postprocess_nodes([_node("p")])


# --- similarity threshold ----------------------------------------------------------------------


def test_threshold_drops_low_relevance_and_keeps_unjudged() -> None:
    nodes = [_node("a", relevance=0.9), _node("b", relevance=0.2), _node("c"), _node("d", relevance=0.5)]
    processor = SimilarityThresholdPostprocessor(0.5)

    kept, stage = _traced(processor, nodes)

    assert _ids(kept) == ["a", "c", "d"]
    assert stage.fallback_reason == "" and stage.notes == ["dropped 1 below relevance 0.50"]


def test_threshold_dropping_everything_reports_why_in_that_querys_trace() -> None:
    processor = SimilarityThresholdPostprocessor(threshold=0.6)

    kept, stage = _traced(processor, [_node("a", relevance=0.31), _node("b", relevance=0.2)])

    assert kept == []
    assert stage.fallback_reason == "all 2 candidates are below the relevance threshold 0.60 (best 0.310)"
    _, next_stage = _traced(processor, [_node("a", relevance=0.7)])
    assert next_stage.fallback_reason == ""  # a stage record belongs to one query


def test_threshold_zero_keeps_everything_and_bounds_are_checked() -> None:
    nodes = [_node("a", relevance=0.0), _node("b", relevance=0.1)]
    assert _ids(SimilarityThresholdPostprocessor().postprocess_nodes(nodes)) == ["a", "b"]
    with pytest.raises(ValidationError):
        SimilarityThresholdPostprocessor(1.5)


# --- context budget ----------------------------------------------------------------------------


def test_budget_keeps_nodes_in_order_until_full() -> None:
    nodes = [_node("one two three", node_id="a"), _node("four five", node_id="b"), _node("six", node_id="c"),
             _node("seven", node_id="d")]

    kept = ContextBudgetPostprocessor(max_tokens=6).postprocess_nodes(nodes)

    assert _ids(kept) == ["a", "b", "c"]


def test_budget_keeps_at_most_top_k_and_says_what_decided() -> None:
    nodes = [_node(word, node_id=word) for word in ("one", "two", "three", "four")]

    by_top_k, stage = _traced(ContextBudgetPostprocessor(top_k=2, max_tokens=100), nodes)

    assert _ids(by_top_k) == ["one", "two"]
    assert stage.notes == ["2 of the top 2 fit the 100-token context budget"]
    widened = ContextBudgetPostprocessor(top_k=2, max_tokens=100).postprocess_nodes(
        nodes, query_bundle=SearchQuery(query_str="q", expansion=1))
    assert _ids(widened) == ["one", "two", "three", "four"]


def test_budget_stops_at_the_first_node_that_does_not_fit() -> None:
    nodes = [_node("one two", node_id="a"), _node("three four five six", node_id="b"), _node("x", node_id="c")]

    kept = ContextBudgetPostprocessor(max_tokens=4).postprocess_nodes(nodes)

    assert _ids(kept) == ["a"]


def test_budget_counts_cjk_characters() -> None:
    nodes = [_node("检索增强生成", node_id="a"), _node("模型", node_id="b")]

    assert _ids(ContextBudgetPostprocessor(max_tokens=7).postprocess_nodes(nodes)) == ["a"]
    assert _ids(ContextBudgetPostprocessor(max_tokens=8).postprocess_nodes(nodes)) == ["a", "b"]


def test_budget_truncates_the_first_node_only_if_nothing_fits() -> None:
    processor = ContextBudgetPostprocessor(max_tokens=3)
    nodes = [_node("alpha beta gamma delta epsilon", node_id="a"), _node("b", node_id="b")]

    kept, stage = _traced(processor, nodes)

    assert _ids(kept) == ["a"]
    assert kept[0].node.get_content() == "alpha beta gamma"
    assert kept[0].node.metadata["truncated"] is True
    assert nodes[0].node.get_content() == "alpha beta gamma delta epsilon"
    assert "truncated" in stage.fallback_reason


def test_budget_with_custom_counter() -> None:
    chars = ContextBudgetPostprocessor(max_tokens=10, count_tokens=len)

    kept = chars.postprocess_nodes([_node("abcdef", node_id="a"), _node("ghij", node_id="b"), _node("k", node_id="c")])
    cut = chars.postprocess_nodes([_node("abcdefghijklmnop", node_id="a")])

    assert _ids(kept) == ["a", "b"]
    assert cut[0].node.get_content() == "abcdefghij"


def test_blend_scores_mixes_min_max_normalised_scores() -> None:
    from rag.retrieval.postprocessors import blend_scores

    assert blend_scores([0.0, 10.0, 5.0], [3.0, 1.0, 2.0], 1.0) == [0.0, 1.0, 0.5]
    assert blend_scores([0.0, 10.0, 5.0], [3.0, 1.0, 2.0], 0.0) == [1.0, 0.0, 0.5]
    assert blend_scores([0.0, 10.0], [1.0, 0.0], 0.25) == [0.75, 0.25]
    assert blend_scores([2.0, 2.0], [None, 1.0], 0.5) == [0.0, 0.0]  # constant / missing contribute 0
    with pytest.raises(ValueError):
        blend_scores([1.0], [1.0, 2.0], 0.5)


def test_rerank_blend_lets_a_confident_retrieval_score_survive() -> None:
    # the scorer slightly prefers q, retrieval strongly prefers p: a 0.3 blend keeps p first
    scorer = FakeScorer({"p": 0.4, "q": 0.5, "r": 0.0})
    nodes = [_node("p", 1.0), _node("q", 0.1), _node("r", 0.0)]

    pure = CrossEncoderRerankPostprocessor(scorer, top_n=3, candidates=3).postprocess_nodes(nodes, query_str="Q")
    blended = CrossEncoderRerankPostprocessor(scorer, top_n=3, candidates=3, blend=0.3).postprocess_nodes(
        nodes, query_str="Q")

    assert _ids(pure) == ["q", "p", "r"]
    assert _ids(blended) == ["p", "q", "r"]
    assert blended[0].node.metadata["rerank_score"] == 0.4  # the raw scorer score is kept
    assert blended[0].score == pytest.approx(0.3 * 0.8 + 0.7 * 1.0)
    with pytest.raises(ValueError):
        CrossEncoderRerankPostprocessor(scorer, blend=1.5)
