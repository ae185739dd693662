"""``BroadQuestionPostprocessor``: a broad question gets its document's opening and the section it names."""

from __future__ import annotations

import logging
import re
from typing import Any, Callable, ClassVar, Sequence

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.broad import is_broad, named_section
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import report

logger = logging.getLogger(__name__)

ChunksOf = Callable[[str], Sequence[Any]]


class BroadQuestionPostprocessor(TracedPostprocessor):
    """For a broad question, put the top document's opening passages (and a named section's) first.

    Args:
        chunks_of: doc id -> its chunks in order (``KeywordIndex.chunks_of``).
        make_node: ``(chunk, score) -> NodeWithScore`` (``rag.retrieval.retrievers.chunk_node``).
        opening: How many opening chunks (title, abstract, introduction) to add. Defaults to 2.
    """

    stage_name: ClassVar[str] = "broad"
    opening: int = Field(default=2, ge=0, le=10)
    _chunks_of: ChunksOf = PrivateAttr()
    _make_node: Callable[[Any, float], NodeWithScore] = PrivateAttr()

    def __init__(self, chunks_of: ChunksOf, make_node: Callable[[Any, float], NodeWithScore], *,
                 opening: int = 2, **kwargs: Any) -> None:
        super().__init__(opening=opening, **kwargs)
        self._chunks_of = chunks_of
        self._make_node = make_node

    @classmethod
    def class_name(cls) -> str:
        return "BroadQuestionPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle is not None else ""
        if not nodes or not is_broad(question):
            return nodes
        doc_id = str(nodes[0].node.metadata.get("doc_id", ""))
        try:
            chunks = list(self._chunks_of(doc_id)) if doc_id else []
        except Exception as exc:  # noqa: BLE001 - the retrieved passages still answer
            report(query_bundle, fallback=f"could not read the document's passages: {exc}")
            return nodes
        section = named_section(question)
        wanted = []
        if section is not None:
            wanted = [c for c in chunks if _in_section(getattr(c, "heading_path", "") or "", section)]
        wanted += chunks[: self.opening]
        score = nodes[0].score if nodes[0].score is not None else 1.0
        have = {n.node.node_id for n in nodes}
        added, seen = [], set(have)
        for chunk in wanted:
            if chunk.chunk_id not in seen:
                seen.add(chunk.chunk_id)
                added.append(self._make_node(chunk, score))
        if added:
            what = f"section {section} and " if section is not None else ""
            report(query_bundle, note=f"broad question: added {len(added)} passages ({what}the document's opening)")
        return added + nodes


def _in_section(heading_path: str, section: str) -> bool:
    first = heading_path.split(" > ")[0].strip() if heading_path else ""
    return bool(re.match(rf"^(?:section\s+)?{re.escape(section)}(?:[.\s]|$)", first, re.IGNORECASE))
