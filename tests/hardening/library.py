"""What the hardening suites share: small documents with unique words, and the library invariants.

Each pool document is made of invented words that no other document uses, so a phrase from it
finds it and nothing else, by BM25 or by the hash embedder (256 dimensions: collisions are rare).
``check_library`` is the invariant the state machine asserts after every step and the kill soak
after every restart.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.models.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding

EMBED_DIM = 256
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


@dataclass(frozen=True)
class PoolDocument:
    name: str
    data: bytes
    probe: str  # a sentence of the document that retrieves it and nothing else


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(3, 4))) + "x"


def document_pool(size: int = 10, seed: int = 14) -> list[PoolDocument]:
    """``size`` text and Markdown documents, a few sentences each, sharing no word."""
    rng = random.Random(seed)
    used: set[str] = set()
    pool = []
    for number in range(size):
        sentences = []
        for _ in range(rng.randint(5, 9)):
            words = []
            while len(words) < 9:
                word = _word(rng)
                if word not in used:
                    used.add(word)
                    words.append(word)
            sentences.append(" ".join(words).capitalize() + ".")
        body = "\n\n".join(" ".join(sentences[i:i + 2]) for i in range(0, len(sentences), 2))
        if number % 3 == 2:
            name, text = f"notes{number}.md", f"# Section {number}\n\n{body}\n"
        else:
            name, text = f"notes{number}.txt", body + "\n"
        pool.append(PoolDocument(name, text.encode("utf-8"), sentences[0]))
    return pool


def broken_files(folder: Path) -> list[tuple[str, bytes]]:
    """Files every ingest must refuse or fail, with nothing stored for other documents."""
    from tests import fixtures

    folder.mkdir(parents=True, exist_ok=True)
    return [
        ("empty.txt", b""),
        ("blank.txt", b"   \n\n\t \n"),
        ("corrupt.pdf", fixtures.make_corrupt_pdf(folder).read_bytes()),
        ("scan.pdf", fixtures.make_image_only_pdf(folder).read_bytes()),
        ("fake.pdf", fixtures.make_fake_pdf(folder).read_bytes()),
        ("report.docx", b"PK\x03\x04 not really a zip archive"),
        ("../escape.txt", b"a name that would leave the folder"),
    ]


def fake_router(config: RagConfig) -> EmbedderRouter:
    return EmbedderRouter(config.embedding,
                          lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}", dim=EMBED_DIM))


def vector_docs(store: DocumentStore, text: str, k: int = 3) -> list[str]:
    """Documents of the top-k vector hits for ``text``, best first, over every embedding space."""
    hits = []
    for model_id in store.vectors.model_ids():
        embedder = store.router.for_model_id(model_id)
        if embedder is not None:
            hits.extend(store.vectors.query(model_id, embedder.get_query_embedding(text), k))
    hits.sort(key=lambda h: -h.score)
    return [str(h.metadata["doc_id"]) for h in hits[:k]]


def check_library(store: DocumentStore, probes: dict[str, str], gone: dict[str, str]) -> set[str]:
    """Assert the library is consistent; returns the completed document ids.

    Registry, Chroma and BM25 (its stored rows and its in-memory matrices) agree on the completed
    documents and their chunk ids; nothing is unfinished or claimed; every completed document has
    its stored file and pages and is found first by BM25 and among the top 3 vector hits for its
    probe; no document in ``gone`` (deleted or failed: id -> probe) is found by either.

    Args:
        probes: doc id -> a phrase of that document, for every document the caller knows.
        gone: doc id -> phrase, for documents that must not be retrievable.
    """
    records = {r.doc_id: r for r in store.documents()}
    completed = {d for d, r in records.items() if r.status == "completed"}
    unfinished = {d: r.status for d, r in records.items() if r.status not in ("completed", "failed")}
    assert not unfinished, f"unfinished rows left: {unfinished}"
    assert store.registry.claims() == [], f"claims left: {store.registry.claims()}"

    bm25_rows = store.keywords.chunk_ids_by_doc()
    assert set(bm25_rows) == completed, f"BM25 rows {sorted(bm25_rows)} vs completed {sorted(completed)}"
    assert store.keywords.doc_ids() == completed, "the in-memory BM25 index disagrees with the registry"
    chroma: dict[str, set[str]] = {}
    for model_id in store.vectors.model_ids():
        for doc_id, ids in store.vectors.chunk_ids_by_doc(model_id).items():
            chroma.setdefault(doc_id, set()).update(ids)
    assert set(chroma) == completed, f"Chroma {sorted(chroma)} vs completed {sorted(completed)}"
    for doc_id in completed:
        assert chroma[doc_id] == bm25_rows[doc_id], f"{doc_id}: Chroma and BM25 hold different chunks"
        assert len(bm25_rows[doc_id]) == records[doc_id].chunks, f"{doc_id}: registry chunk count is wrong"
        assert store.stored_file(doc_id).is_file() and (store.document_dir(doc_id) / "pages.json").is_file()
    folders = {p.name for p in store.files_dir.iterdir()} if store.files_dir.is_dir() else set()
    assert folders <= set(records), f"orphan folders: {sorted(folders - set(records))}"

    for doc_id in completed:
        probe = probes[doc_id]
        hits = store.keywords.search(probe, k=5)
        assert hits and hits[0].doc_id == doc_id, f"{doc_id} is not found by BM25 for its own sentence"
        assert {h.doc_id for h in hits} == {doc_id}, "another document shares invented words"
        assert doc_id in vector_docs(store, probe), f"{doc_id} is not among the top vector hits"
    for doc_id, probe in gone.items():
        if doc_id in completed:
            continue
        assert all(h.doc_id != doc_id for h in store.keywords.search(probe, k=5)), f"{doc_id} still found by BM25"
        assert doc_id not in vector_docs(store, probe, k=10), f"{doc_id} still found by vector search"
    return completed
