"""The plain data the answering side hands to the UI and the CLI.

Contract: every string in these objects is plain text exactly as the model or the document produced
it. Nothing is HTML-escaped and nothing is meant to be rendered as markup: a document containing
``<script>`` text arrives here as those characters, and the UI must display it as text (``st.text``,
``st.markdown`` with escaping, or ``html.escape`` before any ``unsafe_allow_html``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ChatTurn:
    """One earlier message of the conversation (``role`` is ``user`` or ``assistant``)."""

    role: str
    content: str


@dataclass
class Source:
    """A numbered source given to the LLM; ``[n]`` in the answer refers to it."""

    n: int
    chunk_id: str
    doc_id: str
    file_name: str
    page_start: int
    page_end: int
    text: str
    score: float | None = None
    # the passage's offsets in the document's text when they are not its chunk's: a split table's parts folded
    # into one passage (rag.retrieval.table_fold), which citations highlight over all its parts
    char_start: int | None = None
    char_end: int | None = None


@dataclass
class Citation:
    """A ``[n]`` marker resolved to the passage that supports it.

    Args:
        n: The source number used in the answer.
        page: The 1-based page of the first highlight (the chunk's first page when none was found).
        text: The quoted passage of the source that supports the citing sentence.
        highlights: ``[x0, y0, x1, y1]`` rectangles in PDF points (origin top-left) on ``page``.
        pages: Every ``(page, rects)`` pair when the passage spans a page break.
        inferred: True when the model wrote no marker and the source was matched by overlap.
    """

    n: int
    doc_id: str
    file_name: str
    page: int
    text: str
    highlights: list[list[float]]
    chunk_id: str
    sentence: str = ""
    pages: list[tuple[int, list[list[float]]]] = field(default_factory=list)
    inferred: bool = False


@dataclass
class AnswerResult:
    question: str
    answer: str
    abstained: bool
    citations: list[Citation]
    sources: list[Source]
    reflection: list[dict[str, Any]] = field(default_factory=list)
    groundedness: list[dict[str, Any]] = field(default_factory=list)
    verification: list[dict[str, Any]] = field(default_factory=list)
    draft: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    llm_backend: str = ""
    fallback_reason: str = ""
    error: str = ""
    standalone_question: str = ""
    used_knowledge_base: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` shape: plain JSON types only, pages as integers, rects as lists of 4 floats."""
        return {
            "question": self.question,
            "standalone_question": self.standalone_question,
            "answer": self.answer,
            "abstained": bool(self.abstained),
            "citations": [{
                "n": c.n, "doc_id": c.doc_id, "file_name": c.file_name, "page": int(c.page), "text": c.text,
                "highlights": [[round(float(v), 2) for v in rect] for rect in c.highlights],
                "chunk_id": c.chunk_id, "sentence": c.sentence, "inferred": c.inferred,
                "pages": [{"page": int(p), "highlights": [[round(float(v), 2) for v in r] for r in rects]}
                          for p, rects in c.pages],
            } for c in self.citations],
            "sources": [asdict(s) for s in self.sources],
            "reflection": list(self.reflection),
            "groundedness": list(self.groundedness),
            "verification": list(self.verification),
            "draft": self.draft,
            "timings": {k: (round(float(v), 1) if isinstance(v, float) else v) for k, v in self.timings.items()},
            "llm_backend": self.llm_backend,
            "fallback_reason": self.fallback_reason,
            "error": self.error,
            "used_knowledge_base": self.used_knowledge_base,
            "trace": self.trace,
        }
