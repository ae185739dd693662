"""The write lock of a data folder: one writer at a time across processes and threads.

``<data>/write.lock`` is locked with ``flock`` (released by the kernel when the holder dies, even by
``kill -9``), and a thread lock serialises the threads of one process, which share a single file
descriptor per folder. The holder writes who it is (pid, start time, command, operation, since when)
into the lock file, so a writer that waits too long fails with a message naming the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from rag.index.ownership import Owner, command_line, current

logger = logging.getLogger(__name__)

_POLL_S = 0.05


class LibraryBusyError(RuntimeError):
    """Another writer held the library's write lock for longer than this one would wait."""

    def __init__(self, message: str, holder: dict | None = None) -> None:
        super().__init__(message)
        self.holder = holder or {}


class FolderLock:
    """Exclusive, re-entrant write lock of one data folder (get it with ``folder_lock``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._threads = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._owner_thread: int | None = None
        self._operation = ""
        self._since = 0.0

    @contextlib.contextmanager
    def hold(self, operation: str, *, timeout: float,
             on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the lock for ``operation``, waiting at most ``timeout`` seconds for the holder.

        Raises:
            LibraryBusyError: The lock stayed taken; the message names the holder and its operation.
        """
        self.acquire(operation, timeout=timeout, on_wait=on_wait)
        try:
            yield
        finally:
            self.release()

    def acquire(self, operation: str, *, timeout: float, on_wait: Callable[[str], None] | None = None) -> None:
        deadline = time.monotonic() + max(timeout, 0.0)
        got = self._threads.acquire(blocking=False) if timeout <= 0 else self._threads.acquire(timeout=timeout)
        if not got:
            raise LibraryBusyError(self._busy_message(self._describe_self(), timeout), self.holder() or {})
        try:
            if self._depth == 0:
                self._lock_file(operation, deadline, timeout, on_wait)
                self._owner_thread = threading.get_ident()
            self._depth += 1
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner_thread = None
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._threads.release()

    @property
    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._depth > 0 and self._owner_thread == threading.get_ident()

    @property
    def depth(self) -> int:
        """How many nested ``hold``s the calling thread is inside (0 when it does not hold the lock)."""
        return self._depth if self.held else 0

    def holder(self) -> dict | None:
        """Who holds the lock, as its holder wrote it (None when free or not yet written)."""
        try:
            text = self.path.read_text(encoding="utf-8")
            return json.loads(text) if text.strip() else None
        except (OSError, ValueError):
            return None

    # -- internals ----------------------------------------------------------------------------

    def _lock_file(self, operation: str, deadline: float, timeout: float,
                   on_wait: Callable[[str], None] | None) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        announced = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    holder = self.holder()
                    if time.monotonic() >= deadline:
                        raise LibraryBusyError(self._busy_message(describe_holder(holder), timeout), holder)
                    if not announced and on_wait is not None:
                        on_wait(f"waiting up to {timeout:g} s for the library's write lock: "
                                f"{describe_holder(holder)}")
                        announced = True
                    time.sleep(_POLL_S)
            owner = current()
            self._operation, self._since = operation, time.time()
            info = {"pid": owner.pid, "started": owner.started, "command": command_line(owner.pid),
                    "operation": operation, "since": self._since}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
            self._fd = fd
        except BaseException:
            os.close(fd)
            raise

    def _describe_self(self) -> str:
        return f"this process ({os.getpid()}) is {self._operation or 'writing'} since {_clock(self._since)}"

    def _busy_message(self, who: str, timeout: float) -> str:
        return (f"the library at {self.path.parent} is busy: {who}; waited {timeout:g} s. "
                "Try again when it finishes.")


def describe_holder(holder: dict | None) -> str:
    """``process 1234 (python -m rag ingest big.pdf) is ingest big.pdf since 12:03:04``."""
    if not holder:
        return "another process is writing (it has not said which yet)"
    owner = Owner(int(holder.get("pid", 0)), str(holder.get("started", "")))
    who = f"process {owner.pid}" + (f" ({holder['command']})" if holder.get("command") else "")
    if owner == current():
        who = f"this process ({owner.pid})"
    return f"{who} is {holder.get('operation') or 'writing'} since {_clock(float(holder.get('since', 0)))}"


def _clock(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp)) if timestamp else "an unknown time"


_LOCKS: dict[str, FolderLock] = {}
_LOCKS_GUARD = threading.Lock()


def folder_lock(root: Path) -> FolderLock:
    """The one ``FolderLock`` of ``root`` in this process (flock locks are per open file, so two
    instances in one process would block each other)."""
    key = os.path.realpath(root)
    with _LOCKS_GUARD:
        if key not in _LOCKS:
            _LOCKS[key] = FolderLock(Path(key) / "write.lock")
        return _LOCKS[key]


def _forget_in_child() -> None:
    # a forked child must not believe it holds its parent's lock; closing its copy of the descriptor
    # leaves the parent's flock in place (the lock belongs to the shared open file)
    global _LOCKS
    for lock in _LOCKS.values():
        if lock._fd is not None:
            with contextlib.suppress(OSError):
                os.close(lock._fd)
    _LOCKS = {}


os.register_at_fork(after_in_child=_forget_in_child)
