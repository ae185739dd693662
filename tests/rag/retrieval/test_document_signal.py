"""The document-level signal: metadata entries scored against the query, boosting their passages."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.documents import DocumentRecord
from rag.retrieval.document_signal import (
    DocumentBoostPostprocessor,
    DocumentEntry,
    DocumentSignal,
    entries_from_records,
)


def _record(doc_id: str, status: str = "completed", **fields: str) -> DocumentRecord:
    return DocumentRecord(doc_id=doc_id, file_name=f"{doc_id}.pdf", sha256=doc_id, status=status, **fields)


RECORDS = [
    _record("volcano", summary="How shield volcanoes erupt basalt lava.", keywords="volcano, lava, basalt",
            topics="geology"),
    _record("river", summary="The Danube and the cities it crosses.", keywords="river, Danube, Vienna"),
    _record("report", summary="华锦股份2019年年度报告，包括营业收入和研发投入。", keywords="营业收入, 研发费用"),
    _record("empty"),  # no metadata: no entry
    _record("broken", status="failed", summary="lava everywhere", keywords="lava"),
]


def _node(node_id: str, doc_id: str, score: float) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id, text=f"text of {node_id}", metadata={"doc_id": doc_id}),
                         score=score)


def test_entries_are_the_completed_documents_with_metadata() -> None:
    entries = entries_from_records(RECORDS)
    assert [entry.doc_id for entry in entries] == ["volcano", "river", "report"]
    assert entries[0].text == "How shield volcanoes erupt basalt lava.\nvolcano, lava, basalt\ngeology"


def test_the_document_whose_metadata_matches_scores_highest() -> None:
    signal = DocumentSignal.from_records(RECORDS)
    assert len(signal) == 3
    scores = signal.scores("Which volcano has basalt lava flows?")
    assert scores["volcano"] == 1.0 and "river" not in scores and "report" not in scores
    chinese = signal.scores("华锦股份的研发费用是多少？")
    assert max(chinese, key=chinese.get) == "report"
    assert signal.scores("quantum chromodynamics") == {}
    assert DocumentSignal([]).scores("lava") == {}


def test_the_boost_lifts_passages_of_the_matching_document() -> None:
    signal = DocumentSignal.from_records(RECORDS)
    nodes = [_node("r1", "river", 0.9), _node("v1", "volcano", 0.7), _node("r2", "river", 0.5)]
    query = QueryBundle("basalt lava of shield volcanoes")
    boosted = DocumentBoostPostprocessor(signal, weight=0.5).postprocess_nodes(nodes, query)
    assert [n.node.node_id for n in boosted] == ["v1", "r1", "r2"]
    assert boosted[0].node.metadata["document_signal"] == 1.0 and boosted[1].node.metadata["document_signal"] == 0.0
    assert boosted[0].score == 0.5 * 0.5 + 0.5 * 1.0  # min-max of 0.7 in [0.5, 0.9] is 0.5
    assert [n.node.node_id for n in nodes] == ["r1", "v1", "r2"] and "document_signal" not in nodes[0].node.metadata
    light = DocumentBoostPostprocessor(signal, weight=0.1).postprocess_nodes(nodes, query)
    assert [n.node.node_id for n in light] == ["r1", "v1", "r2"]  # a small weight only breaks near-ties


def test_no_match_or_zero_weight_keeps_retrievals_order_and_scores() -> None:
    signal = DocumentSignal([DocumentEntry("volcano", "volcano lava basalt")])
    nodes = [_node("r1", "river", 0.9), _node("v1", "volcano", 0.7)]
    for processor, query in ((DocumentBoostPostprocessor(signal, weight=0.5), "Danube cities"),
                             (DocumentBoostPostprocessor(signal, weight=0.0), "volcano lava")):
        kept = processor.postprocess_nodes(nodes, QueryBundle(query))
        assert [(n.node.node_id, n.score) for n in kept] == [("r1", 0.9), ("v1", 0.7)]
