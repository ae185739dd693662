"""Chunks to vectors: each chunk embedded by the model for its language, through the embedding cache."""

from __future__ import annotations

from typing import Callable

import numpy as np

from rag.documents import Chunk
from rag.index.embed_cache import EmbeddingCache
from rag.index.searchable import vector_groups
from rag.index.store import DocumentStore
from rag.models.embedding_router import EMBEDDING_TEXT_VERSION  # noqa: F401 - evaluation stores name it
from rag.text.script import to_simplified
from rag.text.table_text import table_outline

Progress = Callable[[str, float, str], None]  # (stage, fraction done 0..1, message)
_EMBED_PROGRESS_BATCH = 64


def embed_chunks(store: DocumentStore, chunks: list[Chunk], *, report: Progress | None = None,
                 cache: EmbeddingCache | None = None) -> dict[str, tuple[list[Chunk], np.ndarray]]:
    """Embed chunks with the models for their language (English: two by default), through the embedding cache.

    Returns model_id -> (chunks, vectors), ready for ``DocumentStore.write_chunks``.

    Args:
        store: Supplies the embedder router and, unless ``cache`` is given, the cache.
        chunks: The chunks to embed.
        report: Progress callback, called after each batch. Defaults to none.
        cache: Another embedding cache (benchmarks share one across temporary stores).
    """
    cache = cache or store.cache
    groups = vector_groups(store, chunks)
    done, total = 0, sum(len(group) for _, group in groups.values())
    by_model: dict[str, tuple[list[Chunk], np.ndarray]] = {}
    for model_id, (embedder, group) in groups.items():
        vectors = []
        for start in range(0, len(group), _EMBED_PROGRESS_BATCH):
            batch = [embedding_text(c) for c in group[start:start + _EMBED_PROGRESS_BATCH]]
            vectors.append(cache.embed(model_id, batch, embedder.get_text_embedding_batch))
            done += len(batch)
            if report:
                report("embed", done / total, f"Embedded {done}/{total} chunk vectors ({model_id})")
        by_model[model_id] = (group, np.concatenate(vectors))
    return by_model


def embedding_text(chunk: Chunk) -> str:
    """What the embedder reads for ``chunk``: its text, or for a table the outline of its words, in simplified script.

    A table's figures crowd its row labels out of the embedder's window (``rag.text.table_text``).
    Traditional Chinese is read as simplified, like the question (``EmbedderRouter.query_vector``), so a
    question in either script meets a document in either script the same way; the stored text stays
    as written.
    """
    return to_simplified(_as_written(chunk))


def script_changes_embedding(chunk: Chunk) -> bool:
    """Whether reading ``chunk`` in simplified script changed what the embedder reads: its vectors made
    before ``EMBEDDING_TEXT_VERSION`` 2 are of other text (``rag.ingest.embedding_upgrade``)."""
    written = _as_written(chunk)
    return to_simplified(written) != written


def _as_written(chunk: Chunk) -> str:
    if chunk.kind != "table":
        return chunk.text
    context = "\n".join(part for part in (chunk.context, chunk.heading_path) if part)
    return table_outline(chunk.text, context=context)
