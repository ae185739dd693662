"""The app's evaluation runs: corpus sets in a cached eval store, CSV sets against the user's library."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from rag.evaluation import run as eval_run
from rag.evaluation import uploads
from rag.config import RagConfig
from rag.models.embedding_router import EmbedderRouter
from rag.evaluation.datasets import EvalDataset
from rag.ingest.ingestor import Ingestor
from rag.index.store import DocumentStore
from tests import fixtures
from tests.fixtures import TINY_SQUAD as SQUAD



def _squad_dataset(tmp_path: Path) -> EvalDataset:
    return uploads.load_upload("tiny.json", json.dumps(SQUAD).encode(), tmp_path / "uploads")


def test_corpus_set_is_indexed_once_and_scored(tmp_path: Path, config: RagConfig,
                                               fake_router: EmbedderRouter) -> None:
    dataset = _squad_dataset(tmp_path)
    seen: list[tuple[float, str]] = []
    store = eval_run.corpus_store(dataset, config, fake_router, home=tmp_path / "home",
                                  progress=lambda f, m: seen.append((f, m)))
    assert seen and seen[-1][0] == 1.0 and "cached in" in seen[-1][1]
    assert len(store.keywords) == 3

    progress: list[float] = []
    run = eval_run.run_settings(dataset, store, config, label="Current", progress=lambda f, m: progress.append(f))
    store.close()

    assert run.n_queries == 3 and len(run.latencies_ms) == 3 and all(v > 0 for v in run.latencies_ms)
    assert progress == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert run.metrics["recall@1"] == 1.0 and run.metrics["mrr@10"] == 1.0
    assert len(run.recall_curve) == 20 and run.recall_curve == sorted(run.recall_curve)
    assert set(run.per_query_recall) == {"v1", "v2", "r1"}
    assert run.metrics["recall@top_k"] == run.recall_curve[config.retrieval.top_k - 1]
    assert set(run.latency) == {"p50", "p95", "p99"}

    again: list[float] = []
    reopened = eval_run.corpus_store(dataset, config, fake_router, home=tmp_path / "home",
                                     progress=lambda f, m: again.append(f))
    assert again == [] and len(reopened.keywords) == 3  # reused from disk, nothing embedded
    reopened.close()


def test_limit_samples_questions_and_says_so(tmp_path: Path, config: RagConfig, fake_router: EmbedderRouter) -> None:
    dataset = _squad_dataset(tmp_path)
    store = eval_run.corpus_store(dataset, config, fake_router, home=tmp_path / "home")
    run = eval_run.run_settings(dataset, store, config, label="x", limit=2)
    store.close()
    assert run.n_queries == 2 and len(run.per_query_recall) == 2
    assert any("sample of 2" in note for note in run.notes)


def test_rewrite_without_llm_is_reported(tmp_path: Path, config: RagConfig, fake_router: EmbedderRouter) -> None:
    dataset = _squad_dataset(tmp_path)
    store = eval_run.corpus_store(dataset, config, fake_router, home=tmp_path / "home")
    run = eval_run.run_settings(dataset, store, config.with_overrides({"query.rewrite": True}), label="x")
    store.close()
    assert run.fallbacks == {"rewrite": 3}
    assert any("no LLM was loaded" in note for note in run.notes)


@pytest.fixture
def library(tmp_path: Path, config: RagConfig, fake_router: EmbedderRouter):
    """A user store with one five-page report, chunked small so chunks stay near their pages."""
    small = config.with_overrides({"chunking.chunk_size": 40, "chunking.chunk_overlap": 0})
    store = DocumentStore(small, fake_router)
    result = Ingestor(store, small).ingest_path(fixtures.make_english_pdf(tmp_path, pages=5))
    assert result.ok
    yield store, result.doc_id
    store.close()


def test_csv_hits_need_the_expected_document_and_page(tmp_path: Path, config: RagConfig, library) -> None:
    store, doc_id = library
    chunks = store.chunks(doc_id)
    dose_pages = next((c.page_start, c.page_end) for c in chunks if fixtures.EN_FACT in c.text)
    assert 5 not in range(dose_pages[0], dose_pages[1] + 1)
    csv_text = ("question,expected_document,expected_page\n"
                "What is the maximum daily dose of ibuprofen for adults?,report.pdf,2\n"
                "What is the maximum daily dose of ibuprofen for adults?,REPORT.PDF,5\n"
                "What is the maximum daily dose of ibuprofen for adults?,report.pdf,\n"
                "What is the maximum daily dose of ibuprofen for adults?,missing.pdf,2\n")
    dataset = uploads.load_upload("questions.csv", csv_text.encode(), tmp_path / "uploads")
    assert eval_run.is_csv_set(dataset)

    run = eval_run.run_settings(dataset, store, config, label="Current")

    recall = run.per_query_recall
    assert recall["q1"][0] == 1.0  # the dose chunk covers page 2 and ranks first
    assert recall["q2"][0] == 0.0 and recall["q2"][-1] == 1.0  # a page-5 chunk is retrieved, not first
    assert recall["q3"][0] == 1.0  # no page given: any chunk of the document is a hit
    assert recall["q4"] == [0.0] * 20  # not in the library
    assert any("missing.pdf" in note for note in run.notes)
    assert "p@5" not in run.metrics  # binary relevance: precision is not meaningful
    assert run.metrics["recall@1"] == pytest.approx(0.5)


def test_load_upload_reads_the_three_formats(tmp_path: Path) -> None:
    squad = _squad_dataset(tmp_path)
    assert squad.name.startswith("tiny-") and len(squad.corpus) == 3 and len(squad.queries) == 3

    other = dict(SQUAD, data=SQUAD["data"][:1])
    assert uploads.load_upload("tiny.json", json.dumps(other).encode(), tmp_path / "u").name != squad.name

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mini/corpus.jsonl", '{"_id": "d1", "title": "T", "text": "Aspirin reduces fever."}\n')
        archive.writestr("mini/queries.jsonl", '{"_id": "q1", "text": "Does aspirin reduce fever?"}\n')
        archive.writestr("mini/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    beir = uploads.load_upload("mini.zip", buffer.getvalue(), tmp_path / "u")
    assert beir.qrels == {"q1": {"d1": 1}} and beir.name.startswith("mini-")


@pytest.mark.parametrize(("name", "data", "message"), [
    ("notes.txt", b"hello", "expected a .csv"),
    ("bad.zip", b"not a zip", "not a readable zip"),
    ("bad.json", b"{not json", "bad.json"),
    ("wrong.json", b'{"data": [{"paragraphs": "x"}]}', "not a question set"),
    ("cols.csv", b"q,doc\nhello,x\n", "missing column"),
], ids=["suffix", "zip", "json", "shape", "csv-columns"])
def test_load_upload_rejects_bad_files_with_a_reason(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        uploads.load_upload(name, data, tmp_path)


def test_zip_without_corpus_is_rejected(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "nothing here")
    with pytest.raises(ValueError, match="no corpus.jsonl"):
        uploads.load_upload("empty.zip", buffer.getvalue(), tmp_path)


def _run(label: str, latencies: list[float]) -> eval_run.EvalRun:
    return eval_run.EvalRun(label=label, dataset="d", n_queries=len(latencies), metrics={"recall@1": 0.5},
                            recall_curve=[0.5] * 20, per_query_recall={}, latencies_ms=latencies,
                            latency={"p50": 1.0, "p95": 2.0, "p99": 3.0}, top_k=5)


def test_latency_histogram_shares_bins_between_runs() -> None:
    labels, counts = eval_run.latency_histogram([_run("a", [1.0, 2.0, 3.0]), _run("b", [10.0, 11.0])], bins=5)
    assert labels == ["1.0–3.0", "3.0–5.0", "5.0–7.0", "7.0–9.0", "9.0–11.0"]
    assert counts == {"a": [2, 1, 0, 0, 0], "b": [0, 0, 0, 0, 2]}


def test_latency_histogram_puts_a_far_outlier_in_an_overflow_bin() -> None:
    steady = [20.0 + i for i in range(99)]  # 20..118 ms
    labels, counts = eval_run.latency_histogram([_run("a", steady + [5000.0])], bins=10)
    assert len(labels) == 11 and labels[-1].startswith("≥ ")
    assert counts["a"][-1] == 1 + sum(v >= float(labels[-1][2:]) for v in steady)
    assert sum(counts["a"]) == 100 and counts["a"][0] > 5  # the steady range keeps its resolution


def test_metrics_table_puts_runs_side_by_side() -> None:
    table = eval_run.metrics_table([_run("a", [1.0]), _run("b", [2.0])])
    assert table["recall@1"] == {"a": 0.5, "b": 0.5}
    assert table["latency p95 (ms)"] == {"a": 2.0, "b": 2.0}


def test_index_settings_keeps_the_index_sections(config: RagConfig) -> None:
    other = config.with_overrides({"chunking.chunk_size": 100, "retrieval.top_k": 9,
                                   "embedding.english_model": "/models/other"})
    merged = eval_run.index_settings(other, config)
    assert merged.chunking == config.chunking and merged.embedding == config.embedding
    assert merged.retrieval.top_k == 9


def test_bundled_datasets_reports_absent_ones(tmp_path: Path) -> None:
    (tmp_path / "squad-v1.1-dev.json").write_text("{}")
    found = eval_run.bundled_datasets(tmp_path)
    assert found["squad"] == tmp_path / "squad-v1.1-dev.json"
    assert found["scifact"] is None and found["cmrc2018"] is None


def test_an_upload_with_bad_items_runs_to_the_end_and_says_what_it_skipped(
        tmp_path: Path, config: RagConfig, fake_router: EmbedderRouter) -> None:
    broken = json.loads(json.dumps(SQUAD))
    qas = broken["data"][0]["paragraphs"][0]["qas"]
    qas += [{"id": "e1", "question": ""}, {"id": "e2", "question": "   "}, {"id": "v1", "question": "Repeated id?"},
            {"id": "long", "question": "volcano " * 1500}]  # over the pipeline's length limit
    dataset = uploads.load_upload("public.json", json.dumps(broken).encode(), tmp_path / "uploads")
    store = eval_run.corpus_store(dataset, config, fake_router, home=tmp_path / "home")

    run = eval_run.run_settings(dataset, store, config, label="Current")
    store.close()

    assert dataset.skipped == {"empty question": 2, "duplicate question id": 1}
    assert run.n_queries == 4 and len(run.latencies_ms) == 3  # the over-long question was rejected, not fatal
    assert any(n.startswith("skipped 3 item(s): duplicate question id x1, empty question x2") for n in run.notes)
    assert any("1 question(s) rejected by the engine count as misses" in n for n in run.notes), run.notes
    assert run.metrics["recall@1"] == 0.75  # three hits, and the rejected question counts as a miss


def test_an_upload_with_no_usable_question_is_refused_with_the_counts(tmp_path: Path) -> None:
    empty = {"data": [{"title": "T", "paragraphs": [{"context": "Text.", "qas": [{"id": "a", "question": " "}]}]}]}
    with pytest.raises(ValueError, match=r"no usable questions found \(skipped 1 item\(s\): empty question x1\)"):
        uploads.load_upload("empty.json", json.dumps(empty).encode(), tmp_path)


def _zip(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if link is not None:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16)  # a symbolic link
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_a_zip_bomb_is_refused_before_anything_is_unpacked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(uploads, "MAX_UNPACKED_BYTES", 2 * 2**20)  # the same rule at a test-sized limit
    bomb = _zip({"corpus.jsonl": b"0" * (4 * 2**20)})  # 4 MB of zeros, a few KB packed
    assert len(bomb) < 50_000
    with pytest.raises(ValueError, match="unpacks to 4 MB, over the 2 MB limit"):
        uploads.load_upload("bomb.zip", bomb, tmp_path)
    assert not any(tmp_path.rglob("corpus.jsonl"))


@pytest.mark.parametrize("member", ["../escape/corpus.jsonl", "/abs/corpus.jsonl", "a/../../corpus.jsonl",
                                    "C:/corpus.jsonl"])
def test_a_member_outside_the_folder_is_refused(tmp_path: Path, member: str) -> None:
    with pytest.raises(ValueError, match="outside the upload's folder"):
        uploads.load_upload("evil.zip", _zip({member: b"{}"}), tmp_path / "u")
    assert not (tmp_path / "escape").exists()


def test_links_and_too_many_members_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is a link"):
        uploads.load_upload("link.zip", _zip({"corpus.jsonl": b"{}"}, link="queries.jsonl"), tmp_path)
    many = _zip({f"f{i}.txt": b"" for i in range(uploads.MAX_MEMBERS + 1)})
    with pytest.raises(ValueError, match="files inside"):
        uploads.load_upload("many.zip", many, tmp_path)
