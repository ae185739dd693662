"""Finishing or undoing what dead writers left behind (the caller holds the library's write lock).

An ingest or re-index whose owner is gone has its vectors and keywords purged and is marked failed
with a message saying what to do; the stored file stays, so ingesting the same file again works. An
interrupted delete is finished. A claim whose owner is gone is released. A folder under ``files/``
with no registry row (what a kill between storing a file and writing its row left, in earlier
versions) and temporary files of dead writers are removed.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rag.index.durable import writer_pid
from rag.index.failpoints import reached
from rag.index.keywords import KeywordIndex
from rag.index.ownership import process_alive
from rag.index.registry import Registry

logger = logging.getLogger(__name__)


class DocumentStore(Protocol):
    """What recovery needs of ``rag.index.store.DocumentStore`` (which imports this module)."""

    registry: Registry
    keywords: KeywordIndex
    files_dir: Path

    def purge_index_entries(self, doc_id: str) -> None: ...

    def document_dir(self, doc_id: str) -> Path: ...

INTERRUPTED = "interrupted: the previous ingest stopped before finishing; ingest the file again"
INTERRUPTED_REINDEX = "interrupted: a re-index stopped before finishing; re-index the document again"
_DOC_FOLDER = re.compile(r"^[0-9a-f]{16}$")


@dataclass
class RecoveryReport:
    failed: list[str] = field(default_factory=list)  # interrupted ingests and re-indexes, now failed
    deleted: list[str] = field(default_factory=list)  # interrupted deletes, now finished
    released: list[str] = field(default_factory=list)  # claims of dead owners on finished documents
    orphans: list[str] = field(default_factory=list)  # folders and temporary files removed


def recover_interrupted(store: DocumentStore) -> RecoveryReport:
    """Purge and fail dead owners' unfinished documents, finish interrupted deletes, release dead claims."""
    report = RecoveryReport()
    registry = store.registry
    claims = {claim.doc_id: claim for claim in registry.claims()}
    for record in registry.unfinished():
        claim = claims.pop(record.doc_id, None)
        if record.status == "deleting":  # its deleter is not at work: this process holds the lock
            finish_delete(store, record.doc_id)
            report.deleted.append(record.doc_id)
            continue
        if claim is not None and claim.alive():
            continue
        store.purge_index_entries(record.doc_id)
        reindex = claim is not None and claim.operation == "reindex"
        registry.update(record.doc_id, status="failed", chunks=0,
                        error=INTERRUPTED_REINDEX if reindex else INTERRUPTED)
        registry.release(record.doc_id)
        reached("recovery.failed_one")
        report.failed.append(record.doc_id)
    for doc_id, claim in claims.items():
        if not claim.alive():  # a re-index that died before its swap: the old index is intact
            registry.release(doc_id)
            report.released.append(doc_id)
    if report.failed or report.deleted:
        # the dead writer may have committed token rows without saving the matrices built from them
        store.keywords.save_if_stale()
    return report


def finish_delete(store: DocumentStore, doc_id: str) -> None:
    """The steps of a delete after its row is marked ``deleting``: vectors, keywords, files, row."""
    store.purge_index_entries(doc_id)
    reached("delete.purged")
    shutil.rmtree(store.document_dir(doc_id), ignore_errors=True)
    reached("delete.files_removed")
    store.registry.delete(doc_id)
    reached("delete.row_removed")


def remove_orphans(store: DocumentStore) -> list[str]:
    """Remove document folders with no registry row and temporary files of dead writers."""
    removed: list[str] = []
    if not store.files_dir.is_dir():
        return removed
    known = {record.doc_id for record in store.registry.all()}
    for folder in store.files_dir.iterdir():
        if folder.is_dir() and _DOC_FOLDER.match(folder.name) and folder.name not in known:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
            continue
        if folder.is_dir():
            for path in folder.iterdir():
                pid = writer_pid(path.name)
                if pid is not None and pid != os.getpid() and not process_alive(pid, ""):
                    path.unlink(missing_ok=True)
                    removed.append(str(path))
    return removed


def make_private_dir(root: Path) -> None:
    """Create ``root`` (and missing parents) readable by its owner only (0700): it holds the user's
    documents. An existing folder keeps the permissions its owner chose."""
    missing = []
    path = root
    while not path.exists():
        missing.append(path)
        path = path.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            pass
