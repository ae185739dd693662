"""Two processes on one library: the app ingests while the command line lists, searches, ingests,
deletes and re-indexes. Nothing is lost, and every command either works or says why it waits or fails.
A document the app is still embedding is keyword-searchable, and deleting it from the command line
works: the app's next batch finds it gone and stores nothing.

The "app" is this test process (a store and its background ingest queue, with an embedder that can
hold one document mid-ingest); the command line is ``python -m rag`` in child processes, with the
hash embedder in place of the bundled models (``cli_fake_models``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from rag.index.store import DocumentStore
from rag.ingest.queue import IngestQueue
from rag.models.embedding_router import EmbedderRouter
from tests.children import REPO, wait_for_line
from tests.fakes import HashEmbedding
from tests.hardening.kill_child import config_for
from tests.hardening.library import EMBED_DIM, check_library, document_pool

POOL = document_pool()
APP_DOCS, CLI_DOCS = POOL[:5], POOL[5:8]
_HELD_WORD = APP_DOCS[4].probe.split()[1]  # the app's embedder holds the document with this word
_HOLDING = threading.Event()
_RELEASE = threading.Event()


class AppEmbedding(HashEmbedding):
    """The hash embedder, a little slow, holding one document until the test releases it."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if any(_HELD_WORD in text for text in texts):
            _HOLDING.set()
            assert _RELEASE.wait(300), "the test never released the held document"
        time.sleep(0.2)
        return super()._get_text_embeddings(texts)


def _doc_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _cli(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    environment = {**os.environ, "RAG_DATA_DIR": str(folder), "HF_HUB_OFFLINE": "1", **(env or {})}
    environment.pop("RAG_CONFIG", None)
    return subprocess.Popen([sys.executable, "-m", "tests.hardening.cli_fake_models", *args], cwd=REPO,
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return process.returncode, out, err


def test_the_command_line_works_beside_an_ingesting_app(tmp_path: Path) -> None:
    folder = tmp_path / "library"
    config = config_for(str(folder))
    app = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: AppEmbedding(
        model_id=f"hash-{spec.split(':')[-1]}", dim=EMBED_DIM)))
    queue = IngestQueue(app)
    _HOLDING.clear()
    _RELEASE.clear()
    try:
        for document in APP_DOCS:
            queue.submit(document.data, document.name, config)
        assert _HOLDING.wait(300)  # four app documents are in, the fifth is keyword-searchable and embedding
        held = _doc_id(APP_DOCS[4].data)
        files = []
        for document in CLI_DOCS:
            (tmp_path / document.name).write_bytes(document.data)
            files.append(str(tmp_path / document.name))

        # wave 1, all at once, while the app embeds: list, search, ingest
        listing = _cli(folder, "docs", "--json")
        search = _cli(folder, "search", APP_DOCS[0].probe, "--json")
        found_early = _cli(folder, "search", APP_DOCS[4].probe, "--json")
        ingest = _cli(folder, "ingest", *files)
        code, out, _ = _finish(listing)
        statuses = {d["id"]: d["status"] for d in json.loads(out)}
        assert code == 0 and statuses[held] == "embedding"  # keyword-searchable; not purged by the CLI's store
        assert all(statuses[_doc_id(d.data)] == "completed" for d in APP_DOCS[:4])
        code, out, _ = _finish(search)
        assert code == 0 and json.loads(out)["hits"][0]["doc_id"] == _doc_id(APP_DOCS[0].data)
        code, out, _ = _finish(found_early)  # the other process finds the document the app still embeds
        # found, by BM25 alone: not necessarily first, since its keyword weight (0.5) only ties a document that
        # tops both dense lists without a shared word (the hash "models" rank alike, the tie goes to the dense one)
        assert code == 0 and held in [hit["doc_id"] for hit in json.loads(out)["hits"]]
        code, out, err = _finish(ingest)
        assert code == 0 and out.count("completed") == len(CLI_DOCS), err
        # then delete what the app is embedding: it works, and the app stores nothing more of it
        code, out, err = _finish(_cli(folder, "delete", held))
        assert code == 0 and out.startswith("deleted"), err
        for document in CLI_DOCS:  # the app sees the command line's documents without reopening
            assert app.keywords.search(document.probe, k=3)[0].doc_id == _doc_id(document.data)

        # wave 2: the app holds the write lock (a long commit): one command waits, one gives up after 1 s
        with app.writing("indexing big.pdf"):
            waiter = _cli(folder, "delete", _doc_id(CLI_DOCS[0].data))
            quitter = _cli(folder, "delete", _doc_id(CLI_DOCS[1].data), env={"CITEWISE_LOCK_TIMEOUT_S": "1"})
            wait_for_line(waiter, f"process {os.getpid()}", stream="stderr", timeout=300)
            code, _, err = _finish(quitter)
            assert code == 3 and "busy" in err and f"process {os.getpid()}" in err and "indexing big.pdf" in err
        code, out, err = _finish(waiter)
        assert code == 0 and out.startswith("deleted"), err
    finally:
        _RELEASE.set()
    queue.wait(300)
    results = [job.result for job in queue.jobs()]
    assert [r.status for r in results] == ["completed"] * 4 + ["failed"], [r.error for r in results]
    assert "deleted while its vectors were being stored" in results[4].error

    # wave 3: re-index an app document from the command line, then list everything
    code, out, err = _finish(_cli(folder, "--set", "chunking.chunk_size=40", "reindex", _doc_id(APP_DOCS[1].data)))
    assert code == 0 and out.startswith("completed"), err
    code, out, _ = _finish(_cli(folder, "docs", "--json"))
    listed = {d["id"]: d["status"] for d in json.loads(out)}
    expected = {_doc_id(d.data) for d in APP_DOCS + CLI_DOCS} - {_doc_id(CLI_DOCS[0].data), held}
    assert listed == {doc_id: "completed" for doc_id in expected}
    assert app.document(_doc_id(APP_DOCS[1].data)).chunks > 1  # the app sees the re-index too
    probes = {_doc_id(d.data): d.probe for d in APP_DOCS + CLI_DOCS}
    gone = {_doc_id(CLI_DOCS[0].data): CLI_DOCS[0].probe, held: APP_DOCS[4].probe}
    assert check_library(app, probes, gone) == expected
    app.close()
