from __future__ import annotations

import json
import time

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from rag.retrieval.trace import STAGE_NAMES, QueryTrace, candidates_from_nodes


def _node(chunk_id: str, score: float | None, page: int = 3) -> NodeWithScore:
    meta = {"chunk_id": chunk_id, "doc_id": "doc-1", "file_name": "a.pdf", "page_start": page, "page_end": page + 1}
    return NodeWithScore(node=TextNode(id_=chunk_id, text=f"text {chunk_id}", metadata=meta), score=score)


def test_candidates_from_nodes_ranks_and_metadata() -> None:
    candidates = candidates_from_nodes([_node("c1", 0.9), _node("c2", None, page=7)])

    assert [c.chunk_id for c in candidates] == ["c1", "c2"]
    assert [c.rank for c in candidates] == [1, 2]
    assert candidates[0].doc_id == "doc-1" and candidates[0].file_name == "a.pdf"
    assert (candidates[0].page, candidates[0].page_end, candidates[0].score) == (3, 4, 0.9)
    assert candidates[1].page == 7 and candidates[1].score is None


def test_candidates_fall_back_to_node_id_without_metadata() -> None:
    bare = NodeWithScore(node=TextNode(id_="n9", text="x"), score=1.0)

    candidate = candidates_from_nodes([bare])[0]

    assert (candidate.chunk_id, candidate.doc_id, candidate.page) == ("n9", "", None)


def test_stage_times_block_and_records_candidates() -> None:
    trace = QueryTrace(query="q")
    with trace.stage("vector") as stage:
        time.sleep(0.01)
        stage.set_candidates([_node("c1", 0.5)])
        stage.note("k=30")

    record = trace.get("vector")
    assert record is stage
    assert record.duration_ms >= 9
    assert record.candidates[0].chunk_id == "c1"
    assert record.notes == ["k=30"]


def test_stage_records_error_and_reraises() -> None:
    trace = QueryTrace()
    with pytest.raises(RuntimeError):
        with trace.stage("bm25"):
            raise RuntimeError("index missing")

    assert trace.get("bm25").error == "RuntimeError: index missing"
    assert trace.get("bm25").duration_ms >= 0


def test_to_dict_is_json_serializable_and_collects_fallbacks() -> None:
    trace = QueryTrace(query="什么是 RAG")
    trace.add("rewrite", fallback_reason="LLM timed out")
    trace.add("fusion", [_node("c1", 0.25)], duration_ms=1.5, notes=["mode=rrf"])
    trace.get("fusion").fallback("bm25 failed")
    trace.get("fusion").fallback("short query")

    data = json.loads(json.dumps(trace.to_dict()))

    assert [s["name"] for s in data["stages"]] == ["rewrite", "fusion"]
    assert data["stages"][1]["candidates"][0] == {"chunk_id": "c1", "doc_id": "doc-1", "file_name": "a.pdf",
                                                  "page": 3, "page_end": 4, "rank": 1, "score": 0.25}
    assert trace.fallback_reasons == {"rewrite": "LLM timed out", "fusion": "bm25 failed; short query"}
    assert data["total_ms"] == 1.5
    assert "final" in STAGE_NAMES


def test_numpy_scores_become_plain_floats() -> None:
    trace = QueryTrace()
    trace.add("final", [_node("c1", np.float32(0.5)), _node("c2", float("nan"))])

    data = trace.to_dict()

    assert type(data["stages"][0]["candidates"][0]["score"]) is float
    assert data["stages"][0]["candidates"][1]["score"] is None
    json.dumps(data)
