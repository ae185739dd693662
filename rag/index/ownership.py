"""Which process owns a write, named so that a reused pid is never mistaken for its first owner.

A pid alone is not an identity: once a process dies the kernel hands its pid to a new one. An owner is
therefore recorded as the pid plus the process's start time (clock ticks since boot, from
``/proc/<pid>/stat``) and the boot id; the owner is alive only while a process with that pid *and* that
start time exists. Where ``/proc`` is missing (macOS), the start time is unknown and a live pid counts
as the owner, which errs on the safe side: a document is never purged under a running ingest.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class Owner:
    """A process: its pid and ``<boot id>:<start ticks>`` (empty where the platform does not say)."""

    pid: int
    started: str

    def alive(self) -> bool:
        return process_alive(self.pid, self.started)

    def describe(self) -> str:
        """``process 1234 (python -m rag ingest a.pdf)``, or ``this process`` for the caller itself."""
        if self == current():
            return f"this process ({self.pid})"
        command = command_line(self.pid)
        return f"process {self.pid}" + (f" ({command})" if command else "")


def current() -> Owner:
    """The calling process (recomputed after a fork, since the child has a new pid)."""
    return _owner_of(os.getpid())


@lru_cache(maxsize=8)
def _owner_of(pid: int) -> Owner:
    return Owner(pid, start_stamp(pid) or "")


def start_stamp(pid: int) -> str | None:
    """``<boot id>:<start ticks>`` of a running process; None if it is gone or a zombie."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its closing one
    fields = stat[stat.rfind(")") + 2:].split()
    if not fields or fields[0] in ("Z", "X"):  # zombie or dead: it holds no locks and writes nothing
        return None
    return f"{_boot_id()}:{fields[19]}"  # field 22 of the full line: start time in clock ticks


def process_alive(pid: int, started: str) -> bool:
    """Whether the process that recorded ``(pid, started)`` still runs."""
    if pid <= 0:
        return False
    if _PROC.is_dir():
        stamp = start_stamp(pid)
        if stamp is None:
            return False
        return not started or not stamp or stamp == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def command_line(pid: int, limit: int = 120) -> str:
    """The command a process runs, shortened for messages ("" if unknown)."""
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if words and Path(words[0]).name.startswith("python"):
        words[0] = "python"
    text = " ".join(words)
    return text if len(text) <= limit else text[:limit - 1] + "…"


@lru_cache(maxsize=1)
def _boot_id() -> str:
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()[:8]
    except OSError:
        return socket.gethostname()
