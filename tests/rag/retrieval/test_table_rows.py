"""Table passages whose row the question names word for word rank higher after fusion."""

from __future__ import annotations

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from rag.retrieval.table_rows import boost_named_rows

GRID = "|  | 2021 | 2022 |\n| --- | --- | --- |\n"
QUESTION = "What was Freight revenue in the three months ended March 31, 2022?"


def _node(node_id: str, score: float, text: str, kind: str = "table") -> NodeWithScore:
    meta = {"chunk_id": node_id, "doc_id": "d", "file_name": "f.pdf", "page_start": 1, "page_end": 1, "kind": kind}
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata=meta), score=score)


def _candidates() -> list[NodeWithScore]:
    return [
        _node("prose", 0.9, "For the three months ended March 31, 2022, Freight revenue increased.", kind="text"),
        _node("parent", 0.7, "Parent company only\n" + GRID + "| Freight revenue | 301 | 1,824 |"),
        _node("segment", 0.6, "Revenue\n" + GRID + "| Freight | 301 | 1,824 |"),
        _node("offering", 0.5, GRID + "| Mobility revenue | 853 | 2,518 |\n| Freight revenue | 301 | 1,824 |"),
        _node("geography", 0.4, GRID + "| Asia Pacific | 527 | 733 |"),
    ]


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_the_table_with_the_most_specific_named_row_ranks_first() -> None:
    boosted = boost_named_rows(_candidates(), QUESTION, 0.8)
    # offering: 0.5 + 0.8 x 0.9; segment ("freight", 7 of 15 letters): 0.6 + 0.8 x 0.9 x 7/15
    assert _ids(boosted) == ["offering", "segment", "prose", "parent", "geography"]
    scores = {n.node.node_id: n.score for n in boosted}
    assert abs(scores["offering"] - 1.22) < 1e-9 and abs(scores["segment"] - 0.936) < 1e-9
    assert scores["prose"] == 0.9 and scores["parent"] == 0.7  # prose and the parent's statement keep their scores


def test_no_boost_or_no_named_row_keeps_the_ranking() -> None:
    order = ["prose", "parent", "segment", "offering", "geography"]
    assert _ids(boost_named_rows(_candidates(), QUESTION, 0.0)) == order
    assert _ids(boost_named_rows(_candidates(), "Where is Asia?", 0.8)) == order


class _Static(BaseRetriever):
    def __init__(self, hits: list[NodeWithScore]) -> None:
        self.hits = hits
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=h.node, score=h.score) for h in self.hits]


def test_fusion_lifts_a_named_row_from_below_the_cut_and_says_so_in_the_trace() -> None:
    hits = _candidates()
    retrievers = {"vector": _Static(hits), "bm25": _Static(hits)}
    config = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted")
    query = SearchQuery(query_str=QUESTION)

    plain = FusionRetriever.from_config(retrievers, config, table_row_boost=0.0).retrieve(
        SearchQuery(query_str=QUESTION))
    lifted = FusionRetriever.from_config(retrievers, config).retrieve(query)

    assert _ids(plain) == ["prose", "parent"]
    assert "offering" in _ids(lifted)  # the boost is applied before the list is cut to candidate_k
    assert any("freight revenue" in note for note in query.trace.get("fusion").notes)


def test_a_table_titled_by_what_the_question_breaks_down_outranks_the_row_that_totals_it() -> None:
    statement = "合并利润表\n| 项目 | 2019 年度 |\n| --- | --- |\n| 销售费用 | 300,064,834.96 |"
    note = "37、销售费用\n| 项目 | 本期发生额 |\n| --- | --- |\n| 产品储运费 | 219,557,095.08 |"
    candidates = [_node("prose", 0.8, "销售费用同比增长。", kind="text"), _node("statement", 0.7, statement),
                  _node("note", 0.6, note)]
    boosted = boost_named_rows(candidates, "华锦股份2019年销售费用里，产品仓储和运输花了多少钱？", 0.8)
    assert _ids(boosted) == ["note", "statement", "prose"]  # 0.6 + 0.64 against 0.7 + 0.64 x 4/5
