"""Retrieval through the query engine over a real store (Chroma + bm25s) with a fast fake embedder."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.config import RagConfig
from rag.documents import Chunk
from rag.index.searchable import vector_groups
from rag.models.embedding_router import EmbedderRouter
from rag.retrieval.query import QueryError
from rag.index.store import DocumentStore
from tests.fakes import HashEmbedding, ScriptedLLM, make_engine

PASSAGES = {
    "med": ["Ibuprofen reduces fever and inflammation in adults.",
            "The maximum daily dose of ibuprofen for adults is 1200 mg without a prescription.",
            "Paracetamol is an alternative for patients with stomach ulcers."],
    "fin": ["Revenue grew 12 percent in the first quarter of 2022.",
            "Operating costs rose because of higher fuel prices."],
    "zh": ["布洛芬每日最大剂量为1200毫克。", "公司2019年营业收入增长百分之十二。"],
}


def _load(store: DocumentStore, passages: dict[str, list[str]] = PASSAGES) -> None:
    for doc_id, texts in passages.items():
        language = "zh" if doc_id == "zh" else "en"
        chunks = [Chunk(chunk_id=f"{doc_id}:{i}", doc_id=doc_id, file_name=f"{doc_id}.pdf", text=t, index=i,
                        page_start=i + 1, page_end=i + 1, char_start=0, char_end=len(t), language=language)
                  for i, t in enumerate(texts)]
        # as an ingest stores them: English chunks in both English models' spaces, Chinese ones in e5-small's
        store.write_chunks({model_id: (group, embedder.get_text_embedding_batch([c.text for c in group]))
                            for model_id, (embedder, group) in vector_groups(store, chunks).items()})
        from rag.documents import DocumentRecord

        store.registry.upsert(DocumentRecord(doc_id=doc_id, file_name=f"{doc_id}.pdf", sha256=doc_id,
                                             status="completed", chunks=len(chunks)))


@pytest.fixture
def loaded(store: DocumentStore) -> DocumentStore:
    _load(store)
    return store


def test_hybrid_retrieval_traces_every_stage(loaded: DocumentStore, config: RagConfig) -> None:
    result = make_engine(loaded, config).search("maximum daily dose of ibuprofen")
    assert result.nodes[0].node.node_id == "med:1"
    names = [s.name for s in result.trace.stages]
    # an English question: the English model's list, the second English model's, BM25, then fusion
    assert names[:4] == ["vector", "vector_second", "bm25", "fusion"] and names[-1] == "final"
    trace = result.trace.to_dict()
    assert trace["stages"][2]["name"] == "bm25" and trace["stages"][2]["candidates"][0]["chunk_id"] == "med:1"
    assert "med:1" in {c["chunk_id"] for c in trace["stages"][1]["candidates"]}
    assert all(0.0 <= n.node.metadata["relevance"] <= 1.0 for n in result.nodes)


def test_doc_filter_and_unknown_ids(loaded: DocumentStore, config: RagConfig) -> None:
    engine = make_engine(loaded, config)
    result = engine.search("revenue growth and fuel costs", doc_ids=["fin"])
    assert result.nodes and {n.node.metadata["doc_id"] for n in result.nodes} == {"fin"}
    with pytest.raises(QueryError, match="unknown or unfinished documents.*nope"):
        engine.search("revenue", doc_ids=["nope"])


def test_chinese_query_finds_the_chinese_chunk(loaded: DocumentStore, config: RagConfig) -> None:
    result = make_engine(loaded, config).search("布洛芬的最大剂量是多少")
    assert result.nodes[0].node.node_id == "zh:0"


@pytest.mark.parametrize("query", ["", "   \n\t "])
def test_empty_queries_are_refused(loaded: DocumentStore, config: RagConfig, query: str) -> None:
    with pytest.raises(QueryError, match="empty"):
        make_engine(loaded, config).search(query)


def test_a_huge_query_is_refused_with_the_limit(loaded: DocumentStore, config: RagConfig) -> None:
    with pytest.raises(QueryError, match="20,000 characters.*limit is 4,000"):
        make_engine(loaded, config).search("x" * 20_000)


def test_empty_index_gives_a_reason(store: DocumentStore, config: RagConfig) -> None:
    result = make_engine(store, config).search("anything at all")
    assert result.nodes == [] and "No documents are indexed" in result.empty_reason


def test_a_query_in_a_language_no_document_holds_gets_an_empty_result_that_says_why(
        store: DocumentStore, config: RagConfig) -> None:
    _load(store, {doc_id: texts for doc_id, texts in PASSAGES.items() if doc_id != "zh"})  # English only
    result = make_engine(store, config).search("布洛芬每日最大剂量是多少")
    assert result.nodes == []
    assert result.empty_reason.startswith("No passage in your documents matches this question. (")
    assert "the question is in Chinese, but no document holds Chinese text" in result.empty_reason
    # an English question in the same library is not affected
    assert make_engine(store, config).search("maximum daily dose of ibuprofen").nodes


def test_short_query_goes_keyword_only(loaded: DocumentStore, config: RagConfig) -> None:
    result = make_engine(loaded, config).search("paracetamol")
    assert [s.name for s in result.trace.stages][:2] == ["bm25", "fusion"]
    assert "keyword only" in result.trace.get("fusion").fallback_reason
    assert result.nodes[0].node.node_id == "med:2"


def test_vector_failure_degrades_to_keywords(loaded: DocumentStore, config: RagConfig, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise ConnectionError("chroma is down")

    monkeypatch.setattr(loaded.vectors, "query", broken)
    result = make_engine(loaded, config).search("maximum daily dose of ibuprofen")
    assert result.nodes[0].node.node_id == "med:1"
    assert "vector failed" in result.trace.get("fusion").fallback_reason


def test_bm25_failure_degrades_to_vectors(loaded: DocumentStore, config: RagConfig, monkeypatch) -> None:
    monkeypatch.setattr(loaded.keywords, "search", lambda *a, **k: (_ for _ in ()).throw(OSError("index gone")))
    result = make_engine(loaded, config).search("maximum daily dose of ibuprofen")
    assert result.nodes and "bm25 failed" in result.trace.get("fusion").fallback_reason


def test_threshold_can_empty_the_result_with_a_reason(loaded: DocumentStore, config: RagConfig) -> None:
    strict = config.with_overrides({"retrieval.similarity_threshold": "1.0", "retrieval.sources": "vector"})
    result = make_engine(loaded, strict).search("weather on mars tomorrow")
    assert result.nodes == [] and "below the relevance threshold" in result.empty_reason


def test_results_are_cached_until_documents_change(loaded: DocumentStore, config: RagConfig) -> None:
    engine = make_engine(loaded, config)
    assert not engine.search("operating costs and fuel").cached
    assert engine.search("operating costs and fuel").cached
    loaded.delete("med")
    assert not engine.search("operating costs and fuel").cached


def test_rewrite_and_hyde_use_the_llm_and_record_fallbacks(loaded: DocumentStore, config: RagConfig) -> None:
    enhanced = config.with_overrides({"query.rewrite": "true", "query.hyde": "true", "query.variants": "2"})
    llm = ScriptedLLM(replies=['{"variants": ["ibuprofen adult dose limit", "how much ibuprofen per day"], '
                               '"key_concepts": ["ibuprofen"], "synonyms": ["Advil"], "search_terms": ["dose"]}',
                               "Adults may take up to 1200 mg of ibuprofen per day."])
    result = make_engine(loaded, enhanced, llm=llm).search("what is the most ibuprofen I can take")
    assert "med:1" in [n.node.node_id for n in result.nodes[:2]]
    assert any("rewritten variants" in note for note in result.trace.get("fusion").notes)
    assert len(llm.prompts) == 2  # one rewrite call, one HyDE call
    assert "ibuprofen adult dose limit" in result.details["rewrite"]["variants"]
    assert result.trace.get("hyde") and not result.trace.get("hyde").fallback_reason

    no_llm = make_engine(loaded, enhanced).search("what is the most ibuprofen I can take")
    assert "no LLM" in no_llm.trace.get("rewrite").fallback_reason
    assert no_llm.nodes  # still answers with the raw query


def test_mmr_stage_runs_with_the_configured_lambda(loaded: DocumentStore, config: RagConfig) -> None:
    with_mmr = config.with_overrides({"mmr.enabled": "true", "mmr.lambda_mult": "0.3", "retrieval.top_k": "3"})
    result = make_engine(loaded, with_mmr).search("ibuprofen dose fever adults")
    assert result.trace.get("mmr") is not None and len(result.nodes) <= 3


def test_rerank_uses_the_injected_scorer(loaded: DocumentStore, config: RagConfig) -> None:
    class PrefersParacetamol:
        def predict(self, pairs):
            return [1.0 if "Paracetamol" in text else 0.0 for _, text in pairs]

    rerank = config.with_overrides({"rerank.enabled": "true", "rerank.model_path": "/unused"})
    result = make_engine(loaded, rerank, reranker=PrefersParacetamol()).search("ibuprofen dose for adults")
    assert result.nodes[0].node.node_id == "med:2"
    assert result.trace.get("rerank") is not None


def test_context_budget_limits_the_final_nodes_and_says_so(loaded: DocumentStore, config: RagConfig) -> None:
    filler = " ".join(["Ibuprofen dosing for adults is discussed in this long passage."] * 5)  # ~50 words
    _load(loaded, {"long": [f"{filler} Part {i}." for i in range(3)]})
    tight = config.with_overrides({"generation.max_context_tokens": "64", "retrieval.top_k": "3",
                                   "generation.evidence_fitting": "false"})
    result = make_engine(loaded, tight).search("ibuprofen dosing adults long passage")
    from rag.text.language import count_tokens

    assert len(result.trace.get("final").candidates) == len(result.nodes) == 1
    assert count_tokens(result.nodes[0].node.get_content()) <= 64
    # the trace says the budget, not top_k, decided how many passages are left
    assert result.trace.get("final").notes == ["1 of the top 3 fit the 64-token context budget"]


def test_mmr_uses_the_stored_vectors_instead_of_re_embedding(loaded: DocumentStore, config: RagConfig,
                                                             monkeypatch) -> None:
    embedder = loaded.router.for_language("en")

    def no_text_embedding(*args, **kwargs):
        raise AssertionError("MMR re-embedded candidate texts")

    monkeypatch.setattr(type(embedder), "get_text_embedding_batch", no_text_embedding)
    with_mmr = config.with_overrides({"mmr.enabled": "true", "mmr.lambda_mult": "0.5", "retrieval.top_k": "3"})
    # English documents only: a Chinese chunk has no vector in the MiniLM space, so MMR would embed it
    result = make_engine(loaded, with_mmr).search("ibuprofen dose fever adults", doc_ids=["med", "fin"])
    stage = result.trace.get("mmr")
    assert stage is not None and not stage.fallback_reason, stage.fallback_reason
    assert 1 <= len(result.nodes) <= 3
    assert all("mmr_score" in n.node.metadata for n in result.nodes)


def test_rerank_skips_queries_in_languages_the_model_cannot_read(loaded: DocumentStore, config: RagConfig) -> None:
    class Scorer:
        calls = 0

        def predict(self, pairs):
            Scorer.calls += 1
            return [0.0 for _ in pairs]

    english_only = config.with_overrides({"rerank.enabled": "true", "rerank.model_path": "/unused",
                                          "rerank.languages": "en", "rerank.blend": "0.5"})
    chinese = make_engine(loaded, english_only, reranker=Scorer()).search("布洛芬每日最大剂量是多少")
    assert "reads en only" in chinese.trace.get("rerank").fallback_reason and Scorer.calls == 0
    assert chinese.nodes and chinese.nodes[0].node.metadata["doc_id"] == "zh"
    english = make_engine(loaded, english_only, reranker=Scorer()).search("ibuprofen dose for adults")
    assert not english.trace.get("rerank").fallback_reason and Scorer.calls == 1
    # a constant reranker with blend 0.5 keeps the retrieval order
    plain = make_engine(loaded, config).search("ibuprofen dose for adults")
    assert [n.node.node_id for n in english.nodes] == [n.node.node_id for n in plain.nodes][: len(english.nodes)]


def test_vectors_of_a_model_no_longer_configured_are_reported(loaded: DocumentStore, config: RagConfig) -> None:
    # the library was embedded with one English model, then the setting changed to another
    other = replace(config, embedding=replace(config.embedding, english_model="bundled:another"))
    loaded.router = EmbedderRouter(other.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    result = make_engine(loaded, other).search("maximum daily dose of ibuprofen")
    vector = next(s for s in result.trace.stages if s.name == "vector")
    stored = "hash-" + config.embedding.english_model.split(":")[-1]
    assert stored in vector.fallback_reason and "re-index" in vector.fallback_reason
    assert result.nodes[0].node.node_id == "med:1"  # BM25 still finds it


def test_the_store_names_documents_whose_vectors_no_configured_model_makes(loaded: DocumentStore,
                                                                            config: RagConfig) -> None:
    assert loaded.unsearched_vectors() == {}
    other = replace(config, embedding=replace(config.embedding, english_model="bundled:another"))
    loaded.router = EmbedderRouter(other.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    stored = "hash-" + config.embedding.english_model.split(":")[-1]
    assert loaded.unsearched_vectors() == {stored: {"med", "fin"}}  # the Chinese space is still configured
    loaded.delete("fin")
    assert loaded.unsearched_vectors() == {stored: {"med"}}


def test_a_stand_in_embedder_says_so_in_the_trace(loaded: DocumentStore, config: RagConfig) -> None:
    english = config.embedding.english_model
    stand_in = HashEmbedding(model_id="hash-" + english.split(":")[-1])  # the id the chunks were stored under
    object.__setattr__(stand_in, "fallback_reason", "the tuned model is not built; using the bundled one")
    loaded.router = EmbedderRouter(config.embedding, lambda spec: stand_in if spec == english
                                   else HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    result = make_engine(loaded, config).search("maximum daily dose of ibuprofen")
    vector = next(s for s in result.trace.stages if s.name == "vector")
    assert vector.fallback_reason == "the tuned model is not built; using the bundled one"
