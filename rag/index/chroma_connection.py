"""The Chroma client of one data folder in this process, reopened when another process wrote to it.

Embedded Chroma keeps each collection's HNSW graph in the memory of the process that opened it and
never re-reads it from disk, so a second process sees nothing the first adds after it opened, and
its first read of a collection replays Chroma's write-ahead log into the graph files on disk (a
write). So, per data folder:

- every Chroma write, and every (re)open, happens under the library's write lock (``FolderLock``);
- a writer touches ``chroma.changed`` *before* writing (so a writer killed mid-way still tells the
  others), and every process compares that file's identity (one ``stat``) before each read;
- a process that sees a change reopens its client under the lock, and reads every collection once
  while it holds it, so later lock-free reads never replay the log themselves.

A reader that cannot get the lock soon (a long write) keeps its previous view for that query and
tries again on the next. A ``chroma run`` server, or a client passed in, is shared by design and is
never reopened. One instance per folder per process: every store on the folder shares it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import chromadb
from chromadb.config import Settings as ChromaSettings

from rag.config import StorageConfig
from rag.index.durable import write_atomic
from rag.index.failpoints import reached
from rag.index.folder_lock import FolderLock, LibraryBusyError

logger = logging.getLogger(__name__)

MARKER = "chroma.changed"


def connect(storage: StorageConfig) -> chromadb.ClientAPI:
    """A new Chroma client for ``storage`` (embedded folder or server)."""
    settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if storage.chroma_mode == "server":
        try:
            return chromadb.HttpClient(host=storage.chroma_host, port=storage.chroma_port, settings=settings)
        except Exception as exc:  # chromadb raises plain ValueError/ConnectionError variants
            raise ConnectionError(
                f"Chroma server at {storage.chroma_host}:{storage.chroma_port} did not answer ({exc}); "
                "start it with `chroma run --path DIR --host HOST --port PORT` or set storage.chroma_mode=embedded"
            ) from exc
    path = Path(storage.data_dir).expanduser() / "chroma"
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=settings)


class ChromaConnection:
    """A Chroma client shared by the stores of one folder in this process (see the module docstring).

    Args:
        storage: Where Chroma lives.
        lock: The folder's write lock (None for a client passed in or a server: never reopened).
        client: A client to use as is (tests, servers). Defaults to opening one for ``storage``.
    """

    def __init__(self, storage: StorageConfig, lock: FolderLock | None, *, client: Any = None) -> None:
        self._storage = storage
        self._lock = lock if client is None and storage.chroma_mode != "server" else None
        self._marker = Path(storage.data_dir).expanduser() / MARKER if self._lock else None
        self._client = client
        self._seen: tuple[int, int, int] | None = None
        self._gate = threading.Condition()
        self._users = 0
        self._reopening = False
        self.generation = 0  # bumped at every (re)open: collection handles of older generations are dead
        self.writes = 0  # bumped at every write by any store of this process: cached counts are stale
        self.refs = 1
        # collections read once under the lock since the last (re)open; lock-free reads use only these
        self._warmed: set[str] | None = set() if self._marker is not None else None

    # -- reads --------------------------------------------------------------------------------

    def stale(self) -> bool:
        """Whether another process wrote since this one (re)opened: one ``stat``."""
        return self._marker is not None and (self._client is None or _identity(self._marker) != self._seen)

    def refresh(self, *, wait: float) -> bool:
        """Reopen if stale, waiting at most ``wait`` s for the lock; False if still stale."""
        if not self.stale():
            return True
        assert self._lock is not None
        try:
            with self._lock.hold("refreshing its view of the vectors", timeout=wait):
                self.sync_locked()
            return True
        except LibraryBusyError as exc:
            if self._client is None:
                raise
            logger.info("vectors not refreshed (%s); using the previous view", exc)
            return False

    @contextlib.contextmanager
    def using(self) -> Iterator[tuple[Any, tuple[int, int]]]:
        """The current client and its version (generation, writes), kept open while the caller uses it."""
        with self._gate:
            while self._reopening:
                self._gate.wait()
            self._users += 1
        try:
            with self._gate:
                if self._client is None:
                    if self._marker is not None:
                        raise RuntimeError("the vector store is closed or was never opened (refresh first)")
                    self._client = connect(self._storage)  # a server: opened lazily, never reopened
            yield self._client, (self.generation, self.writes)
        finally:
            with self._gate:
                self._users -= 1
                self._gate.notify_all()

    def readable(self, name: str) -> bool:
        """Whether a lock-free read of collection ``name`` is safe (it will not replay the log)."""
        return self._warmed is None or name in self._warmed

    # -- writes (the caller holds the folder lock) ---------------------------------------------

    def created(self, name: str) -> None:
        """A collection this process made (under the lock): reading it later is safe."""
        if self._warmed is not None:
            self._warmed.add(name)

    def sync_locked(self) -> None:
        """Reopen if another process wrote since this one looked."""
        if self.stale():
            self._reopen()

    def begin_write(self) -> None:
        """Bring this view up to date, then tell every other process that the vectors change."""
        self.sync_locked()
        self.writes += 1
        if self._marker is not None:
            write_atomic(self._marker, os.urandom(8).hex().encode(), point="chroma.marker")
            self._seen = _identity(self._marker)
        reached("chroma.marked")

    def close(self) -> None:
        with self._gate:
            client, self._client = self._client, None
        if client is not None and self._marker is not None:
            client.close()

    # -- internals ----------------------------------------------------------------------------

    def _reopen(self) -> None:
        with self._gate:
            self._reopening = True
            while self._users:
                self._gate.wait()
        try:
            seen = _identity(self._marker) if self._marker else None
            if self._client is not None:
                self._client.close()
                self._client = None
            client = connect(self._storage)
            warmed = set()
            for collection in client.list_collections():
                # the first read of a collection replays Chroma's log into its files: do it now, locked
                name = collection if isinstance(collection, str) else collection.name
                client.get_collection(name, embedding_function=None).count()
                warmed.add(name)
            self._client, self._seen, self._warmed = client, seen, warmed
            self.generation += 1
        finally:
            with self._gate:
                self._reopening = False
                self._gate.notify_all()


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


_SHARED: dict[str, ChromaConnection] = {}
_SHARED_GUARD = threading.Lock()


def shared_connection(storage: StorageConfig, lock: FolderLock, *, client: Any = None) -> ChromaConnection:
    """The folder's connection in this process (a new private one for a client passed in)."""
    if client is not None or storage.chroma_mode == "server":
        return ChromaConnection(storage, lock, client=client)
    key = os.path.realpath(Path(storage.data_dir).expanduser())
    with _SHARED_GUARD:
        connection = _SHARED.get(key)
        if connection is None or connection.refs <= 0:
            connection = _SHARED[key] = ChromaConnection(storage, lock)
        else:
            connection.refs += 1
        return connection


def release_connection(connection: ChromaConnection) -> None:
    """One store is done with ``connection``; the last one closes the client."""
    with _SHARED_GUARD:
        connection.refs -= 1
        if connection.refs > 0:
            return
        for key, shared in list(_SHARED.items()):
            if shared is connection:
                del _SHARED[key]
    connection.close()
