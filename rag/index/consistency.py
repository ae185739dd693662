"""Whether a library is consistent: what the crash suites and the kill soak check after every step.

Registry, Chroma and BM25 (its stored token rows and its in-memory matrices) must agree on the
searchable documents and on each one's chunk ids: BM25 holds exactly the searchable documents;
Chroma holds every chunk of a completed document and a subset of an ``embedding`` one's (vectors are
stored batch by batch), never fewer vectors than its ledger counts, and nothing of any other document; every
searchable document must have its stored file and page data; no folder may lack a registry row. With
``quiescent`` (no writer at work), no row may be unfinished and no claim may be left; an
``embedding`` row is a resting state (its embedding resumes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag.index.store import DocumentStore


def problems(store: DocumentStore, *, quiescent: bool = True) -> list[str]:
    """Every inconsistency found, as sentences (an empty list means consistent).

    Args:
        store: The library to check.
        quiescent: No ingest, re-index or delete is running, so nothing may be unfinished.
    """
    found: list[str] = []
    records = {r.doc_id: r for r in store.documents()}
    completed = {d for d, r in records.items() if r.status == "completed"}
    embedding = {d for d, r in records.items() if r.status == "embedding"}
    searchable = {d for d, r in records.items() if r.status in ("completed", "embedding", "preliminary")}
    if quiescent:
        unfinished = {d: r.status for d, r in records.items() if r.status not in ("completed", "failed", "embedding")}
        if unfinished:
            found.append(f"unfinished rows: {unfinished}")
        claims = store.registry.claims()
        if claims:
            found.append(f"claims left: {[(c.doc_id, c.operation, c.owner.pid) for c in claims]}")

    bm25 = store.keywords.chunk_ids_by_doc()
    if set(bm25) != searchable:
        found.append(f"BM25 rows hold {sorted(bm25)}, the registry's searchable documents are {sorted(searchable)}")
    if store.keywords.doc_ids() != set(bm25):
        found.append(f"the in-memory BM25 index holds {sorted(store.keywords.doc_ids())}, its rows {sorted(bm25)}")
    chroma: dict[str, set[str]] = {}
    vectors: dict[str, int] = {}  # (chunk, model) pairs: the ledger counts vectors, two per English chunk
    for model_id in store.vectors.model_ids():
        for doc_id, ids in store.vectors.chunk_ids_by_doc(model_id).items():
            chroma.setdefault(doc_id, set()).update(ids)
            vectors[doc_id] = vectors.get(doc_id, 0) + len(ids)
    if not completed <= set(chroma) <= completed | embedding:
        found.append(f"Chroma holds {sorted(chroma)}, the registry's completed documents are {sorted(completed)} "
                     f"and those being embedded {sorted(embedding)}")
    ledger = store.ledger.all()
    for doc_id in sorted(embedding):
        stored, counted = chroma.get(doc_id, set()), ledger[doc_id].embedded if doc_id in ledger else 0
        if not stored <= bm25.get(doc_id, set()) or counted > vectors.get(doc_id, 0):
            found.append(f"{doc_id}: being embedded, Chroma holds {vectors.get(doc_id, 0)} vectors of its chunks "
                         f"(ledger: {counted}), not a subset of its BM25 chunks")

    for doc_id in sorted(searchable):
        record = records[doc_id]
        if doc_id in completed and doc_id in bm25 and bm25[doc_id] != chroma.get(doc_id):
            found.append(f"{doc_id}: Chroma and BM25 hold different chunk ids")
        if doc_id in bm25 and len(bm25[doc_id]) != record.chunks:
            found.append(f"{doc_id}: the registry says {record.chunks} chunks, BM25 holds {len(bm25[doc_id])}")
        if not record.stored_path or not store.stored_file(doc_id).is_file():
            found.append(f"{doc_id}: the stored file is missing")
        if not (store.document_dir(doc_id) / "pages.json").is_file():
            found.append(f"{doc_id}: the page data is missing")
    folders = {p.name for p in store.files_dir.iterdir() if p.is_dir()} if store.files_dir.is_dir() else set()
    if folders - set(records):
        found.append(f"folders without a registry row: {sorted(folders - set(records))}")
    return found
