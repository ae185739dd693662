"""The scale-out path: the same store code against a real `chroma run` server on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import chromadb
import pytest

from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.index.store import DocumentStore
from tests import fixtures

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path: Path):
    port = _free_port()
    chroma = Path(sys.executable).with_name("chroma")
    process = subprocess.Popen([str(chroma), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("chroma server did not start within 60 s")
                time.sleep(0.5)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_ingest_and_delete_through_a_chroma_server(chroma_server: int, config: RagConfig, fake_router,
                                                   tmp_path: Path) -> None:
    server_config = replace(config, storage=replace(config.storage, chroma_mode="server",
                                                    chroma_port=chroma_server)).validate()
    store = DocumentStore(server_config, fake_router)
    result = Ingestor(store, server_config).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert result.ok, result.error

    remote = chromadb.HttpClient(host="127.0.0.1", port=chroma_server)
    # one collection per English model (MiniLM's and the second model's), each with a vector per chunk
    names = sorted(c if isinstance(c, str) else c.name for c in remote.list_collections())
    assert len(names) == 2
    assert [remote.get_collection(name).count() for name in names] == [result.chunks, result.chunks]
    assert not (Path(server_config.storage.data_dir) / "chroma").exists()  # nothing went to the local folder

    embedder = fake_router.for_language("en")
    hits = store.vectors.query(embedder.model_id, embedder.get_query_embedding("results"), k=3)
    assert hits and hits[0].metadata["doc_id"] == result.doc_id
    second = fake_router.second_english()
    hits = store.vectors.query(second.model_id, second.get_query_embedding("results"), k=3)
    assert hits and hits[0].metadata["doc_id"] == result.doc_id
    store.delete(result.doc_id)
    assert [remote.get_collection(name).count() for name in names] == [0, 0]
