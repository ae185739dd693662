"""Among the parts of one split table, the part whose rows hold the question's words takes the best slot."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from rag.retrieval.table_parts import order_table_parts
from rag.retrieval.trace import StageTrace
from tests.rag.retrieval.test_fusion import StaticRetriever

KEYS = "表1 xmusetup 里的键值\n| 键 | 解释 | 示例 |\n| --- | --- | --- |\n"
FORMATS = "Table 1: Reference formats\n| Type | Format |\n| --- | --- |\n"


def _node(node_id: str, score: float, text: str, kind: str = "table", doc_id: str = "d", page: int = 5,
          ) -> NodeWithScore:
    meta = {"chunk_id": node_id, "doc_id": doc_id, "page_start": page, "page_end": page, "kind": kind}
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata=meta), score=score)


def _candidates() -> list[NodeWithScore]:
    return [
        _node("keys, first part", 0.9, KEYS + "| team | 所在课题组 | 理论物理 |\n| title | 论文题目 | 题目 |"),
        _node("prose", 0.8, "xmusetup 是信息录入命令，其参数是一个键值列表。", kind="text"),
        _node("keys, second part", 0.7, KEYS + "| studentnumber | 学号 | 1972015xxxxxx |\n| name | 姓名 | 张三 |"),
        _node("formats, first part", 0.6, FORMATS + "| thesis | Author. Title [D]. Place: School, year |"),
        _node("formats, second part", 0.5, FORMATS + "| patent | Applicant. Title: country, number [P]. |"),
    ]


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_the_part_holding_the_questions_row_takes_the_best_slot_of_its_table() -> None:
    stage = StageTrace(name="fusion")
    ordered = order_table_parts(_candidates(), "xmusetup 键值表里填写学号的键，示例值是什么？", stage=stage)

    assert _ids(ordered) == ["keys, second part", "prose", "keys, first part", "formats, first part",
                             "formats, second part"]
    assert [n.score for n in ordered] == [0.9, 0.8, 0.7, 0.6, 0.5]  # the slots keep their scores
    assert any("re-ordered" in note for note in stage.notes)


def test_parts_of_another_table_and_prose_keep_their_slots() -> None:
    ordered = order_table_parts(_candidates(), "What is the format of a patent reference?")

    assert _ids(ordered) == ["keys, first part", "prose", "keys, second part", "formats, second part",
                             "formats, first part"]


def test_a_term_every_part_holds_decides_nothing() -> None:
    question = "In the xmusetup table, what is the 示例 of each key?"  # words of the shared caption and header only
    assert _ids(order_table_parts(_candidates(), question)) == _ids(_candidates())


def test_parts_holding_a_distinguishing_term_keep_their_fused_order_among_themselves() -> None:
    parts = [_node("journal", 0.9, FORMATS + "| journal | volume |"),
             _node("thesis", 0.8, FORMATS + "| thesis | country |"),
             _node("patent", 0.7, FORMATS + "| patent | country |")]
    assert _ids(order_table_parts(parts, "the country of a patent")) == ["thesis", "patent", "journal"]


def test_fusion_orders_a_tables_parts_before_the_cut() -> None:
    hits = _candidates()
    retrievers = {"vector": StaticRetriever(hits), "bm25": StaticRetriever(hits)}
    config = RetrievalConfig(top_k=1, candidate_k=1, fusion="weighted")
    query = SearchQuery(query_str="xmusetup 键值表里填写学号的键，示例值是什么？")

    found = FusionRetriever.from_config(retrievers, config).retrieve(query)

    assert _ids(found)[0] == "keys, second part"

