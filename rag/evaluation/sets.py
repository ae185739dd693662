"""``EvalDataset``: one evaluation set in the shape every loader produces and every run reads."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace


@dataclass
class EvalDataset:
    """An evaluation set.

    Args:
        name: A short label (dataset name or file stem).
        corpus: doc_id -> {"title", "text"}.
        queries: qid -> question text.
        qrels: qid -> {doc_id: grade}; grade > 0 means relevant.
        gold_pages: qid -> expected 1-based pages (CSV sets only).
        skipped: reason -> how many items the loader left out (see the module docstring).
        split: Which questions these are (``test``, ``tune``, ``report``, ...); "" for all.
    """

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    gold_pages: dict[str, list[int]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    split: str = ""

    def skipped_note(self) -> str:
        """``"skipped 2 items: empty question x2"``, or "" when nothing was skipped."""
        if not self.skipped:
            return ""
        total = sum(self.skipped.values())
        return (f"skipped {total} item(s): "
                + ", ".join(f"{reason} x{count}" for reason, count in sorted(self.skipped.items())))

    def subset(self, n: int, seed: int = 0) -> EvalDataset:
        """The same corpus with ``n`` queries drawn at random (reproducibly); for quick runs."""
        if n >= len(self.queries):
            return self
        chosen = sorted(random.Random(seed).sample(sorted(self.queries), n))
        return replace(self, queries={q: self.queries[q] for q in chosen},
                       qrels={q: self.qrels[q] for q in chosen if q in self.qrels},
                       gold_pages={q: self.gold_pages[q] for q in chosen if q in self.gold_pages})

    def __repr__(self) -> str:
        return (f"EvalDataset(name={self.name!r}, docs={len(self.corpus)}, queries={len(self.queries)}, "
                f"qrels={sum(len(v) for v in self.qrels.values())})")
