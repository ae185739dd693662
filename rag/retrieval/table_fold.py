"""A table split into parts answers as one passage: parts found next to each other fold into the best one.

A table longer than ``ingest.table_chunk_tokens`` is stored as parts that repeat its caption and header row
(``rag.ingest.chunking``), so that each part is embedded and searched on its own rows. But the parts look
alike to both retrievers, and the part holding the row a question asks about often ranks just below one or
two of its siblings, which fill the first places with the right table and the wrong rows. So after fusion,
the parts of one table that are among the candidates and sit next to each other in the document
(consecutive chunks of kind table, same document, same caption and header row) fold into the best-ranked
of them: it keeps its slot and score and becomes one table, the first part's caption and header once and then
the rows of every part in document order (the answer's evidence fitting weighs each line on its own, and
captions repeated once per part would take its budget from the rows). Its offsets span the parts, so a
citation's quote from any row maps to the page (``rag.answer.locate``). The other parts leave the list, and
the candidates below them move up. A fold grows from the best-ranked part to the better-ranked of its two
neighbours among the candidates, one part at a time, while the parts hold at most
``retrieval.table_fold_tokens``; a part that is not among the candidates ends the fold on its side.
Prose, tables of one part, and the order of everything else are untouched.

Off by default: more tables reach the top results this way, but within the answer's small budget fewer of
their asked rows reach the model (docs/documents.md, ``fold55``).
"""

from __future__ import annotations

from typing import NamedTuple

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import annotate_node
from rag.retrieval.trace import StageTrace
from rag.text.language import count_tokens
from rag.text.table_text import is_separator_row, split_markdown_table

# parts are written one after another with at most a paragraph break between them; more means text between them
# (a page's running header) that the folded passage would not hold, so the fold stops there
_MAX_GAP = 2


class _Part(NamedTuple):
    position: int
    table: tuple  # (caption lines, header row): what every part of one table repeats
    tokens: int


def fold_table_parts(fused: list[NodeWithScore], max_tokens: int,
                     stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Fold the neighbouring parts of each split table among ``fused`` into its best-ranked part.

    Args:
        fused: The fused candidates (new nodes), best first.
        max_tokens: The most tokens a folded passage may hold (0 turns folding off).
        stage: The fusion stage, which notes the tables folded. Defaults to none.

    Returns:
        The candidates in the same order, each folded table in its best part's slot, its other parts gone.
    """
    if max_tokens <= 0:
        return fused
    parts: dict[tuple[str, int], _Part] = {}
    for position, item in enumerate(fused):
        metadata = item.node.metadata
        if metadata.get("kind") != "table" or metadata.get("index") is None:
            continue
        caption, rows = split_markdown_table(item.node.get_content())
        if rows:
            key = (str(metadata.get("doc_id", "")), int(metadata["index"]))
            parts[key] = _Part(position, (tuple(caption), tuple(rows[0])), count_tokens(item.node.get_content()))
    if len(parts) < 2:
        return fused

    folded: dict[int, NodeWithScore] = {}
    gone: set[int] = set()
    for (doc_id, index), part in sorted(parts.items(), key=lambda entry: entry[1].position):
        if part.position in gone:
            continue
        members, tokens = [index], part.tokens
        while True:
            sides = []
            below, above = members[0] - 1, members[-1] + 1
            for neighbour, lower, upper in ((below, below, members[0]), (above, members[-1], above)):
                candidate = parts.get((doc_id, neighbour))
                if (candidate is not None and candidate.table == part.table and candidate.position not in gone
                        and candidate.position not in folded and tokens + candidate.tokens <= max_tokens
                        and _adjacent(fused, parts[(doc_id, lower)], parts[(doc_id, upper)])):
                    sides.append((candidate, neighbour))
            if not sides:
                break
            chosen, neighbour = min(sides, key=lambda side: side[0].position)
            members = sorted([*members, neighbour])
            tokens += chosen.tokens
            gone.add(chosen.position)
        if len(members) > 1:
            folded[part.position] = _folded(fused, [parts[(doc_id, i)].position for i in members], part.position)
    if not folded:
        return fused
    if stage is not None:
        stage.note(f"{len(folded)} split table(s) folded into their best-ranked part "
                   f"({len(gone)} neighbouring part(s) joined them)")
    return [folded.get(position, item) for position, item in enumerate(fused) if position not in gone]


def _adjacent(fused: list[NodeWithScore], lower: _Part, upper: _Part) -> bool:
    """Whether part ``upper`` starts right where part ``lower`` ends (a paragraph break at most)."""
    end = int(fused[lower.position].node.metadata.get("char_end", 0))
    start = int(fused[upper.position].node.metadata.get("char_start", -1))
    return 0 <= start - end <= _MAX_GAP


def _body(part: str) -> str:
    """A later part's rows: what follows its header's separator line (the caption and header it repeats go)."""
    lines = part.splitlines()
    for number, line in enumerate(lines):
        if is_separator_row(line):
            return "\n".join(lines[number + 1:])
    return part


def _folded(fused: list[NodeWithScore], positions: list[int], best: int) -> NodeWithScore:
    """The best part widened to the table the parts at ``positions`` (in document order) make together."""
    nodes = [fused[p].node for p in positions]
    text = "\n".join([nodes[0].get_content(), *(_body(node.get_content()) for node in nodes[1:])])
    first, last = nodes[0].metadata, nodes[-1].metadata
    copy = annotate_node(fused[best], char_start=first["char_start"], char_end=last["char_end"],
                         page_start=min(int(n.metadata.get("page_start", 1)) for n in nodes),
                         page_end=max(int(n.metadata.get("page_end", 1)) for n in nodes), table_parts=len(nodes))
    copy.node = copy.node.model_copy(update={"text": text})
    return copy
