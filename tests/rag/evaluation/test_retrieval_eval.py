"""The evaluation harness: mode settings, the ablation grid and its Markdown table, on a tiny corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.evaluation.datasets import EvalDataset
from rag.evaluation.retrieval import ModeEngines, all_modes, eval_store, evaluate_grid, format_grid_markdown, mode_settings

CORPUS = {
    "d1": {"title": "Ibuprofen", "text": "Ibuprofen reduces fever and inflammation in adults."},
    "d2": {"title": "Dose", "text": "The maximum daily dose of ibuprofen for adults is 1200 mg."},
    "d3": {"title": "Revenue", "text": "Revenue grew twelve percent in the first quarter."},
    "d4": {"title": "Costs", "text": "Operating costs rose because of higher fuel prices."},
}
QUERIES = {"q1": "maximum daily ibuprofen dose for adults", "q2": "why did operating costs rise",
           "q3": "revenue growth in the first quarter"}
QRELS = {"q1": {"d2": 1}, "q2": {"d4": 1}, "q3": {"d3": 1}}


@pytest.fixture
def tiny(config: RagConfig, fake_router, tmp_path: Path):
    dataset = EvalDataset(name="tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    store = eval_store(dataset, config, fake_router, home=tmp_path)
    yield dataset, store
    store.close()


def test_ablation_modes_run_only_the_stages_they_name(config: RagConfig) -> None:
    everything_on = config.with_overrides({"rerank.enabled": True, "rerank.model_path": "/x", "mmr.enabled": True})
    bm25, needs_llm = mode_settings("bm25", everything_on)
    assert bm25.retrieval.sources == "keyword" and not needs_llm
    assert not bm25.rerank.enabled and not bm25.mmr.enabled and not bm25.query.hyde
    reranked, _ = mode_settings("hybrid-weighted+rerank", everything_on)
    assert reranked.rerank.enabled and not reranked.mmr.enabled and reranked.retrieval.fusion == "weighted"
    default, _ = mode_settings("default", everything_on)
    assert default.rerank.enabled and default.mmr.enabled and default.retrieval.sources == "hybrid"
    assert mode_settings("vector", config)[0].retrieval.sources == "vector"
    assert mode_settings("vector+hyde", config)[1] is True
    assert len(all_modes()) == 7 + 16
    english, _ = mode_settings("vector-english-model", config)
    second, _ = mode_settings("vector-second-model", config)
    assert (english.retrieval.sources, english.retrieval.second_vector_weight) == ("vector", 0.0)
    assert (second.retrieval.sources, second.retrieval.vector_weight) == ("vector", 0.0)
    with pytest.raises(ValueError, match="unknown mode"):
        mode_settings("bm25+magic", config)


def test_grid_runs_every_mode_over_one_store_and_tabulates(tiny, config: RagConfig) -> None:
    dataset, store = tiny
    engines = ModeEngines(store)
    modes = ["bm25", "vector", "hybrid-rrf", "hybrid-weighted+mmr"]
    seen: list[tuple[str, int, int]] = []
    reports = evaluate_grid(dataset, engines, config, modes, batch_query_embeddings=True,
                            progress=lambda mode, done, total: seen.append((mode, done, total)))
    assert [r["mode"] for r in reports] == modes
    by_mode = {r["mode"]: r for r in reports}
    assert by_mode["bm25"]["metrics"]["recall@1"] == 1.0  # each query shares its key words with its gold
    assert all(r["n_queries"] == 3 for r in reports)
    assert ("hybrid-rrf", 3, 3) in seen and len(seen) == 12
    table = format_grid_markdown(reports)
    lines = table.splitlines()
    assert lines[0].startswith("| dataset | mode | queries | ndcg@10 |") and "p99 ms" in lines[0]
    assert len([line for line in lines if line.startswith("| tiny |")]) == 4
    assert table.count("latency excludes query embedding") == 1  # a note shared by every row is said once
    assert "All rows: query embeddings batched" in table
    vector = engines.engine(mode_settings("vector", config)[0]).search(QUERIES["q2"])
    # the vector row runs both dense lists (the English model's and the second one's) and no BM25
    assert [s.name for s in vector.trace.stages][:3] == ["vector", "vector_second", "fusion"]


def test_rerank_rows_say_when_no_cross_encoder_is_loaded(tiny, config: RagConfig) -> None:
    dataset, store = tiny
    with pytest.raises(ValueError, match="rerank.model_path"):
        mode_settings("bm25+rerank", config)
    with_path = config.with_overrides({"rerank.model_path": "/not/loaded"})
    report = evaluate_grid(dataset, ModeEngines(store), with_path, ["bm25+rerank"])[0]
    assert report["fallbacks"] == {"rerank": 3}
    assert "fallback in rerank x3" in format_grid_markdown([report])


def test_a_question_the_pipeline_rejects_is_a_counted_miss_not_the_end_of_the_run(tiny, config: RagConfig) -> None:
    dataset, store = tiny
    bad = EvalDataset(name="tiny", corpus=CORPUS, queries={**QUERIES, "long": "ibuprofen " * 1000},
                      qrels={**QRELS, "long": {"d2": 1}}, skipped={"empty question": 2}, split="report")

    report = evaluate_grid(bad, ModeEngines(store), config, ["bm25"])[0]

    assert report["n_queries"] == 4 and report["split"] == "report"
    assert report["metrics"]["recall@1"] == 0.75
    assert report["skipped"] == {"empty question": 2, "rejected by the pipeline (counted as misses)": 1}
    assert "skipped 3 item(s)" in report["note"]


def test_a_stored_corpus_embedded_from_another_text_form_is_built_again(config: RagConfig, fake_router,
                                                                         tmp_path: Path, monkeypatch) -> None:
    dataset = EvalDataset(name="tiny", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    eval_store(dataset, config, fake_router, home=tmp_path).close()
    monkeypatch.setattr("rag.evaluation.retrieval.EMBEDDING_TEXT_VERSION", 99)
    eval_store(dataset, config, fake_router, home=tmp_path).close()
    assert len(list((tmp_path / "eval").glob("tiny-*"))) == 2
