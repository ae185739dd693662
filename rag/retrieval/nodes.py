"""Helpers for the nodes that flow between retrieval stages.

Stages annotate copies of nodes (never the inputs) with what they learned, and hide those keys from
the embedder and the LLM, so a ``relevance: 0.8`` never leaks into the text a cross-encoder scores or
the model reads.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.schema import MetadataMode, NodeWithScore

# Metadata keys the retrieval stages write at query time. They are hidden from the embedder and the LLM.
RUNTIME_METADATA_KEYS = ("relevance", "retrieval_ranks", "retrieval_score", "rerank_score", "mmr_score",
                         "truncated", "cosine")


def annotate_node(item: NodeWithScore, *, score: float | None | Any = ..., **metadata: Any) -> NodeWithScore:
    """A copy of ``item`` with ``metadata`` merged in (input nodes are never mutated).

    The new keys are added to the node's excluded embed/LLM metadata keys, so a ``relevance: 0.8``
    never leaks into the text a cross-encoder scores or the LLM reads.

    Args:
        item: The node to copy.
        score: The new score. Defaults to keeping ``item.score``.
        **metadata: Keys to set.
    """
    node = item.node
    keys = list(metadata)
    copy = node.model_copy(update={
        "metadata": {**node.metadata, **metadata},
        "excluded_embed_metadata_keys": list(dict.fromkeys([*node.excluded_embed_metadata_keys, *keys])),
        "excluded_llm_metadata_keys": list(dict.fromkeys([*node.excluded_llm_metadata_keys, *keys])),
    })
    return NodeWithScore(node=copy, score=item.score if score is ... else score)


def best_first(items: list[NodeWithScore]) -> list[NodeWithScore]:
    """``items`` re-ranked by score, best first; equal scores keep their order (a missing score counts 0)."""
    return sorted(items, key=lambda item: item.score or 0.0, reverse=True)


def node_text(item: NodeWithScore, mode: MetadataMode = MetadataMode.EMBED) -> str:
    """The text of a node as the embedder (default) or the LLM sees it."""
    return item.node.get_content(metadata_mode=mode)


def doc_id_of(item: NodeWithScore) -> str:
    """The id of the document ``item``'s chunk belongs to ("" when the node carries none)."""
    return str(item.node.metadata.get("doc_id", ""))
