"""Table passages whose row the question names word for word rank higher after fusion.

A question about a table cell names the cell's row ("What was Freight revenue in …", "2019年营业收入是多少元")
and its period, rarely anything else the table holds. Both retrievers underrate the one table that has
that row: BM25 normalises by length (a statement of operations has 20 rows, an MD&A table about one
expense has two), and the embedder averages over every row label of the outline. Running text and
small tables that repeat the question's words outrank it. So after fusion, a table chunk holding a row
label the question names exactly (``rag.text.table_text.named_row_label``) gains
``retrieval.table_row_boost`` times the best fused score (so it means the same under weighted and RRF
fusion); prose passages and tables without such a row keep their
scores, and a library without tables ranks exactly as before.

A table whose short caption the question names ("37、销售费用" for "销售费用里，产品仓储和运输花了多少钱",
``named_title``) counts as well, one character more specific than a row of the same label: the
question breaks that item down, and the statement rows that merely total it are not what it asks.
"""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import best_first
from rag.retrieval.trace import StageTrace
from rag.text.table_text import named_row_label, named_title


def boost_named_rows(fused: list[NodeWithScore], query: str, boost: float,
                     stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Raise table chunks holding a row the question names word for word, then re-rank.

    The table naming the longest such label ("freight revenue" over "freight") gains ``boost`` times the
    best fused score, the others their label's share of that: the most specific row the question names wins.

    Args:
        fused: The fused candidates (new nodes), best first.
        query: The question.
        boost: What the most specific named row adds, as a share of the best fused score (0: nothing changes).
        stage: The fusion stage, which notes the named rows. Defaults to none.
    """
    if boost <= 0 or not query:
        return fused
    named: dict[str, str] = {}
    specificity: dict[str, int] = {}
    for item in fused:
        if item.node.metadata.get("kind") != "table":
            continue
        text, context = item.node.get_content(), item.node.metadata.get("context", "")
        row, title = named_row_label(query, text, context), named_title(query, text, context)
        named[item.node.node_id] = title if title and len(title) >= len(row) else row
        specificity[item.node.node_id] = max(len(row), len(title) + 1 if title else 0)
    longest = max(specificity.values(), default=0)
    if not longest:
        return fused
    top = max(item.score or 0.0 for item in fused)
    for item in fused:
        length = specificity.get(item.node.node_id, 0)
        if length:
            item.score = (item.score or 0.0) + boost * top * length / longest
    if stage is not None:
        stage.note(f"table rows or titles named by the question (+{boost} x the best score for the longest): "
                   + ", ".join(sorted({label for label in named.values() if label})))
    return best_first(fused)
