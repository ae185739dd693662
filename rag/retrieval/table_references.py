"""A table that a top passage names ("presented in Table 1", "表1中是有的值") ranks right below that passage.

A question that describes a cell instead of quoting its row ("which equation gives the residual
covariance with no degrees-of-freedom correction?") shares few words with the table: its caption and
row labels are terse ("Table 1: Possible values of argument methodResidCov", "noDfCor | 37"). The
paragraph that introduces the table shares many, and both retrievers rank it first. So after fusion,
a table chunk of the same document, at most ``MAX_PAGES_AWAY`` pages from a top passage that names its
caption label, gains that passage's score times ``retrieval.table_reference_share``, scaled by its own
score against the best part of the same table (a table split into parts lifts its best-matching part
most, not every part alike). The page limit is there because labels repeat: appendices and chapters
number their tables afresh, and a paper's "Table 3" on page 9 is not its appendix's "Table 3" on
page 18; a float is set within a page or two of where the text first names it.
Only candidates retrieval already found move; a library without labelled tables ranks as before.
"""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import best_first, doc_id_of
from rag.retrieval.trace import StageTrace
from rag.text.table_captions import caption_label_key, referenced_labels
from rag.text.table_text import split_markdown_table

# the passages that may lift a table: the first few, whose match the fused scores vouch for
REFERRING_RANKS = 5
MAX_PAGES_AWAY = 2


def boost_referenced_tables(fused: list[NodeWithScore], share: float,
                            stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Raise the table chunks that one of the first ``REFERRING_RANKS`` passages names by caption label.

    Args:
        fused: The fused candidates (new nodes), best first.
        share: The referring passage's score share the best part of a named table reaches (0: nothing changes).
        stage: The fusion stage, which notes the tables named. Defaults to none.
    """
    if share <= 0:
        return fused
    tables: dict[tuple[str, str], list[NodeWithScore]] = {}
    for item in fused:
        label = caption_label(item)
        if label:
            tables.setdefault((doc_id_of(item), label), []).append(item)
    if not tables:
        return fused
    lifted: dict[str, float] = {}
    named: set[str] = set()
    for referrer in fused[:REFERRING_RANKS]:
        if referrer.node.metadata.get("kind") == "table":
            continue
        for label in referenced_labels(referrer.node.get_content()):
            parts = [part for part in tables.get((doc_id_of(referrer), label), [])
                     if _pages_apart(part, referrer) <= MAX_PAGES_AWAY]
            best_own = max((part.score or 0.0 for part in parts), default=0.0)
            for part in parts:
                reached = share * (referrer.score or 0.0) * ((part.score or 0.0) / best_own if best_own > 0 else 1.0)
                lifted[part.node.node_id] = max(lifted.get(part.node.node_id, 0.0), reached)
                named.add(label)
    if not lifted:
        return fused
    for item in fused:
        item.score = max(item.score or 0.0, lifted.get(item.node.node_id, 0.0))
    if stage is not None:
        stage.note(f"tables named by a top passage (lifted to {share} x its score): " + ", ".join(sorted(named)))
    return best_first(fused)


def caption_label(item: NodeWithScore) -> str:
    """A table chunk's caption label ("Table 1: …" -> "1", "续表 3-1" -> "3-1"); "" for other chunks."""
    if item.node.metadata.get("kind") != "table":
        return ""
    caption, _ = split_markdown_table(item.node.get_content())
    for line in [*caption, *str(item.node.metadata.get("context", "")).splitlines()]:
        label = caption_label_key(line)
        if label:
            return label
    return ""


def _pages_apart(first: NodeWithScore, second: NodeWithScore) -> int:
    pages = [int(item.node.metadata.get(key) or 0) for item in (first, second) for key in ("page_start", "page_end")]
    return max(0, pages[0] - pages[3], pages[2] - pages[1])
