"""What each retrieval stage saw and did, in a form the UI and the eval scripts can show or dump.

A ``QueryTrace`` is a list of ``StageTrace`` records, one per stage run (``rewrite``, ``hyde``,
``vector``, ``bm25``, ``fusion``, ``threshold``, ``rerank``, ``mmr``, ``reflection``, ``final``). Each record
holds the candidates the stage produced, how long it took, and why it degraded if it did. ``details`` holds
what the query transforms and reflection produced (variants, a HyDE passage, graded rounds).
``to_dict()`` returns plain JSON-serializable data.

The trace travels with the query itself (``rag.retrieval.query.SearchQuery.trace``), so every retriever
and postprocessor of one request writes to that request's trace, whichever thread runs it; a component
reports into the innermost stage that is open (``QueryTrace.current``).

Example:
    trace = QueryTrace(query="what is BM25?")
    with trace.stage("vector") as stage:
        nodes = vector_retriever.retrieve(query)
        stage.set_candidates(nodes)
    json.dumps(trace.to_dict())
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from llama_index.core.schema import NodeWithScore

logger = logging.getLogger(__name__)

STAGE_NAMES = ("rewrite", "hyde", "vector", "bm25", "fusion", "threshold", "rerank", "mmr", "reflection", "final")


@dataclass
class Candidate:
    """One retrieved chunk as a stage saw it. ``rank`` is 1-based; ``page`` is the first page."""

    chunk_id: str
    doc_id: str
    file_name: str
    page: int | None
    rank: int
    score: float | None
    page_end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "file_name": self.file_name,
            "page": self.page,
            "page_end": self.page_end,
            "rank": self.rank,
            "score": self.score,
        }


def candidates_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Candidate]:
    """Summarise retrieved nodes (``Chunk.to_node()`` metadata) as ranked ``Candidate`` records.

    Missing metadata falls back to the node id for ``chunk_id`` and to empty values elsewhere, so nodes
    from any retriever can be traced.
    """
    candidates = []
    for rank, item in enumerate(nodes, start=1):
        meta = item.node.metadata or {}
        candidates.append(Candidate(
            chunk_id=str(meta.get("chunk_id") or item.node.node_id),
            doc_id=str(meta.get("doc_id", "")),
            file_name=str(meta.get("file_name", "")),
            page=_int_or_none(meta.get("page_start", meta.get("page"))),
            page_end=_int_or_none(meta.get("page_end")),
            rank=rank,
            score=_float_or_none(item.score),
        ))
    return candidates


@dataclass
class StageTrace:
    """One stage run.

    Args:
        name: The stage name, usually one of ``STAGE_NAMES``.
        candidates: What the stage produced, best first.
        duration_ms: Wall time of the stage. Defaults to 0.
        fallback_reason: Why the stage degraded or was skipped; empty when it ran normally.
        notes: Free-form remarks (parameters used, counts dropped, ...).
        error: ``"ExcType: message"`` when the stage raised.
    """

    name: str
    candidates: list[Candidate] = field(default_factory=list)
    duration_ms: float = 0.0
    fallback_reason: str = ""
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def set_candidates(self, nodes: Sequence[NodeWithScore]) -> None:
        self.candidates = candidates_from_nodes(nodes)

    def note(self, message: str) -> None:
        self.notes.append(message)

    def fallback(self, reason: str) -> None:
        """Record why the stage degraded; several reasons are joined with ``"; "``."""
        logger.info("stage %s degraded: %s", self.name, reason)
        self.fallback_reason = f"{self.fallback_reason}; {reason}" if self.fallback_reason else reason

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "duration_ms": round(float(self.duration_ms), 3),
            "fallback_reason": self.fallback_reason,
            "error": self.error,
            "notes": list(self.notes),
            "candidates": [c.to_dict() for c in self.candidates],
        }


@dataclass
class QueryTrace:
    """All stages of one query, in the order they ran. A stage name may appear more than once."""

    query: str = ""
    stages: list[StageTrace] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    _open: list[StageTrace] = field(default_factory=list, repr=False, compare=False)

    @property
    def current(self) -> StageTrace | None:
        """The innermost stage that is still running, or None."""
        return self._open[-1] if self._open else None

    def add(self, name: str, nodes: Sequence[NodeWithScore] | None = None, *, duration_ms: float = 0.0,
            fallback_reason: str = "", notes: Sequence[str] = ()) -> StageTrace:
        """Append a finished stage record and return it."""
        record = StageTrace(name=name, duration_ms=duration_ms, fallback_reason=fallback_reason,
                            notes=list(notes))
        if nodes is not None:
            record.set_candidates(nodes)
        self.stages.append(record)
        return record

    @contextmanager
    def stage(self, name: str) -> Iterator[StageTrace]:
        """Time a block as stage ``name``; the record is appended even if the block raises.

        An exception is noted in ``error`` and re-raised: deciding to degrade is the caller's job.
        """
        record = StageTrace(name=name)
        self.stages.append(record)
        self._open.append(record)
        start = time.perf_counter()
        try:
            yield record
        except BaseException as exc:
            record.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            record.duration_ms = (time.perf_counter() - start) * 1000.0
            self._open.remove(record)

    def get(self, name: str) -> StageTrace | None:
        """The latest record of stage ``name``, or None."""
        for record in reversed(self.stages):
            if record.name == name:
                return record
        return None

    @property
    def fallback_reasons(self) -> dict[str, str]:
        """Stage name -> reason, for every stage that degraded (the latest reason wins)."""
        return {s.name: s.fallback_reason for s in self.stages if s.fallback_reason}

    @property
    def total_ms(self) -> float:
        return sum(s.duration_ms for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "total_ms": round(self.total_ms, 3),
            "stages": [s.to_dict() for s in self.stages],
            "details": dict(self.details),
        }


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


def _float_or_none(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None
