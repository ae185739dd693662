"""The template docs/architecture.md points to for adding a postprocessor: a complete, working example.

Copy it, rename it, and keep the shape: pydantic fields with bounds, only ``_postprocess_nodes``, copies of
the nodes (``annotate_node``), reasons through ``report``, and a test that reads the stage from the query's
trace.
"""

from __future__ import annotations

from typing import ClassVar

from llama_index.core.bridge.pydantic import Field, ValidationError
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
import pytest

from rag.retrieval.nodes import annotate_node
from rag.retrieval.postprocessors import TracedPostprocessor
from rag.retrieval.query import SearchQuery, report


class RecencyPostprocessor(TracedPostprocessor):
    """Prefer passages from newer documents when scores are close (an example, not a shipped stage)."""

    stage_name: ClassVar[str] = "recency"
    weight: float = Field(default=0.1, ge=0.0, le=1.0)

    @classmethod
    def class_name(cls) -> str:
        return "RecencyPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        years = [n.node.metadata.get("year") for n in nodes]
        known = [y for y in years if y is not None]
        if not known or min(known) == max(known):
            report(query_bundle, fallback="no passages of different years; kept the ranking")
            return nodes
        low, span = min(known), max(known) - min(known)
        rescored = [annotate_node(n, score=(n.score or 0.0) + self.weight * ((y - low) / span if y is not None else 0))
                    for n, y in zip(nodes, years)]
        return sorted(rescored, key=lambda n: -(n.score or 0.0))


def _node(node_id: str, score: float, **meta) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id, text=f"text {node_id}", metadata=meta), score=score)


def test_recency_prefers_the_newer_of_two_close_passages() -> None:
    query = SearchQuery(query_str="what changed?")
    nodes = [_node("old", 0.80, year=2019), _node("new", 0.79, year=2024)]

    kept = RecencyPostprocessor(weight=0.1).postprocess_nodes(nodes, query_bundle=query)

    assert [n.node.node_id for n in kept] == ["new", "old"]
    stage = query.trace.get("recency")
    assert [c.chunk_id for c in stage.candidates] == ["new", "old"] and not stage.fallback_reason
    assert nodes[0].score == 0.80  # the inputs are never changed


def test_recency_without_years_keeps_the_ranking_and_says_why() -> None:
    query = SearchQuery(query_str="what changed?")
    nodes = [_node("a", 0.9), _node("b", 0.5)]

    kept = RecencyPostprocessor().postprocess_nodes(nodes, query_bundle=query)

    assert [n.node.node_id for n in kept] == ["a", "b"]
    assert "different years" in query.trace.get("recency").fallback_reason
    with pytest.raises(ValidationError):
        RecencyPostprocessor(weight=2.0)
