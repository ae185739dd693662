"""The embedder reads Chinese in simplified script, questions and chunks alike; stored text stays as written."""

from __future__ import annotations

from rag.config import RagConfig
from rag.documents import Chunk
from rag.ingest.embedding import embedding_text
from rag.models.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding


class ReadingEmbedding(HashEmbedding):
    """Records the texts its model was given."""

    def model_post_init(self, context) -> None:
        self._read: list[str] = []

    def _get_query_embedding(self, query: str) -> list[float]:
        self._read.append(query)
        return super()._get_query_embedding(query)

    def get_query_embedding_batch(self, queries: list[str]) -> list[list[float]]:
        return [self._get_query_embedding(q) for q in queries]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._read.extend(texts)
        return super()._get_text_embeddings(texts)


def _router() -> tuple[EmbedderRouter, ReadingEmbedding]:
    model = ReadingEmbedding(model_id="hash-e5-small")
    return EmbedderRouter(RagConfig().embedding, lambda spec: model), model


def test_a_traditional_question_is_embedded_in_simplified_script_and_cached_as_asked() -> None:
    router, model = _router()
    router.query_vector("hash-e5-small", "授權條款說明檔要放到哪個目錄？")
    router.prime_queries(["hash-e5-small"], ["資產負債表中的應付職工薪酬是多少？"])

    assert model._read == ["授权条款说明档要放到哪个目录？", "资产负债表中的应付职工薪酬是多少？"]
    assert ("hash-e5-small", "授權條款說明檔要放到哪個目錄？") in router.query_vectors
    assert ("hash-e5-small", "資產負債表中的應付職工薪酬是多少？") in router.query_vectors


def test_a_chunk_in_either_script_is_read_alike_and_an_english_one_untouched() -> None:
    def chunk(text: str, kind: str = "text") -> Chunk:
        return Chunk(chunk_id="d:0", doc_id="d", file_name="d.pdf", text=text, index=0, page_start=1, page_end=1,
                     char_start=0, char_end=len(text), kind=kind)

    assert embedding_text(chunk("應付職工薪酬 1,234 元")) == embedding_text(chunk("应付职工薪酬 1,234 元"))
    table = "| 項目 | 期末餘額 |\n|---|---|\n| 應付職工薪酬 | 1,234 |"
    assert "应付职工薪酬" in embedding_text(chunk(table, "table"))
    assert embedding_text(chunk("Revenue grew 12% in 2021.")) == "Revenue grew 12% in 2021."
