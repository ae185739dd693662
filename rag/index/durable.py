"""Writing files so that a crash leaves either the old content or the new, never a torn file.

The pattern: write a temporary file beside the target, ``fsync`` it, ``rename`` it over the target
(atomic on POSIX) and ``fsync`` the folder so the rename itself survives a power cut. The temporary
names carry the writer's pid, so two writers never share one and a dead writer's leftovers can be
recognised and removed.

``CITEWISE_FSYNC=off`` skips the ``fsync`` calls (not the renames). Only the crash suites set it: a
killed process leaves the kernel's page cache intact, so ``kill -9`` tests prove the same thing
without it, several times faster; ``fsync`` matters for power loss and kernel crashes.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from rag.index.failpoints import reached

TEMP_MARK = ".partial-"


def temp_name(name: str) -> str:
    """A hidden, per-writer temporary name for ``name`` (``.<name>.partial-<pid>-<random>``), short
    enough for any name a folder can hold (the name is cut to 64 characters)."""
    return f".{name[:64]}{TEMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"


def writer_pid(name: str) -> int | None:
    """The pid of the writer that made a temporary file or folder named by ``temp_name``."""
    if TEMP_MARK not in name:
        return None
    try:
        return int(name.rsplit(TEMP_MARK, 1)[1].split("-", 1)[0])
    except ValueError:
        return None


def syncing() -> bool:
    return os.environ.get("CITEWISE_FSYNC", "on") != "off"


def fsync_dir(path: Path) -> None:
    """Make renames and new entries in ``path`` durable."""
    if not syncing():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on folders; the rename is still atomic there
        pass
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """``fsync`` every file under ``folder``, then the folders themselves (deepest first)."""
    if not syncing():
        return
    folders = []
    for root, _dirs, files in os.walk(folder):
        folders.append(Path(root))
        for name in files:
            fd = os.open(Path(root) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for path in reversed(folders):
        fsync_dir(path)


def write_atomic(target: Path, data: bytes, *, point: str = "file") -> None:
    """Replace ``target`` with ``data`` in one step; a crash leaves the old file or the new one.

    Args:
        target: The file to write.
        data: Its new content.
        point: Failpoint prefix (``<point>.written`` fires between writing and the rename).
    """
    staging = target.with_name(temp_name(target.name))
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if syncing():
                os.fsync(handle.fileno())
        reached(f"{point}.written")
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
