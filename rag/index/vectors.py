"""Chroma collections holding chunk vectors, one collection per embedding model.

Chunks are embedded by the model that reads their language (see ``EmbeddingConfig``), and vectors
from different models live in different spaces, so each model gets its own collection named
``<collection>__<model_id>``. The same code serves an embedded ``PersistentClient`` and a
``chroma run`` server through ``HttpClient``; ``ChromaConnection`` keeps an embedded folder's view
current when other processes write to it.

Writes must hold the library's write lock (the store takes it). Reads never create a collection and
never return a chunk of a document that ``hidden`` names (unfinished, failed or being deleted): such
hits are dropped and, if any were, the query runs again excluding those documents, so the common case
(nothing hidden in the results) costs one query.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from rag.index.chroma_connection import ChromaConnection, connect  # noqa: F401 - connect is re-exported
from rag.index.failpoints import reached

logger = logging.getLogger(__name__)
_ADD_BATCH = 4000  # below Chroma's max batch of 5,461
_READ_WAIT_S = 2.0  # how long a query waits to refresh a stale view before using the previous one
_SAVE_EVERY = 2  # a sync_threshold this low saves the graph after every write of two or more vectors


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float  # cosine similarity, 1 - cosine distance
    text: str
    metadata: dict[str, Any]


class VectorStore:
    """Adds, deletes and searches chunk vectors across the per-model collections.

    Args:
        connection: The folder's Chroma connection.
        collection_prefix: ``storage.collection``.
        hidden: Documents reads must not return (called per query; cache inside). Defaults to none.
    """

    def __init__(self, connection: ChromaConnection, collection_prefix: str, *,
                 hidden: Callable[[], frozenset[str]] | None = None) -> None:
        self._conn = connection
        self._prefix = collection_prefix
        self._hidden = hidden or frozenset
        self._version: tuple[int, int] = (-1, -1)
        self._collections: dict[str, Any] = {}
        # listing collections and counting cost a round-trip each; writes and reopening refresh them
        self._model_ids: list[str] | None = None
        self._counts: dict[str, int] = {}

    def collection_name(self, model_id: str) -> str:
        return f"{self._prefix}__{re.sub(r'[^A-Za-z0-9._-]', '-', model_id)}"[:512]

    # -- reads --------------------------------------------------------------------------------

    def model_ids(self) -> list[str]:
        """Models that have vectors stored under this prefix (cached until anything writes)."""
        self._conn.refresh(wait=_READ_WAIT_S)
        with self._conn.using() as (client, version):
            self._follow(version)
            if self._model_ids is None:
                self._model_ids = self._list_model_ids(client)
            return list(self._model_ids)

    def count(self, model_id: str | None = None) -> int:
        models = [model_id] if model_id else self.model_ids()
        self._conn.refresh(wait=_READ_WAIT_S)
        with self._conn.using() as (client, version):
            self._follow(version)
            return sum(self._count(client, m) for m in models)

    def query(self, model_id: str, embedding: Sequence[float], k: int, *, doc_ids: Iterable[str] | None = None,
              language: str | None = None, not_language: str | None = None) -> list[VectorHit]:
        """The ``k`` nearest chunks in ``model_id``'s space, of ``doc_ids`` (None: all), and only of chunks in
        ``language`` / not in ``not_language`` when given (one space can hold two languages' chunks)."""
        hidden = self._hidden()
        wanted = None if doc_ids is None else [d for d in doc_ids if d not in hidden]
        if wanted is not None and not wanted:
            return []
        fresh = self._conn.refresh(wait=_READ_WAIT_S)
        with self._conn.using() as (client, version):
            self._follow(version)
            collection = self._existing(client, model_id)
            total = self._count(client, model_id) if collection is not None else 0
            if total == 0:
                return []
            scope = [{"language": language}] if language else []
            scope += [{"language": {"$ne": not_language}}] if not_language else []
            documents = [{"doc_id": {"$in": wanted}}] if wanted is not None else []
            try:
                hits = _query(collection, embedding, min(k, total), _all_of(documents + scope))
                if any(_hidden_hit(h, hidden) for h in hits):
                    documents = documents or [{"doc_id": {"$nin": sorted(hidden)}}]
                    hits = _query(collection, embedding, min(k, total), _all_of(documents + scope))
            except Exception as exc:  # noqa: BLE001 - Chroma raises plain Exception subclasses
                if fresh:
                    raise
                raise RuntimeError("the vector index is being changed by another process; "
                                   f"vector search is skipped for this query ({exc})") from exc
            return [h for h in hits if not _hidden_hit(h, hidden)]

    def doc_ids(self, model_id: str) -> set[str]:
        """The documents that have vectors of ``model_id``."""
        return set(self.chunk_ids_by_doc(model_id))

    def chunk_ids_by_doc(self, model_id: str) -> dict[str, set[str]]:
        """Every chunk id of ``model_id`` per document (for consistency checks)."""
        self._conn.refresh(wait=_READ_WAIT_S)
        with self._conn.using() as (client, version):
            self._follow(version)
            collection = self._existing(client, model_id)
            result = collection.get(include=["metadatas"]) if collection is not None else {"ids": [], "metadatas": []}
        found: dict[str, set[str]] = {}
        for chunk_id, metadata in zip(result["ids"], result["metadatas"]):
            if metadata and metadata.get("doc_id"):
                found.setdefault(str(metadata["doc_id"]), set()).add(chunk_id)
        return found

    def get(self, model_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> dict[str, dict[str, Any]]:
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        self._conn.refresh(wait=_READ_WAIT_S)
        with self._conn.using() as (client, version):
            self._follow(version)
            collection = self._existing(client, model_id)
            if collection is None:
                return {}
            result = collection.get(ids=list(ids), include=include)
        found = {}
        for i, chunk_id in enumerate(result["ids"]):
            entry = {"text": result["documents"][i], "metadata": result["metadatas"][i]}
            if with_embeddings:
                entry["embedding"] = list(result["embeddings"][i])
            found[chunk_id] = entry
        return found

    # -- writes (the caller holds the library's write lock) -------------------------------------

    def add(self, model_id: str, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
            texts: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        self._conn.begin_write()
        with self._conn.using() as (client, version):
            self._follow(version)
            # embedding_function=None: Chroma's default would try to download an ONNX model
            collection = self._collections.get(model_id) or client.get_or_create_collection(
                self.collection_name(model_id), embedding_function=None,
                metadata={"hnsw:space": "cosine", "model_id": model_id})
            self._collections[model_id] = collection
            self._conn.created(collection.name)
            self._forget_listing()
            for start in range(0, len(ids), _ADD_BATCH):
                end = start + _ADD_BATCH
                collection.upsert(ids=list(ids[start:end]),
                                  embeddings=[list(map(float, e)) for e in embeddings[start:end]],
                                  documents=list(texts[start:end]), metadatas=list(metadatas[start:end]))
                reached("vectors.batch_added")

    def delete_document(self, doc_id: str) -> None:
        self._delete(where={"doc_id": doc_id})

    def delete_chunks(self, ids: Sequence[str]) -> None:
        """Remove the vectors of ``ids`` from every model's collection (ids a collection lacks are ignored)."""
        if ids:
            self._delete(ids=list(ids))

    def _delete(self, **which: Any) -> None:
        """Delete what ``which`` names (Chroma's ``where=`` or ``ids=``) from every model's collection."""
        self._conn.begin_write()
        with self._conn.using() as (client, version):
            self._follow(version)
            for model_id in self._list_model_ids(client):
                collection = self._existing(client, model_id)
                if collection is not None:
                    collection.delete(**which)
                    reached("vectors.deleted")
            self._forget_listing()

    def save_graphs_on_open(self) -> bool:
        """Have Chroma save each collection's whole HNSW graph the next time a process opens it; returns
        whether any collection changed.

        Embedded Chroma saves a graph only every 1,000 added vectors, and every open rebuilds the graph
        of the vectors added since, inserting them in parallel threads, so each process searches a
        slightly different approximate graph and a ranking can change from run to run. Once the whole
        graph is saved, every later process loads that same graph. Saving costs a write of the whole
        graph after each write, so this is for libraries written once and searched many times
        (evaluation corpora).
        """
        changed = False
        self._conn.begin_write()
        with self._conn.using() as (client, version):
            self._follow(version)
            for model_id in self._list_model_ids(client):
                collection = self._existing(client, model_id)
                if collection is None:
                    continue
                hnsw = (collection.configuration_json or {}).get("hnsw") or {}
                if hnsw.get("sync_threshold", _SAVE_EVERY) > _SAVE_EVERY:
                    collection.modify(configuration={"hnsw": {"sync_threshold": _SAVE_EVERY}})
                    changed = True
        return changed

    # -- internals ----------------------------------------------------------------------------

    def _follow(self, version: tuple[int, int]) -> None:
        """Drop what was cached from an older client (reopened since) or before any store's write."""
        if version != self._version:
            if version[0] != self._version[0]:
                self._collections = {}
            self._version = version
            self._forget_listing()

    def _existing(self, client: Any, model_id: str) -> Any:
        if model_id not in self._collections:
            if not self._conn.readable(self.collection_name(model_id)):
                return None  # made by another process since this view was loaded; seen after a refresh
            try:
                self._collections[model_id] = client.get_collection(self.collection_name(model_id),
                                                                    embedding_function=None)
            except Exception:  # noqa: BLE001 - chromadb raises NotFoundError/ValueError by version
                return None
        return self._collections[model_id]

    def _list_model_ids(self, client: Any) -> list[str]:
        ids = []
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if name.startswith(self._prefix + "__") and self._conn.readable(name):
                model_id = (client.get_collection(name, embedding_function=None).metadata or {}).get("model_id")
                if model_id:
                    ids.append(model_id)
        return sorted(ids)

    def _forget_listing(self) -> None:
        self._model_ids = None
        self._counts = {}

    def _count(self, client: Any, model_id: str) -> int:
        if model_id not in self._counts:
            collection = self._existing(client, model_id)
            self._counts[model_id] = collection.count() if collection is not None else 0
        return self._counts[model_id]


def _all_of(conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A Chroma ``where`` requiring every condition (Chroma wants ``$and`` only for two or more)."""
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


def _query(collection: Any, embedding: Sequence[float], n: int, where: dict | None) -> list[VectorHit]:
    result = collection.query(query_embeddings=[list(map(float, embedding))], n_results=n, where=where,
                              include=["documents", "metadatas", "distances"])
    return [
        VectorHit(chunk_id, 1.0 - float(distance), text or "", dict(metadata or {}))
        for chunk_id, distance, text, metadata in zip(
            result["ids"][0], result["distances"][0], result["documents"][0], result["metadatas"][0])
    ]


def _hidden_hit(hit: VectorHit, hidden: frozenset[str]) -> bool:
    # a hit without metadata is a chunk deleted since this process's view was loaded
    doc_id = hit.metadata.get("doc_id")
    return not doc_id or str(doc_id) in hidden
