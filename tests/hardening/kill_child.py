"""Work done in a child process that dies by SIGKILL at an armed failpoint (``rag.index.failpoints``).

The state machine runs these through a ``forkserver`` that has imported this module once, so each
child starts in ~0.1 s instead of a fresh interpreter's seconds, and opens its own store (its own
Chroma client, write lock and SQLite connections) on the test's library folder.
"""

from __future__ import annotations

import os
from dataclasses import replace

from rag.config import RagConfig
from rag.index import failpoints
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from tests.hardening.library import fake_router

def config_for(data_dir: str, chunk_size: int | None = None) -> RagConfig:
    base = RagConfig()
    config = replace(base, storage=replace(base.storage, data_dir=data_dir))
    if chunk_size is not None:
        config = config.with_overrides({"chunking.chunk_size": str(chunk_size),
                                        "chunking.chunk_overlap": str(min(10, chunk_size // 4))})
    return config.validate()


def work(data_dir: str, op: str, arg: str, payload: bytes, kill_at: int, chunk_size: int | None,
         log_path: str | None) -> None:
    """Open the library and run ``op`` with the ``kill_at``-th failpoint armed (0: never).

    ``op`` is ``ingest`` (``payload`` named ``arg``), ``delete`` or ``reindex`` (document ``arg``),
    or ``open`` (armed before opening, so the kill lands in the recovery that opening runs).
    """
    config = config_for(data_dir, chunk_size)
    failpoints.log_to(log_path)
    if op == "open":
        failpoints.arm(kill_at or None)
    store = DocumentStore(config, fake_router(config), lock_timeout_s=30)
    failpoints.arm(kill_at or None)
    if op == "ingest":
        Ingestor(store, config).ingest_bytes(payload, arg)
    elif op == "delete":
        store.delete(arg)
    elif op == "reindex":
        Ingestor(store, config).reindex(arg)
    failpoints.arm(None)
    store.close()


def run(data_dir: str, op: str, arg: str = "", payload: bytes = b"", *, kill_at: int = 0,
        chunk_size: int | None = None, log_path: str | None = None, timeout: float = 120) -> int:
    """Run ``work`` in a forkserver child; returns its exit code (-9 when killed at the failpoint)."""
    from tests.children import forkserver

    process = forkserver().Process(target=work, args=(data_dir, op, arg, payload, kill_at, chunk_size, log_path))
    process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join()
        raise TimeoutError(f"{op} {arg} did not finish within {timeout} s")
    code = process.exitcode
    process.close()
    return code


if __name__ == "__main__":  # pragma: no cover - run by hand to list the failpoints of one operation
    import sys
    import tempfile

    folder = tempfile.mkdtemp()
    log = os.path.join(folder, "points.log")
    run(folder, "ingest", "a.txt", b"One sentence to index. Another one to index.", log_path=log)
    sys.stdout.write(open(log, encoding="utf-8").read())
