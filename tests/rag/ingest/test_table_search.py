"""What a table chunk is searched by: its document title, and for the embedder an outline of its words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.config import ChunkingConfig, RagConfig
from rag.documents import Chunk
from rag.index.keywords import keyword_text
from rag.index.store import DocumentStore
from rag.ingest.chunking import chunk_document
from rag.ingest.embedding import embedding_text
from rag.ingest.ingestor import Ingestor
from rag.ingest.parse import parse_file
from tests import fixtures


def _chunks(path: Path) -> list[Chunk]:
    return chunk_document(parse_file(path), "doc", ChunkingConfig())


def test_table_chunks_carry_the_document_title_and_text_chunks_nothing(tmp_path: Path) -> None:
    document = parse_file(fixtures.make_table_pdf(tmp_path))
    chunks = chunk_document(document, "doc", ChunkingConfig())
    [table] = [c for c in chunks if c.kind == "table"]
    assert document.title and table.context == document.title
    assert all(c.context == "" for c in chunks if c.kind == "text")
    # the stored text is still the Markdown block alone: citations and highlights read it
    assert table.text == document.full_text[table.char_start:table.char_end]
    assert Chunk.from_metadata(table.text, table.metadata()).context == document.title


def test_a_table_is_searched_by_the_sentence_that_introduces_it_and_the_prose_keeps_it(tmp_path: Path) -> None:
    intro = ("Dosing depends on the age of the patient and on the judgement of the treating physician, who may "
             "lower it. The following table presents the recommended ibuprofen doses by age group (in milligrams):")
    document = parse_file(fixtures.make_table_pdf(tmp_path, intro=intro))
    chunks = chunk_document(document, "doc", ChunkingConfig())
    [table] = [c for c in chunks if c.kind == "table"]
    lead = "The following table presents the recommended ibuprofen doses by age group (in milligrams):"
    assert table.context.splitlines() == [document.title, lead]
    assert lead in embedding_text(table) and lead in keyword_text(table)  # both retrievers read it
    assert "following table" not in table.text  # what is stored, shown and cited is the table alone
    assert any("following table presents" in " ".join(c.text.split()) for c in chunks if c.kind == "text")


def test_the_embedder_reads_a_table_as_its_words_and_prose_as_it_is(tmp_path: Path) -> None:
    chunks = _chunks(fixtures.make_table_pdf(tmp_path))
    [table] = [c for c in chunks if c.kind == "table"]
    outline = embedding_text(table).splitlines()
    assert outline[0] == table.context and fixtures.TABLE_CAPTION in outline
    assert " | ".join(fixtures.TABLE_HEADER) in outline
    assert [row[0] for row in fixtures.TABLE_ROWS] == outline[-len(fixtures.TABLE_ROWS):]
    assert "200" not in embedding_text(table)  # the figures are left to BM25 and the stored text
    assert all(embedding_text(c) == c.text for c in chunks if c.kind == "text")


def test_bm25_indexes_a_table_with_its_document_title(tmp_path: Path) -> None:
    [table] = [c for c in _chunks(fixtures.make_table_pdf(tmp_path)) if c.kind == "table"]
    assert keyword_text(table).startswith(" ".join(p for p in (table.heading_path, table.context) if p))
    assert table.text in keyword_text(table)


def test_ingest_stores_the_outline_vector_for_a_table_and_the_markdown_as_its_text(
        store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    result = Ingestor(store, config).ingest_path(fixtures.make_table_pdf(tmp_path))
    assert result.ok
    [table] = [c for c in store.chunks(result.doc_id) if c.kind == "table"]
    model_id = store.vectors.model_ids()[0]
    stored = store.vectors.get(model_id, [table.chunk_id], with_embeddings=True)[table.chunk_id]
    embedder = store.router.for_language("en")
    assert stored["text"] == table.text and table.context
    assert np.allclose(stored["embedding"], embedder.get_text_embedding(embedding_text(table)), atol=1e-6)
    assert not np.allclose(stored["embedding"], embedder.get_text_embedding(table.text), atol=1e-3)


def test_bm25_finds_a_quarter_table_by_the_words_people_ask_with(tmp_path: Path) -> None:
    from rag.index.keywords import KeywordIndex

    table = "\n".join(["STATEMENTS OF OPERATIONS", "Three Months Ended March 31,", "|  | 2021 | 2022 |",
                       "| --- | --- | --- |", "| Revenue | $ 2,903 | $ 6,854 |"])
    prose = "Revenue grew in the year; see the statements of operations for 2021 and 2022."
    chunks = [Chunk(chunk_id=f"d:{i}", doc_id="d", file_name="d.pdf", text=text, index=i, page_start=1, page_end=1,
                    char_start=0, char_end=len(text), kind=kind)
              for i, (text, kind) in enumerate([(table, "table"), (prose, "text"), (table, "text")])]
    assert "Q1 2022" in keyword_text(chunks[0]) and "Q1" not in keyword_text(chunks[2])  # tables only
    index = KeywordIndex(tmp_path / "bm25")
    index.add("d", chunks)
    assert index.search("revenue in Q1 2022", k=3)[0].chunk_id == "d:0"
    assert index.search("revenue in the first quarter of 2022", k=3)[0].chunk_id == "d:0"
