"""Among the parts of one split table, the part whose rows hold the question's words takes the best slot.

A table longer than a chunk is split into parts that repeat its caption and header row
(``rag.ingest.chunking``). Both retrievers score the parts almost alike — the embedder reads the shared
caption and header, BM25 the words every part repeats — so for a question about one row the parts
often rank in an order that has nothing to do with it, and the part holding the row falls below the
cut while its siblings fill the first places ("学位论文一类的格式" under the eight-row table of
reference formats, "the key for the student number" under a two-part table of keys). So after fusion
the parts of one table (same document, first page, caption and header) that are among the candidates
keep the slots and scores they have between them, handed out again by what only some parts' rows hold:
the question's terms in a part's body (BM25's words, and the character pairs of Chinese, which a
short cell such as 学号 segments differently from the question), each shared out among the parts that
hold it. A term every part holds, or none, decides nothing; with nothing to decide, the order stays. No
passage outside a table, and no slot of another passage, changes.
"""

from __future__ import annotations

import re

from llama_index.core.schema import NodeWithScore

from rag.retrieval.trace import StageTrace
from rag.text.script import to_simplified
from rag.text.table_text import split_markdown_table
from rag.text.tokenizer import tokenize

_CJK_RUN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def order_table_parts(fused: list[NodeWithScore], query: str,
                      stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Re-deal each split table's slots among its parts by the question terms only some parts' rows hold.

    Args:
        fused: The fused candidates (new nodes), best first.
        query: The question.
        stage: The fusion stage, which notes the tables re-ordered. Defaults to none.
    """
    groups: dict[tuple, list[int]] = {}
    bodies: dict[int, set[str]] = {}
    for position, item in enumerate(fused):
        if item.node.metadata.get("kind") != "table":
            continue
        caption, rows = split_markdown_table(item.node.get_content())
        if len(rows) < 2:
            continue
        key = (item.node.metadata.get("doc_id"), item.node.metadata.get("page_start"), tuple(caption), tuple(rows[0]))
        groups.setdefault(key, []).append(position)
        bodies[position] = _terms(" ".join(cell for row in rows[1:] for cell in row))
    terms = sorted(_terms(query))
    ordered = list(fused)
    moved = 0
    for positions in groups.values():
        if len(positions) < 2:
            continue
        holders = {term: sum(term in bodies[p] for p in positions) for term in terms}
        deciding = {term: 1.0 / count for term, count in holders.items()
                    if 0 < count < len(positions)}
        if not deciding:
            continue
        match = {p: sum(weight for term, weight in deciding.items() if term in bodies[p]) for p in positions}
        best_first = sorted(positions, key=lambda p: (-match[p], p))  # ties keep their fused order
        if best_first == positions:
            continue
        scores = [fused[p].score for p in positions]
        for slot, part, score in zip(positions, best_first, scores):
            ordered[slot] = fused[part]
            ordered[slot].score = score
        moved += 1
    if moved and stage is not None:
        stage.note(f"parts of {moved} split table(s) re-ordered by the question terms their rows hold")
    return ordered


def _terms(text: str) -> set[str]:
    pairs = {run[i:i + 2] for run in _CJK_RUN_RE.findall(to_simplified(text)) for i in range(len(run) - 1)}
    return set(tokenize(text)) | pairs
