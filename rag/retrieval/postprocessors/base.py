"""``TracedPostprocessor``: a llama-index postprocessor that is one stage of the query's trace."""

from __future__ import annotations

import logging
from typing import ClassVar

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.query import as_search_query

logger = logging.getLogger(__name__)


class TracedPostprocessor(BaseNodePostprocessor):
    """Runs ``_postprocess_nodes`` inside a stage named ``stage_name`` of the query's trace.

    The stage records the nodes the postprocessor returned and how long it took; the postprocessor
    notes why it degraded with ``rag.retrieval.query.report``. Postprocessors are optional stages: if
    one raises, the stage records the error and the query goes on with the nodes it was given.
    """

    stage_name: ClassVar[str] = "postprocess"

    def postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None,
                          query_str: str | None = None) -> list[NodeWithScore]:
        if query_str is not None and query_bundle is not None:
            raise ValueError("Cannot specify both query_str and query_bundle")
        if query_bundle is None and query_str is None:  # no query, so no trace to record in
            return self._postprocess_nodes(list(nodes), None)
        query = as_search_query(query_bundle if query_bundle is not None else query_str)
        with query.trace.stage(self.stage_name) as stage:
            try:
                result = self._postprocess_nodes(list(nodes), query)
            except Exception as exc:  # an optional stage must not sink the query
                logger.warning("stage %s failed: %s", self.stage_name, exc, exc_info=True)
                stage.error = f"{type(exc).__name__}: {exc}"
                stage.fallback(f"{self.stage_name} failed; kept the previous ranking")
                result = list(nodes)
            stage.set_candidates(result)
        return result
