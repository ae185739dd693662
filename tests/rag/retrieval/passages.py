"""Fused candidates for the tests of the post-fusion rules: passages of one document, and their ids in order."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode


def passage(node_id: str, score: float, text: str, kind: str = "text") -> NodeWithScore:
    """A candidate of document "d", page 1, of ``kind`` ("text" or "table")."""
    meta = {"chunk_id": node_id, "doc_id": "d", "file_name": "d.pdf", "page_start": 1, "page_end": 1, "kind": kind}
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata=meta), score=score)


def ids(nodes: list[NodeWithScore]) -> list[str]:
    """The candidates' ids, in their order."""
    return [n.node.node_id for n in nodes]
