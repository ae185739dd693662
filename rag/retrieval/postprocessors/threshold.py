"""Drop passages below a relevance threshold."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import report

logger = logging.getLogger(__name__)


class SimilarityThresholdPostprocessor(TracedPostprocessor):
    """Drop nodes whose ``metadata["relevance"]`` is below ``threshold``.

    ``relevance`` is set by ``FusionRetriever`` (in [0, 1], the same meaning in rrf and weighted
    mode). Nodes without the key are kept, since they cannot be judged. When every node falls below
    the threshold the result is ``[]`` and the stage says so, with the best relevance seen, so a
    caller can tell "nothing relevant" from "nothing retrieved".

    Args:
        threshold: Minimum relevance in [0, 1]; 0 keeps everything. Defaults to 0.
        metadata_key: Where to read the relevance. Defaults to ``"relevance"``.
    """

    stage_name: ClassVar[str] = "threshold"
    threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    metadata_key: str = Field(default="relevance")

    def __init__(self, threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(threshold=threshold, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "SimilarityThresholdPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        kept, best = [], -math.inf
        for item in nodes:
            value = item.node.metadata.get(self.metadata_key)
            if value is None:
                kept.append(item)
                continue
            best = max(best, float(value))
            if float(value) >= self.threshold:
                kept.append(item)
        if nodes and not kept:
            report(query_bundle, fallback=f"all {len(nodes)} candidates are below the relevance threshold "
                                          f"{self.threshold:.2f} (best {best:.3f})")
        elif len(kept) < len(nodes):
            report(query_bundle, note=f"dropped {len(nodes) - len(kept)} below relevance {self.threshold:.2f}")
        return kept
