"""Chroma collections holding chunk vectors, one collection per embedding model.

Chunks are embedded by the model that reads their language (see ``EmbeddingConfig``), and vectors
from different models live in different spaces, so each model gets its own collection named
``<collection>__<model_id>``. The same code serves an embedded ``PersistentClient`` and a
``chroma run`` server through ``HttpClient``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import chromadb
from chromadb.config import Settings as ChromaSettings

from rag.config import StorageConfig

logger = logging.getLogger(__name__)
_ADD_BATCH = 4000  # below Chroma's max batch of 5,461


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    score: float  # cosine similarity, 1 - cosine distance
    text: str
    metadata: dict[str, Any]


def connect(storage: StorageConfig) -> chromadb.ClientAPI:
    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if storage.chroma_mode == "server":
        try:
            return chromadb.HttpClient(host=storage.chroma_host, port=storage.chroma_port, settings=settings)
        except Exception as exc:  # chromadb raises plain ValueError/ConnectionError variants
            raise ConnectionError(
                f"Chroma server at {storage.chroma_host}:{storage.chroma_port} did not answer ({exc}); "
                "start it with `chroma run --path DIR --host HOST --port PORT` or set storage.chroma_mode=embedded"
            ) from exc
    path = Path(storage.data_dir).expanduser() / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class VectorStore:
    """Adds, deletes and searches chunk vectors across the per-model collections."""

    def __init__(self, client: chromadb.ClientAPI, collection_prefix: str) -> None:
        self._client = client
        self._prefix = collection_prefix
        self._collections: dict[str, Any] = {}
        # listing collections and counting cost a round-trip each; our own writes refresh them
        self._model_ids: list[str] | None = None
        self._counts: dict[str, int] = {}

    def collection_name(self, model_id: str) -> str:
        return f"{self._prefix}__{re.sub(r'[^A-Za-z0-9._-]', '-', model_id)}"[:512]

    def _collection(self, model_id: str) -> Any:
        if model_id not in self._collections:
            # embedding_function=None: Chroma's default would try to download an ONNX model
            self._collections[model_id] = self._client.get_or_create_collection(
                self.collection_name(model_id),
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "model_id": model_id},
            )
        return self._collections[model_id]

    def model_ids(self) -> list[str]:
        """Models that have vectors stored under this prefix (cached; our own writes refresh it)."""
        if self._model_ids is None:
            self._model_ids = self._list_model_ids()
        return list(self._model_ids)

    def _list_model_ids(self) -> list[str]:
        ids = []
        for collection in self._client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if name.startswith(self._prefix + "__"):
                model_id = self._client.get_collection(name, embedding_function=None).metadata.get("model_id")
                if model_id:
                    ids.append(model_id)
        return sorted(ids)

    def add(self, model_id: str, ids: Sequence[str], embeddings: Sequence[Sequence[float]],
            texts: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        collection = self._collection(model_id)
        for start in range(0, len(ids), _ADD_BATCH):
            end = start + _ADD_BATCH
            collection.upsert(ids=list(ids[start:end]), embeddings=[list(map(float, e)) for e in embeddings[start:end]],
                              documents=list(texts[start:end]), metadatas=list(metadatas[start:end]))
        self._forget_listing()

    def delete_document(self, doc_id: str) -> None:
        for model_id in self.model_ids():
            self._collection(model_id).delete(where={"doc_id": doc_id})
        self._forget_listing()

    def _forget_listing(self) -> None:
        self._model_ids = None
        self._counts = {}

    def _count(self, model_id: str) -> int:
        if model_id not in self._counts:
            self._counts[model_id] = self._collection(model_id).count()
        return self._counts[model_id]

    def count(self, model_id: str | None = None) -> int:
        models = [model_id] if model_id else self.model_ids()
        return sum(self._count(m) for m in models)

    def query(self, model_id: str, embedding: Sequence[float], k: int, *,
              doc_ids: Iterable[str] | None = None) -> list[VectorHit]:
        collection = self._collection(model_id)
        where = None
        if doc_ids is not None:
            doc_ids = list(doc_ids)
            if not doc_ids:
                return []
            where = {"doc_id": {"$in": doc_ids}}
        total = self._count(model_id)
        if total == 0:
            return []
        result = collection.query(query_embeddings=[list(map(float, embedding))], n_results=min(k, total),
                                  where=where, include=["documents", "metadatas", "distances"])
        return [
            VectorHit(chunk_id, 1.0 - float(distance), text or "", dict(metadata or {}))
            for chunk_id, distance, text, metadata in zip(
                result["ids"][0], result["distances"][0], result["documents"][0], result["metadatas"][0])
        ]

    def doc_ids(self, model_id: str) -> set[str]:
        """The documents that have vectors of ``model_id``."""
        result = self._collection(model_id).get(include=["metadatas"])
        return {str(m["doc_id"]) for m in result["metadatas"] if m and m.get("doc_id")}

    def get(self, model_id: str, ids: Sequence[str], *, with_embeddings: bool = False) -> dict[str, dict[str, Any]]:
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        result = self._collection(model_id).get(ids=list(ids), include=include)
        found = {}
        for i, chunk_id in enumerate(result["ids"]):
            entry = {"text": result["documents"][i], "metadata": result["metadatas"][i]}
            if with_embeddings:
                entry["embedding"] = list(result["embeddings"][i])
            found[chunk_id] = entry
        return found
