"""Table passages rank higher for a question that says it asks about a table.

"In the newlfm manual's table of letter and memo options, which option …", "hithesis 模板的字号表里，三号字对应多少
pt？": such a question names the words of a table's caption and rows, and so does the prose around the table, which
explains the same options in sentences. The embedder prefers the sentences and BM25 their length, so prose of the
neighbouring pages often ranks above the table the question points at. After fusion, when the question names a table
("table(s)" as a word, not "table of contents"; 表格, 表 before 中/里/裡/内/內 or a table number, 表 after 下/上/此/
该/該 — not 代表, 发表 or 表示, even before 中), every table chunk among the candidates gains
``retrieval.table_mention_share`` times the best fused score. Tables keep their order among themselves, so the right
table still has to beat the document's other tables on its own words; only prose moves below them. A question that
names no table, and a library without tables, rank as before.
"""

from __future__ import annotations

import re

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import best_first
from rag.retrieval.trace import StageTrace

_ENGLISH_RE = re.compile(r"\btables?\b(?!\s+of\s+contents)", re.IGNORECASE)
_CHINESE_RE = re.compile(r"(?<![代发發])表(?:格|\s*[中里裡内內]|\s*[0-9０-９A-Z一二三四五六七八九十])|[下上此该該]表(?![示达達明现現])")


def names_a_table(query: str) -> bool:
    """Whether the question says it asks about a table."""
    return bool(_ENGLISH_RE.search(query) or _CHINESE_RE.search(query))


def lift_tables_asked_for(fused: list[NodeWithScore], query: str, share: float,
                          stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Add ``share`` times the best fused score to every table chunk when the question names a table, then re-rank.

    Args:
        fused: The fused candidates (new nodes), best first.
        query: The question.
        share: What each table chunk gains, as a share of the best fused score (0: nothing changes).
        stage: The fusion stage, which notes how many tables rose. Defaults to none.
    """
    if share <= 0 or not fused or not names_a_table(query):
        return fused
    tables = [item for item in fused if item.node.metadata.get("kind") == "table"]
    if not tables:
        return fused
    lift = share * max(item.score or 0.0 for item in fused)
    for item in tables:
        item.score = (item.score or 0.0) + lift
    if stage is not None:
        stage.note(f"the question names a table: {len(tables)} table passage(s) gained {share:g} x the best score")
    return best_first(fused)
