"""``python -m rag`` commands, run in-process with the fast fake embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rag.runtime
from rag.cli.main import main
from rag.models.embedding_router import EmbedderRouter
from tests import fixtures
from tests.fakes import HashEmbedding


@pytest.fixture(autouse=True)
def fake_models(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(rag.runtime, "build_router", lambda config: EmbedderRouter(
        config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")))


def test_ingest_docs_search_delete(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    fixtures.make_english_pdf(folder)
    fixtures.make_markdown(folder)
    assert main(["ingest", str(folder), "--json"]) == 0
    ingested = json.loads(capsys.readouterr().out)
    assert sorted(r["status"] for r in ingested) == ["completed", "completed"]

    assert main(["docs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert {d["file_name"] for d in docs} == {r["file_name"] for r in ingested}
    assert set(docs[0]) == {"id", "file_name", "status", "pages", "chunks", "vectors", "embedded", "language", "error"}
    # vectors, not chunks: every English chunk is embedded by both English models
    assert all(d["embedded"] == d["vectors"] == 2 * d["chunks"] > 0 for d in docs)

    assert main(["search", fixtures.EN_FACT, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["hits"] and {s["name"] for s in found["trace"]["stages"]} >= {"vector", "bm25", "fusion", "final"}

    pdf_id = next(d["id"] for d in docs if d["file_name"].endswith(".pdf"))
    assert main(["delete", pdf_id]) == 0
    assert pdf_id in capsys.readouterr().out
    assert main(["delete", pdf_id]) == 1
    assert "no document" in capsys.readouterr().err


def test_failed_ingest_exits_non_zero_and_says_why(tmp_path: Path, capsys) -> None:
    assert main(["ingest", str(fixtures.make_encrypted_pdf(tmp_path))]) == 1
    assert "password-protected" in capsys.readouterr().out


def test_search_overrides_and_bad_input(tmp_path: Path, capsys) -> None:
    main(["ingest", str(fixtures.make_english_pdf(tmp_path))])
    capsys.readouterr()
    assert main(["--set", "retrieval.top_k=1", "search", "ibuprofen dose adults", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == 1
    # without --json: the hits, then a line per stage and the stage's notes under it
    assert main(["--set", "retrieval.top_k=1", "search", "ibuprofen dose adults"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("[1] ") and "\nstages:\n" in printed
    assert "  final " in printed and "1 of the top 1 fit the 180-token context budget" in printed
    assert main(["search", "   "]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["--set", "retrieval.top_k=0", "docs"]) == 2
    assert "retrieval.top_k" in capsys.readouterr().err


def test_lab_commands_run_as_the_lab_program_in_a_child_process() -> None:
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    done = subprocess.run([sys.executable, "-m", "rag", "--set", "retrieval.top_k=3", "bench", "--help"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "python -m rag.lab bench" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "rag", "--set", "retrieval.top_k=0", "bench", "query"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "retrieval.top_k" in bad.stderr  # the global options reach the lab


def test_embed_resumes_documents_left_keyword_only(tmp_path: Path, capsys) -> None:
    from rag.config import load_config
    from rag.index.searchable import stop_embedding
    from rag.ingest.ingestor import Ingestor
    from rag.runtime import build_store

    class Nobody:
        def submit(self, doc_id, progress=None):
            return progress

    store = build_store(load_config())
    result = Ingestor(store, store.config, background=Nobody()).ingest_path(fixtures.make_english_pdf(tmp_path))
    stop_embedding(store, result.doc_id, "the disk was full")
    store.close()
    vectors = 2 * result.chunks  # English chunks: the English model's vectors and the second model's
    assert main(["docs"]) == 0
    assert f"embedding 0/{vectors}" in capsys.readouterr().out

    assert main(["embed", "0" * 16]) == 1
    assert "not keyword-only" in capsys.readouterr().err
    assert main(["embed"]) == 0
    captured = capsys.readouterr()
    assert f"completed  {result.doc_id}  {vectors}/{vectors} vectors stored" in captured.out
    assert "embedding" in captured.err and "done" in captured.err  # progress on stderr
    assert main(["docs", "--json"]) == 0
    [doc] = json.loads(capsys.readouterr().out)
    assert doc["status"] == "completed" and doc["embedded"] == doc["vectors"] == vectors
