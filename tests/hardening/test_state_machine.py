"""A Hypothesis state machine over the library: real Chroma, real BM25, the fake hash embedder.

Rules: ingest (valid and broken files, first time or again), a duplicate under another name,
delete, re-index with other chunk sizes, restart (close and reopen), and kill: an ingest, delete,
re-index or a store's opening run in a child process that sends itself SIGKILL at a chosen write
step (``rag.index.failpoints``), after which the library is recovered as the next writer would. After
every step ``check_library`` asserts that registry, Chroma and BM25 agree on the completed documents
and their chunk ids, that every completed document is found by a sentence of its own, that a document
a kill left ``embedding`` (keyword-searchable, vectors partly stored) is found by keywords, and that no
failed or deleted document is found at all.

CI runs 40 examples of up to 6 steps. 200 took 408 s of a 17-minute suite (fresh clone of e9f5936, load
~1; 123 s when first measured), 100 took 229 to 322 s in fresh-clone runs of the same code (the 322 s
one in a 17.6-minute suite, fresh clone of 6dab8f8), and 60 took 127 s and 268 s in two fresh-clone runs
of one stop (2f18e40, 33cec6f): the largest and most variable item of a suite that is over its 15-minute
aim. A profile of 15 examples spends most of its time waiting for the kill rules' children and reopening
Chroma after another process wrote (~0.6 s each). The release run is larger:
``CITEWISE_STATEFUL_EXAMPLES=2000 CITEWISE_STATEFUL_STEPS=20 .venv/bin/python -m pytest
tests/hardening/test_state_machine.py -p no:cacheprovider --timeout 7200`` (see README, "Storage").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from tests.hardening import kill_child
from tests.hardening.library import broken_files, check_library, document_pool, fake_router

EXAMPLES = int(os.environ.get("CITEWISE_STATEFUL_EXAMPLES", "40"))
STEPS = int(os.environ.get("CITEWISE_STATEFUL_STEPS", "6"))
POOL = document_pool()
_BROKEN_DIR = Path(tempfile.mkdtemp(prefix="citewise-broken-"))
BROKEN = broken_files(_BROKEN_DIR)
CHUNK_SIZES = st.sampled_from([None, 40, 64])  # None: the default (one chunk per pool document)
MAX_KILL_STEP = 24  # an ingest passes ~12 failpoints, a re-index ~20: beyond that the child finishes
_TEMPLATE: list[str] = []


def _new_library() -> str:
    """A fresh, empty library folder: a copy of one made once (Chroma's first open migrates its
    database, which costs more than everything else an example does)."""
    if not _TEMPLATE:
        folder = tempfile.mkdtemp(prefix="citewise-sm-template-")
        config = kill_child.config_for(folder)
        DocumentStore(config, fake_router(config)).close()
        _TEMPLATE.append(folder)
    folder = tempfile.mkdtemp(prefix="citewise-sm-")
    shutil.copytree(_TEMPLATE[0], folder, dirs_exist_ok=True)
    return folder


class LibraryMachine(RuleBasedStateMachine):
    """The model: which pool documents are completed (by doc id) and which must not be found."""

    @initialize()
    def open_library(self) -> None:
        self.folder = _new_library()
        self.config = kill_child.config_for(self.folder)
        self.store = DocumentStore(self.config, fake_router(self.config), lock_timeout_s=30)
        self.completed: dict[str, int] = {}  # doc id -> pool index
        self.gone: dict[str, str] = {}  # doc id -> probe, for deleted or failed documents
        self.probes: dict[str, str] = {}

    def teardown(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------------

    def _ingestor(self, chunk_size: int | None = None) -> Ingestor:
        return Ingestor(self.store, kill_child.config_for(self.folder, chunk_size))

    def _observe(self) -> None:
        """Take the registry's word for what a killed child left (after recovery): every document is
        completed, still embedding (killed while its vectors were stored: it resumes), failed or gone,
        and the model follows."""
        records = {r.doc_id: r for r in self.store.documents()}
        for doc_id, probe in self.probes.items():
            record = records.get(doc_id)
            if record is not None and record.status == "completed":
                self.completed[doc_id] = next(i for i, d in enumerate(POOL) if d.probe == probe)
                self.gone.pop(doc_id, None)
            elif record is not None and record.status == "embedding":
                self.completed.pop(doc_id, None)
                self.gone.pop(doc_id, None)
            else:
                self.completed.pop(doc_id, None)
                self.gone[doc_id] = probe

    # -- rules --------------------------------------------------------------------------------

    @rule(index=st.integers(0, len(POOL) - 1), rename=st.booleans())
    def ingest(self, index: int, rename: bool) -> None:
        document = POOL[index]
        name = f"copy-of-{document.name}" if rename else document.name
        result = self._ingestor().ingest_bytes(document.data, name)
        self.probes[result.doc_id] = document.probe
        if result.doc_id in self.completed:
            assert result.status == "duplicate" and "not stored again" in result.error
        else:
            assert result.ok, result.error
            self.completed[result.doc_id] = index
            self.gone.pop(result.doc_id, None)

    @rule(which=st.integers(0, len(BROKEN) - 1))
    def ingest_broken(self, which: int) -> None:
        name, data = BROKEN[which]
        before = set(self.completed)
        result = self._ingestor().ingest_bytes(data, name)
        assert result.status == "failed" and result.error
        assert {r.doc_id for r in self.store.documents() if r.status == "completed"} == before

    @precondition(lambda self: self.completed)
    @rule(data=st.data())
    def delete(self, data) -> None:
        doc_id = data.draw(st.sampled_from(sorted(self.completed)))
        self.store.delete(doc_id)
        del self.completed[doc_id]
        self.gone[doc_id] = self.probes[doc_id]

    @rule()
    def delete_unknown(self) -> None:
        try:
            self.store.delete("ffffffffffffffff")
        except KeyError as exc:
            assert "no document" in str(exc)
        else:
            raise AssertionError("deleting an unknown id must raise KeyError")

    @precondition(lambda self: self.completed)
    @rule(data=st.data(), chunk_size=CHUNK_SIZES)
    def reindex(self, data, chunk_size: int | None) -> None:
        doc_id = data.draw(st.sampled_from(sorted(self.completed)))
        result = self._ingestor(chunk_size).reindex(doc_id)
        assert result.ok, result.error

    @rule()
    def restart(self) -> None:
        self.store.close()
        self.store = DocumentStore(self.config, fake_router(self.config), lock_timeout_s=30)

    @rule(op=st.sampled_from(["ingest", "delete", "reindex"]), index=st.integers(0, len(POOL) - 1),
          data=st.data(), kill_at=st.integers(1, MAX_KILL_STEP), chunk_size=CHUNK_SIZES)
    def kill(self, op: str, index: int, data, kill_at: int, chunk_size: int | None) -> None:
        if op != "ingest" and not self.completed:
            op = "ingest"
        if op == "ingest":
            document = POOL[index]
            arg, payload = document.name, document.data
        else:
            arg, payload = data.draw(st.sampled_from(sorted(self.completed))), b""
        code = kill_child.run(self.folder, op, arg, payload, kill_at=kill_at, chunk_size=chunk_size)
        assert code in (0, -9), f"the child {op} ended with {code}, not by finishing or by the kill"
        if op == "ingest":
            self.probes[hashlib.sha256(payload).hexdigest()[:16]] = document.probe
        self.store.recover()  # what the next write, or the next start, does
        self._observe()
        self._redo_after_kill(op, arg, payload)

    def _redo_after_kill(self, op: str, arg: str, payload: bytes) -> None:
        """After a kill the document can be ingested (or re-indexed) again."""
        if op == "ingest":
            doc_id = next(d for d, p in self.probes.items() if payload and POOL[self._pool_index(p)].data == payload)
            if doc_id not in self.completed:
                assert self._ingestor().ingest_bytes(payload, arg).ok
                self.completed[doc_id] = self._pool_index(self.probes[doc_id])
                self.gone.pop(doc_id, None)
        elif op == "reindex" and arg not in self.completed:
            record = self.store.document(arg)
            assert record.status == "embedding" or (record.status == "failed" and "re-index" in record.error), (
                record.status, record.error)
            assert self._ingestor().reindex(arg).ok
            self.completed[arg] = self._pool_index(self.probes[arg])
            self.gone.pop(arg, None)

    @staticmethod
    def _pool_index(probe: str) -> int:
        return next(i for i, d in enumerate(POOL) if d.probe == probe)

    @precondition(lambda self: self.completed)
    @rule(index=st.integers(0, len(POOL) - 1), kill_at=st.integers(1, MAX_KILL_STEP),
          recover_kill=st.integers(1, 12))
    def kill_during_recovery(self, index: int, kill_at: int, recover_kill: int) -> None:
        """A killed ingest leaves work for recovery, and the process that recovers is killed too."""
        document = POOL[index]
        kill_child.run(self.folder, "ingest", document.name, document.data, kill_at=kill_at)
        self.probes[hashlib.sha256(document.data).hexdigest()[:16]] = document.probe
        code = kill_child.run(self.folder, "open", kill_at=recover_kill)
        assert code in (0, -9)
        self.store.recover()
        self._observe()

    # -- the invariant --------------------------------------------------------------------------

    @invariant()
    def library_is_consistent(self) -> None:
        if not hasattr(self, "store"):
            return
        completed = check_library(self.store, self.probes, self.gone)
        assert completed == set(self.completed), f"registry {sorted(completed)} vs model {sorted(self.completed)}"


LibraryMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
TestLibraryStateMachine = LibraryMachine.TestCase
