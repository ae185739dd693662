"""Passages that read as a table of contents rank below the passages they point to.

A manual's contents, list of tables or list of figures names every section and table in a few words, often the very
words a question uses ("chemgreek's table of letters" meets "List of Tables … Predefined mappings"), so both
retrievers rank it high; yet all it says is a page number. RAGFlow's book and manual parsers drop such pages; here
they stay searchable (a question may ask where something is), and after fusion a passage whose lines are mostly
entries led to a page number by dot leaders ("Predefined mappings . . . . . 8", "绪论……1"), with the bare page and
section numbers LaTeX sets on lines of their own, keeps
``retrieval.contents_share`` of its fused score, unless the question asks about contents or pages. Only the candidates
retrieval found move; a library without such passages ranks as before.
"""

from __future__ import annotations

import re

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import best_first
from rag.retrieval.trace import StageTrace

MIN_LEADERS = 3  # entries led to their page numbers; one or two dotted lines are a form's blanks or an ellipsis
LEADER_SHARE = 0.2  # of the passage's lines: an entry whose page number sits on a line of its own takes two
# of its lines, leaders and lines that are a bare page or section number ("12", "xiv", "2.1", "B."): a LaTeX
# contents puts a chapter's number, title and page on lines of their own, and its sections' leaders only
ENTRY_SHARE = 0.4
_LEADER_RE = re.compile(r"(?:\.\s?){5,}|…{2,}|(?:[·．]\s?){5,}|⋯{2,}")
_NUMBER_LINE_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[ivxlc]{1,6}|[IVXLC]{1,6}|[A-Z]\.)$")
_ASKS_WHERE_RE = re.compile(r"\bcontents\b|\bpages?\b|\blist of (?:tables|figures)\b|目\s*[录錄]|[页頁]",
                            re.IGNORECASE)


def reads_as_contents(text: str) -> bool:
    """Whether a passage is mostly contents entries: ``MIN_LEADERS`` lines or more with dot leaders, making up at
    least ``LEADER_SHARE`` of its lines, or ``ENTRY_SHARE`` with the lines holding a bare page or section number."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    leaders = sum(1 for line in lines if _LEADER_RE.search(line))
    if leaders < MIN_LEADERS:
        return False
    numbers = sum(1 for line in lines if _NUMBER_LINE_RE.match(line))
    return leaders >= LEADER_SHARE * len(lines) or leaders + numbers >= ENTRY_SHARE * len(lines)


def asks_where(query: str) -> bool:
    """Whether the question asks about contents or pages, which a table of contents answers."""
    return bool(_ASKS_WHERE_RE.search(query))


def demote_contents(fused: list[NodeWithScore], query: str, share: float,
                    stage: StageTrace | None = None) -> list[NodeWithScore]:
    """Scale the fused score of every contents passage by ``share``, then re-rank.

    Args:
        fused: The fused candidates (new nodes), best first.
        query: The question.
        share: What a contents passage keeps of its fused score (1: nothing changes).
        stage: The fusion stage, which notes how many passages moved. Defaults to none.
    """
    if share >= 1 or not fused or asks_where(query):
        return fused
    demoted = 0
    for item in fused:
        if reads_as_contents(item.node.get_content()):
            item.score = (item.score or 0.0) * share
            demoted += 1
    if not demoted:
        return fused
    if stage is not None:
        stage.note(f"{demoted} table-of-contents passage(s) kept {share:g} of their score")
    return best_first(fused)
