"""The saved BM25 matrices: a new folder per save, switched in atomically, checked by content on load.

Layout under ``bm25/<collection>/``: ``tokens.sqlite3`` (the source of truth: every chunk's tokens),
``index-<time>-<pid>/`` folders (the bm25s matrices over tokens and token pairs, plus a manifest), and
``CURRENT``, a small file naming the folder in use.

A save writes a private staging folder (named with the writer's pid, so two writers never share
one), ``fsync``s it, renames it into place, and only then replaces ``CURRENT`` (write, fsync,
rename). The previous folder stays until the next save, so a crash at any step leaves a complete
index that ``CURRENT`` names, and a reader that read ``CURRENT`` a moment ago can still load it.

The manifest records the sha256 of every matrix file and a digest of the token rows the matrices
were built from; a load verifies both, so an index built from other rows (a crash between committing
tokens and saving, or anything else that edited the rows) is never trusted, even if the row count
matches. An index that fails the check is rebuilt from ``tokens.sqlite3``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import bm25s

from rag.index.durable import fsync_dir, fsync_tree, temp_name, write_atomic, writer_pid
from rag.index.failpoints import reached
from rag.index.ownership import process_alive

logger = logging.getLogger(__name__)

FORMAT = 2
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
_LEGACY = ("bm25s", "bm25s.tmp")  # the single folder (and shared staging) of format 1


class InvalidIndex(Exception):
    """The saved index is missing, torn, or was not built from the current token rows."""


@dataclass(frozen=True)
class SavedIndex:
    retriever: bm25s.BM25 | None  # None when the index holds no chunks
    phrases: bm25s.BM25 | None
    chunk_ids: list[str]
    doc_ids: list[str]
    digest: str
    name: str


def rows_digest(rows: Iterable[tuple[str, str, str]]) -> str:
    """Content digest of (chunk_id, doc_id, tokens JSON) rows, in index order."""
    digest = hashlib.sha256()
    for chunk_id, doc_id, tokens in rows:
        digest.update(f"{chunk_id}\x1f{doc_id}\x1f{tokens}\x1e".encode("utf-8"))
    return digest.hexdigest()


def build(token_lists: list[list[str]], params: dict[str, float]) -> tuple[bm25s.BM25 | None, bm25s.BM25 | None]:
    """The two matrices over chunks' tokens and their adjacent pairs (None, None for no chunks)."""
    if not token_lists:
        return None, None
    retriever = bm25s.BM25(**params)
    retriever.index([t or [""] for t in token_lists], show_progress=False)
    phrases = bm25s.BM25(**params)
    phrases.index([token_pairs(t) or [""] for t in token_lists], show_progress=False)
    return retriever, phrases


def token_pairs(tokens: Sequence[str]) -> list[str]:
    """Adjacent token pairs, the phrase evidence ("new york" as one unit)."""
    return [f"{a}\u241f{b}" for a, b in zip(tokens, tokens[1:])]


def current_identity(root: Path) -> tuple[int, int, int] | None:
    """Changes whenever ``CURRENT`` is replaced (a new inode each time); None when there is none."""
    try:
        stat = os.stat(root / CURRENT)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def save(root: Path, retriever: bm25s.BM25 | None, phrases: bm25s.BM25 | None, chunk_ids: list[str],
         doc_ids: list[str], digest: str, params: dict[str, float], *, still_current: Callable[[], bool]) -> str | None:
    """Write a new index folder and switch ``CURRENT`` to it; returns its name.

    Args:
        still_current: Asked just before the switch; when another writer changed the token rows
            meanwhile it returns False, and this save is dropped (that writer saves a newer one).
    """
    name = f"index-{time.time_ns():x}-{os.getpid()}"
    staging = root / temp_name(name)
    try:
        staging.mkdir()
        if retriever is not None and phrases is not None:
            retriever.save(str(staging / "tokens"))
            phrases.save(str(staging / "pairs"))
        files = {str(p.relative_to(staging)): _sha256(p) for p in sorted(staging.rglob("*")) if p.is_file()}
        manifest = {"format": FORMAT, "params": params, "digest": digest, "files": files,
                    "chunk_ids": chunk_ids, "doc_ids": doc_ids}
        (staging / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
        fsync_tree(staging)
        reached("bm25.staged")
        os.rename(staging, root / name)
        fsync_dir(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    reached("bm25.renamed")
    if not still_current():
        shutil.rmtree(root / name, ignore_errors=True)
        return None
    previous = read_current(root)
    write_atomic(root / CURRENT, name.encode("utf-8"), point="bm25.current")
    reached("bm25.switched")
    prune(root, keep={name, previous} - {None})
    return name


def read_current(root: Path) -> str | None:
    try:
        return (root / CURRENT).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def saved_digest(root: Path) -> str | None:
    """The row digest the index ``CURRENT`` names was built from (None if there is none)."""
    name = read_current(root)
    try:
        return str(json.loads((root / name / MANIFEST).read_text(encoding="utf-8"))["digest"]) if name else None
    except (OSError, ValueError, KeyError):
        return None


def load(root: Path, params: dict[str, float]) -> SavedIndex:
    """The index ``CURRENT`` names, with its files verified (not yet checked against the rows).

    Raises:
        InvalidIndex: Nothing saved, a missing or changed file, other BM25 parameters, or a torn manifest.
    """
    name = read_current(root)
    if name is None:
        raise InvalidIndex("no saved index")
    folder = root / name
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT:
            raise InvalidIndex(f"saved with format {manifest.get('format')}")
        if {k: float(v) for k, v in manifest["params"].items()} != params:
            raise InvalidIndex(f"saved with BM25 parameters {manifest['params']}, not {params}")
        for relative, expected in manifest["files"].items():
            if _sha256(folder / relative) != expected:
                raise InvalidIndex(f"{relative} does not match its checksum")
        chunk_ids, doc_ids = list(manifest["chunk_ids"]), list(manifest["doc_ids"])
        retriever = phrases = None
        if chunk_ids:
            retriever = bm25s.BM25.load(str(folder / "tokens"))
            phrases = bm25s.BM25.load(str(folder / "pairs"))
            for index in (retriever, phrases):
                if int(index.scores["num_docs"]) != len(chunk_ids):
                    raise InvalidIndex("the matrices and the chunk list disagree")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidIndex(f"{name}: {exc}") from exc
    return SavedIndex(retriever, phrases, chunk_ids, doc_ids, str(manifest["digest"]), name)


def prune(root: Path, *, keep: set[str]) -> None:
    """Remove index folders not in ``keep``, staging folders of dead writers, and the format-1 folders."""
    for path in root.iterdir():
        if not path.is_dir():
            if writer_pid(path.name) is not None and not process_alive(writer_pid(path.name) or 0, ""):
                path.unlink(missing_ok=True)
            continue
        pid = writer_pid(path.name)
        stale = (path.name.startswith("index-") and path.name not in keep) or path.name in _LEGACY
        if pid is not None:
            stale = pid != os.getpid() and not process_alive(pid, "")
        if stale:
            shutil.rmtree(path, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
