"""Query vectors of two models are computed side by side, once, into the router's cache."""

from __future__ import annotations

import threading

from rag.config import RagConfig
from rag.models.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding


class MeetingEmbedding(HashEmbedding):
    """Embeds a query only once the other model has started on its own: it blocks if the two run in turn."""

    def model_post_init(self, context) -> None:
        self._calls = 0

    def _get_query_embedding(self, query: str) -> list[float]:
        self._calls += 1
        started[self.model_id].set()
        other = "hash-e5-small" if self.model_id == "hash-minilm" else "hash-minilm"
        assert started[other].wait(10), "the two query vectors were computed one after the other"
        return super()._get_query_embedding(query)


started = {"hash-minilm": threading.Event(), "hash-e5-small": threading.Event()}


def test_two_models_embed_a_question_at_once_and_only_once() -> None:
    models = {}
    router = EmbedderRouter(RagConfig().embedding,
                            lambda spec: models.setdefault(spec, MeetingEmbedding(model_id=f"hash-{spec.split(':')[-1]}")))
    router.query_vectors_at_once(["hash-minilm", "hash-e5-small", "hash-gone"], ["what was the revenue?"])

    assert ("hash-minilm", "what was the revenue?") in router.query_vectors
    assert ("hash-e5-small", "what was the revenue?") in router.query_vectors
    router.query_vectors_at_once(["hash-minilm", "hash-e5-small"], ["what was the revenue?"])  # cached: no call
    assert router.query_vector("hash-e5-small", "what was the revenue?")
    assert [m._calls for m in models.values()] == [1, 1]
