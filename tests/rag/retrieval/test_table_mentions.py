"""A question that says it asks about a table lifts the table passages among its candidates above prose."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from rag.retrieval.table_mentions import lift_tables_asked_for, names_a_table
from tests.rag.retrieval.passages import ids, passage
from tests.rag.retrieval.test_fusion import StaticRetriever

QUESTION = "In the newlfm manual's table of letter and memo options, which option puts the date first?"
OPTIONS_PROSE = "The letter options orderfromdateto and orderdatefromto set the order of the date and addresses."
OPTIONS_TABLE = ("Table 1: Letter and memo structures\n| Class | D | F | T | Option name |\n| --- | --- | --- | --- | --- |\n"
                 "| letter | 1 | 2 | 3 | orderdatefromto |")
OTHER_TABLE = "Table 2: Fonts\n| Option | Font |\n| --- | --- |\n| sans | Helvetica |"



def _candidates() -> list[NodeWithScore]:
    return [passage("prose", 0.9, OPTIONS_PROSE), passage("more prose", 0.8, "Memo options follow."),
            passage("fonts table", 0.7, OTHER_TABLE, kind="table"),
            passage("options table", 0.6, OPTIONS_TABLE, kind="table")]



@pytest.mark.parametrize("question", [
    QUESTION, "What do the tables in section 3 list?", "Per Table 2, which font is sans?",
    "hithesis 模板的字号表里，三号字对应多少 pt？", "在表格中，三号字是多少？", "表 5.1 中报纸文章支持哪些 field？",
    "见下表，默认值是多少？", "man 章節表中第 9 節的描述是什麼？", "依該表，預設值為何？",
])
def test_questions_that_name_a_table(question: str) -> None:
    assert names_a_table(question)


@pytest.mark.parametrize("question", [
    "Which option puts the date first?", "What page does the table of contents give for Item 3?",
    "Is the timetable on page 4?", "这位代表发表了什么观点？", "哪位选手代表中国参赛？", "论文发表中遇到了什么问题？", "以下表示默认值的是哪个？", "表示日期的选项是什么？",
])
def test_questions_that_name_none(question: str) -> None:
    assert not names_a_table(question)


def test_tables_rise_above_prose_and_keep_their_own_order() -> None:
    lifted = lift_tables_asked_for(_candidates(), QUESTION, 0.35)
    assert ids(lifted) == ["fonts table", "options table", "prose", "more prose"]
    assert lifted[0].score == pytest.approx(0.7 + 0.35 * 0.9)


def test_nothing_moves_without_a_share_a_named_table_or_a_table_passage() -> None:
    before = ids(_candidates())
    assert ids(lift_tables_asked_for(_candidates(), QUESTION, 0.0)) == before
    assert ids(lift_tables_asked_for(_candidates(), "Which option puts the date first?", 0.35)) == before
    prose_only = [item for item in _candidates() if item.node.metadata["kind"] == "text"]
    assert ids(lift_tables_asked_for(prose_only, QUESTION, 0.35)) == ["prose", "more prose"]
    assert lift_tables_asked_for([], QUESTION, 0.35) == []


def test_fusion_lifts_the_tables_before_the_cut_and_says_so_in_the_trace() -> None:
    hits = _candidates()
    retrievers = {"vector": StaticRetriever(hits), "bm25": StaticRetriever(hits)}
    # the other table boosts off: the question names the options table's "letter" row
    config = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted", table_mention_share=0.35,
                             table_row_boost=0.0, table_reference_share=0.0)
    query = SearchQuery(query_str=QUESTION)

    plain = FusionRetriever.from_config(retrievers, config, table_mention_share=0.0).retrieve(
        SearchQuery(query_str=QUESTION))
    lifted = FusionRetriever.from_config(retrievers, config).retrieve(query)

    assert ids(plain) == ["prose", "more prose"]
    # min-max fused scores 1, 2/3, 1/3, 0: the first table gains 0.35 and passes the second prose passage, before
    # the cut to candidate_k
    assert ids(lifted) == ["prose", "fonts table"]
    assert any("the question names a table" in note for note in query.trace.get("fusion").notes)
