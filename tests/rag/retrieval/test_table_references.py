"""A table that a top passage names by its caption label ranks right below that passage after fusion."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from rag.retrieval.table_references import boost_referenced_tables, caption_label
from rag.text.table_captions import referenced_labels
from tests.rag.retrieval.test_fusion import StaticRetriever

QUESTION = "Which equation gives the residual covariance with no degrees-of-freedom correction?"
INTRODUCTION = ("Several methods have been proposed to calculate the residual covariance matrix. Possible values "
                "of the argument methodResidCov are presented in Table 1.")
TABLE_1 = "Table 1: Possible values of argument methodResidCov\n| argument | equation |\n| --- | --- |\n"


def _node(node_id: str, score: float, text: str, kind: str = "table", doc_id: str = "d",
          context: str = "", page: int = 9) -> NodeWithScore:
    meta = {"chunk_id": node_id, "doc_id": doc_id, "file_name": f"{doc_id}.pdf", "page_start": page,
            "page_end": page, "kind": kind, "context": context}
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata=meta), score=score)


def _candidates() -> list[NodeWithScore]:
    return [
        _node("introduction", 0.9, INTRODUCTION, kind="text"),
        _node("prose", 0.8, "The residual covariance matrix is estimated from first-step residuals.", kind="text"),
        _node("other paper's table 1", 0.7, TABLE_1 + '| "max" | 12 |', doc_id="other"),
        _node("table 2", 0.6, "Table 2: Possible values of argument method3sls\n| argument | equation |\n"
                              '| --- | --- |\n| "GLS" | 41 |'),
        _node("table 1, first part", 0.4, TABLE_1 + '| "noDfCor" | 37 |\n| "geomean" | 38 |'),
        _node("table 1, second part", 0.2, TABLE_1 + '| "max" | 39 |\n| "Theil" | 40 |'),
    ]


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_labels_named_in_running_text_in_english_and_chinese() -> None:
    assert referenced_labels("presented in Table 1. By default, Tables 2 and TABLE IV") == {"1", "2", "IV"}
    assert referenced_labels("listed in Table A1 (appendix A) and Table S.2") == {"A1", "S.2"}
    assert referenced_labels("见表 3-1，表3.2中是有的值") == {"3-1", "3.2"}
    # 代表 ("stands for"), 发表 ("publish") and 列表 ("list") name no table
    assert referenced_labels("1代表是，共发表2篇，列表3项") == set()


def test_a_caption_label_is_read_from_the_caption_or_the_search_context() -> None:
    assert caption_label(_node("t", 0.1, TABLE_1 + "| a | 1 |")) == "1"
    continued = "续表 3–1 主要税种\n| 税种 | 税率 |\n| --- | --- |\n| 增值税 | 13% |"
    assert caption_label(_node("t", 0.1, continued)) == "3-1"
    assert caption_label(_node("t", 0.1, "| a | 1 |\n| --- | --- |\n| b | 2 |", context="Table 5: Results")) == "5"
    assert caption_label(_node("t", 0.1, INTRODUCTION, kind="text")) == ""  # only table chunks have one
    assert caption_label(_node("t", 0.1, "Revenue\n| a | 1 |\n| --- | --- |\n| b | 2 |")) == ""


def test_the_named_table_of_the_same_document_ranks_below_its_referrer() -> None:
    boosted = boost_referenced_tables(_candidates(), 0.95)
    # the best part reaches 0.95 x 0.9; the second part its own share of that (0.2 / 0.4)
    assert _ids(boosted) == ["introduction", "table 1, first part", "prose", "other paper's table 1",
                             "table 2", "table 1, second part"]
    scores = {n.node.node_id: n.score for n in boosted}
    assert abs(scores["table 1, first part"] - 0.855) < 1e-9 and abs(scores["table 1, second part"] - 0.4275) < 1e-9
    assert scores["other paper's table 1"] == 0.7 and scores["table 2"] == 0.6  # another document's, another label


def test_off_or_no_named_table_keeps_the_ranking() -> None:
    order = _ids(_candidates())
    assert _ids(boost_referenced_tables(_candidates(), 0.0)) == order
    unnamed = [_node("prose", 0.9, "No table is named here.", kind="text"), *_candidates()[2:]]
    assert _ids(boost_referenced_tables(unnamed, 0.95)) == ["prose", *order[2:]]


def test_a_table_of_the_same_label_pages_away_is_another_table() -> None:
    appendix = _node("appendix table 1", 0.4, TABLE_1 + '| "noDfCor" | 37 |', page=18)
    facing = _node("table 1 on the page before", 0.2, TABLE_1 + '| "max" | 39 |', page=7)
    boosted = boost_referenced_tables([_candidates()[0], _candidates()[1], appendix, facing], 0.95)
    assert _ids(boosted) == ["introduction", "table 1 on the page before", "prose", "appendix table 1"]


def test_only_the_first_passages_lift_a_table() -> None:
    low = [_node(f"filler {i}", 1.0 - i / 10, "Nothing about tables.", kind="text") for i in range(5)]
    candidates = [*low, _node("introduction", 0.3, INTRODUCTION, kind="text"),
                  _node("table 1", 0.1, TABLE_1 + '| "noDfCor" | 37 |')]
    assert _ids(boost_referenced_tables(candidates, 0.95))[-1] == "table 1"


def test_fusion_lifts_a_named_table_from_below_the_cut_and_says_so_in_the_trace() -> None:
    hits = _candidates()
    retrievers = {"vector": StaticRetriever(hits), "bm25": StaticRetriever(hits)}
    config = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted", table_reference_share=0.95)
    query = SearchQuery(query_str=QUESTION)

    plain = FusionRetriever.from_config(retrievers, config, table_reference_share=0.0).retrieve(
        SearchQuery(query_str=QUESTION))
    lifted = FusionRetriever.from_config(retrievers, config).retrieve(query)

    assert _ids(plain) == ["introduction", "prose"]
    assert _ids(lifted) == ["introduction", "table 1, first part"]  # lifted before the cut to candidate_k
    assert any("tables named by a top passage" in note for note in query.trace.get("fusion").notes)
