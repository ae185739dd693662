"""Questions first: background work (embedding new documents) gives way while a question is answered.

Two cores are shared by everything the app does. A question's query embedding and answer generation
must not queue behind a document being embedded, so the two sides meet here:

- foreground work (a question: retrieval, the answerability check, the streamed answer) runs inside
  ``foreground()``; any number may be in flight at once, from any thread;
- a background worker calls ``wait_for_turn()`` before each small unit of work (one embedding batch):
  it returns once no foreground work has been in flight for ``grace_s``, so the short gaps between one
  question's steps (sources found → check → first token) do not let a batch slip in.

A unit that has already started is not interrupted (a C call cannot be), so background units are kept
small. A foreground hold older than ``max_hold_s`` is ignored, so an answer stream that a browser
abandoned without closing it cannot stop the background for good.

One ``Priority`` per process (``PROCESS_PRIORITY``) because the CPU is per process; components take
one as an argument so that tests inject their own.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

logger = logging.getLogger(__name__)

GRACE_S = 0.5
MAX_HOLD_S = 600.0
_POLL_S = 0.25  # how often a waiting worker re-checks its stop flag


class Priority:
    """Foreground/background arbitration for one process.

    Args:
        grace_s: Background work waits this long after the last foreground work ended. Defaults to 0.5.
        max_hold_s: A foreground hold older than this no longer holds the background back. Defaults to 600.
        enabled: False makes ``wait_for_turn`` return at once (how things were before; benchmarks compare).
            Defaults to True.
        clock: Monotonic seconds. Defaults to ``time.monotonic``.
    """

    def __init__(self, *, grace_s: float = GRACE_S, max_hold_s: float = MAX_HOLD_S, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if grace_s < 0 or max_hold_s <= 0:
            raise ValueError("grace_s must be >= 0 and max_hold_s > 0")
        self.grace_s = grace_s
        self.max_hold_s = max_hold_s
        self.enabled = enabled
        self._clock = clock
        self._cond = threading.Condition()
        self._holds: dict[int, float] = {}  # hold id -> when it started
        self._ids = itertools.count()
        self._last_end = float("-inf")
        self.waited_s = 0.0  # total time background work spent waiting (benchmarks report it)
        self.waits = 0

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """Mark the enclosed work as a question's: background work waits until it is over (re-entrant)."""
        hold = next(self._ids)
        with self._cond:
            self._holds[hold] = self._clock()
        try:
            yield
        finally:
            with self._cond:
                self._holds.pop(hold, None)
                self._last_end = self._clock()
                self._cond.notify_all()

    def busy(self) -> bool:
        """Whether background work would wait now."""
        with self._cond:
            return self._blocked_for(self._clock()) > 0

    def wait_for_turn(self, *, stop: threading.Event | None = None) -> float:
        """Block until background work may run (or ``stop`` is set); returns the seconds waited."""
        if not self.enabled:
            return 0.0
        started = self._clock()
        with self._cond:
            if self._blocked_for(started) <= 0:
                return 0.0
            while True:
                remaining = self._blocked_for(self._clock())
                if remaining <= 0 or (stop is not None and stop.is_set()):
                    break
                self._cond.wait(timeout=min(remaining, _POLL_S))
        waited = self._clock() - started
        if waited > 0:
            self.waited_s += waited
            self.waits += 1
        return waited

    def _blocked_for(self, now: float) -> float:
        """Seconds background work must still wait (0: it may run); an open hold counts as a full poll."""
        if any(now - since < self.max_hold_s for since in self._holds.values()):
            return _POLL_S
        return max(0.0, self._last_end + self.grace_s - now)


PROCESS_PRIORITY = Priority()
