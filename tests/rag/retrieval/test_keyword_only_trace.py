"""While a document's vectors are being stored, retrieval finds it by keywords and the trace says which
documents in the query's scope are keyword-only for now."""

from __future__ import annotations

from pathlib import Path

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.ingest.vector_fill import fill_vectors
from tests import fixtures
from tests.fakes import make_engine


class Nobody:
    """A background embedder that never embeds: the document stays keyword-only."""

    def submit(self, doc_id, progress=None):
        return progress


def test_the_trace_names_keyword_only_documents_in_scope(store: DocumentStore, config: RagConfig,
                                                         tmp_path: Path) -> None:
    ingestor = Ingestor(store, config, background=Nobody())
    partial = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    done = Ingestor(store, config).ingest_path(fixtures.make_markdown(tmp_path))
    assert partial.status == "searchable" and done.status == "completed"
    engine = make_engine(store, config)

    result = engine.search(fixtures.EN_FACT)
    assert partial.doc_id in {n.node.metadata["doc_id"] for n in result.nodes}
    assert partial.doc_id in {c.doc_id for c in result.trace.get("bm25").candidates}  # found by BM25
    [entry] = result.trace.details["keyword_only"]
    vectors = 2 * partial.chunks  # the total counts vectors: both English models' for each chunk
    assert entry == {"doc_id": partial.doc_id, "file_name": "report.pdf", "embedded": 0, "total": vectors,
                     "error": ""}
    vector = result.trace.get("vector")
    assert any("keyword-only for now" in note and f"report.pdf (0/{vectors} vectors stored)" in note
               for note in vector.notes)
    assert all(c.doc_id != partial.doc_id for c in vector.candidates)  # vector search has none of it yet
    assert all(c.doc_id != partial.doc_id for c in result.trace.get("vector_second").candidates)

    scoped = engine.search(fixtures.EN_FACT, doc_ids=[done.doc_id])  # out of scope: not named
    assert "keyword_only" not in scoped.trace.details

    assert fill_vectors(store, partial.doc_id).status == "completed"
    after = engine.search(fixtures.EN_FACT)  # a new library version: not served from the cache
    assert "keyword_only" not in after.trace.details
    assert any(c.doc_id == partial.doc_id for c in after.trace.get("vector").candidates)
    assert any(c.doc_id == partial.doc_id for c in after.trace.get("vector_second").candidates)


def test_the_document_filter_accepts_a_keyword_only_document(store: DocumentStore, config: RagConfig,
                                                             tmp_path: Path) -> None:
    partial = Ingestor(store, config, background=Nobody()).ingest_path(fixtures.make_english_pdf(tmp_path))
    result = make_engine(store, config).search(fixtures.EN_FACT, doc_ids=[partial.doc_id])
    assert result.nodes and {n.node.metadata["doc_id"] for n in result.nodes} == {partial.doc_id}
