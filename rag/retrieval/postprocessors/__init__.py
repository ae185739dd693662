"""Node postprocessors, one stage of the retrieval trace each, applied in this order by the engine:
threshold → rerank → MMR → reflection → context fitting ("final").

Each is a llama-index ``BaseNodePostprocessor`` with pydantic fields for its options and only
``_postprocess_nodes`` of its own; models are injected. ``TracedPostprocessor`` records the stage
(candidates, time, why it degraded) in the trace the query carries.
"""

from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.postprocessors.context import ContextBudgetPostprocessor
from rag.retrieval.postprocessors.mmr import MMRPostprocessor, StoredVectors
from rag.retrieval.postprocessors.reflection import ReflectionPostprocessor
from rag.retrieval.postprocessors.rerank import CrossEncoderRerankPostprocessor, blend_scores
from rag.retrieval.postprocessors.threshold import SimilarityThresholdPostprocessor

__all__ = ["ContextBudgetPostprocessor", "CrossEncoderRerankPostprocessor", "MMRPostprocessor",
           "ReflectionPostprocessor", "SimilarityThresholdPostprocessor", "StoredVectors", "TracedPostprocessor",
           "blend_scores"]
