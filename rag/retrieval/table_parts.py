"""Among the parts of one split table, parts whose rows hold the question's distinguishing words come first.

A table longer than a chunk is split into parts that repeat its caption and header row
(``rag.ingest.chunking``). Both retrievers score the parts almost alike — the embedder reads the shared
caption and header, BM25 the words every part repeats — so for a question about one row the parts often
rank in an order that has nothing to do with it, and the part holding the row falls below the cut while
its siblings fill the first places ("the key for the student number" under a two-part table of keys).
So after fusion the parts of one table (same document, first page, caption and header) that are among
the candidates keep the slots and scores they have between them, and the parts whose body rows hold a
distinguishing term of the question — a search term some of the parts hold but not all — take the
first of those slots, in their fused order; the parts holding none follow, in theirs. A Chinese term is
looked for as a substring of the simplified rows, since a short cell such as 学号 segments differently
on its own than inside the question; other terms as BM25 tokens of the rows. It runs before the
named-row boost and the reference lift, which outweigh it. No passage outside a table, and no slot of
another passage, changes.
"""

from __future__ import annotations

from typing import NamedTuple

from llama_index.core.schema import NodeWithScore

from rag.retrieval.trace import StageTrace
from rag.text.script import to_simplified
from rag.text.table_text import CJK_RE, split_markdown_table
from rag.text.tokenizer import tokenize


class _Body(NamedTuple):
    tokens: set[str]
    simplified: str

    def holds(self, term: str) -> bool:
        return term in self.tokens or (CJK_RE.search(term) is not None and term in self.simplified)


def order_table_parts(fused: list[NodeWithScore], query: str,
                      stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Give each split table's first slots to its parts whose rows hold a term that distinguishes them.

    Args:
        fused: The fused candidates (new nodes), best first.
        query: The question.
        stage: The fusion stage, which notes the tables re-ordered. Defaults to none.
    """
    groups: dict[tuple, list[int]] = {}
    texts: dict[int, str] = {}
    for position, item in enumerate(fused):
        if item.node.metadata.get("kind") != "table":
            continue
        caption, rows = split_markdown_table(item.node.get_content())
        if len(rows) < 2:
            continue
        key = (item.node.metadata.get("doc_id"), item.node.metadata.get("page_start"), tuple(caption), tuple(rows[0]))
        groups.setdefault(key, []).append(position)
        texts[position] = " ".join(cell for row in rows[1:] for cell in row)
    split_tables = [positions for positions in groups.values() if len(positions) >= 2]
    terms = sorted(set(tokenize(query))) if query and split_tables else []
    # only the parts of split tables are tokenized: most table candidates are a table's only part here
    bodies = {p: _Body(set(tokenize(texts[p])), to_simplified(texts[p]))
              for positions in split_tables for p in positions}
    ordered = list(fused)
    moved = 0
    for positions in split_tables:
        deciding = [term for term in terms if 0 < sum(bodies[p].holds(term) for p in positions) < len(positions)]
        best_first = sorted(positions, key=lambda p: (not any(bodies[p].holds(term) for term in deciding), p))
        if best_first == positions:
            continue
        scores = [fused[p].score for p in positions]
        for slot, part, score in zip(positions, best_first, scores):
            ordered[slot] = fused[part]
            ordered[slot].score = score
        moved += 1
    if moved and stage is not None:
        stage.note(f"parts of {moved} split table(s) re-ordered: those holding a distinguishing question term first")
    return ordered
