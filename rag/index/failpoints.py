"""Named points on the write paths where a crash test can kill the process (``kill -9``).

Storage code calls ``reached("bm25.saved")`` and the like between its write steps. Normally that is a
no-op (one ``None`` check). A crash test arms the points, in a child process, with ``arm(spec)`` or
the ``CITEWISE_KILL_AT`` environment variable: the process sends itself SIGKILL at the n-th point it
reaches (``n``), at the first point with a given name (``name``, or ``name:k`` for its k-th hit), or
k points after a named one (``name+k``; ``+0`` is the named point itself).
``CITEWISE_FAILPOINT_LOG=FILE`` appends every point reached to FILE, so a test can list the steps of
an operation and then kill at each. This is how the state machine and the kill soak prove that a
crash at any write step leaves a library that recovers.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

_ENV = "CITEWISE_KILL_AT"
_LOG_ENV = "CITEWISE_FAILPOINT_LOG"

_target: tuple[str, int] | int | None = None
_after: tuple[str, int] | None = None  # (name, k): k points after name
_since: int | None = None  # points reached since the ``_after`` name
_log: str | None = os.environ.get(_LOG_ENV) or None
_count = 0
_names: Counter[str] = Counter()


def arm(spec: str | int | None) -> None:
    """Kill this process at the ``spec``-th point (int) or at ``name`` / ``name:k``; None disarms."""
    global _target, _after, _since, _count
    _count = 0
    _names.clear()
    _target = _after = _since = None
    if spec is None or spec == "":
        return
    if isinstance(spec, int) or str(spec).isdigit():
        _target = int(spec)
    elif "+" in str(spec):
        name, _, steps = str(spec).partition("+")
        _after = (name, int(steps or 0))
    else:
        name, _, nth = str(spec).partition(":")
        _target = (name, int(nth or 1))


def log_to(path: str | None) -> None:
    """Append every point reached to ``path`` (None stops)."""
    global _log
    _log = path


def reached(name: str) -> None:
    """A write step has just finished: die here if a test armed this point."""
    global _count, _since
    if _target is None and _after is None and _log is None:
        return
    _count += 1
    _names[name] += 1
    if _log is not None:
        with open(_log, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")
    if _after is not None:
        if _since is None and name == _after[0]:
            _since = 0
        elif _since is not None:
            _since += 1
        if _since == _after[1]:
            os.kill(os.getpid(), signal.SIGKILL)
    if _target is not None and (_target == _count or _target == (name, _names[name])):
        os.kill(os.getpid(), signal.SIGKILL)


arm(os.environ.get(_ENV))
