"""What the hardening suites share: small documents with unique words, and the library invariants.

Each pool document is made of invented words that no other document uses, so a phrase from it
finds it and nothing else, by BM25 or by the hash embedder (256 dimensions: collisions are rare).
``check_library`` is the invariant the state machine asserts after every step: the library is
consistent (``rag.index.consistency``) and retrieves exactly what it should.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from rag.config import RagConfig
from rag.index import consistency
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
    """Assert the library is consistent (``rag.index.consistency``) and retrieves what it should;
    returns the completed document ids.

    Every completed document is found first by BM25 and among the top 3 vector hits for its probe,
    with no other document's chunk among the BM25 hits; no document in ``gone`` is found by either.

    Args:
        probes: doc id -> a phrase of that document, for every document the caller knows.
        gone: doc id -> phrase, for deleted or failed documents, which must not be retrievable.
    """
    problems = consistency.problems(store)
    assert not problems, "\n".join(problems)
    completed = store.completed_ids()
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
