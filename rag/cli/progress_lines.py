"""``python -m rag ingest`` progress on stderr: one line per stage, and the counters as they move.

On a terminal the current line is rewritten in place (at most ``TTY_EVERY_S`` apart); into a file or a
pipe a line is written when the stage changes and then at most every ``LOG_EVERY_S`` seconds, so a log
shows the stage, n of N, the rate and the time left without thousands of lines.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from rag.ingest.progress import ProgressView

TTY_EVERY_S = 0.2
LOG_EVERY_S = 5.0


class ProgressPrinter:
    """Writes ``ProgressView``s of one document to ``stream``.

    Args:
        stream: Where to write. Defaults to stderr.
        clock: Monotonic seconds. Defaults to ``time.monotonic``.
    """

    def __init__(self, stream: TextIO | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream or sys.stderr
        self._clock = clock
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._stage = ""
        self._last = float("-inf")
        self._width = 0

    def __call__(self, view: ProgressView) -> None:
        now = self._clock()
        new_stage = view.stage != self._stage
        if not new_stage and now - self._last < (TTY_EVERY_S if self._tty else LOG_EVERY_S):
            return
        self._stage, self._last = view.stage, now
        line = f"{view.file_name[:40]}: {view.text()} ({view.elapsed_s:.1f} s)"
        if self._tty:
            ending = "\n" if view.stage in ("done", "failed") else ""
            self._stream.write("\r" + line.ljust(self._width) + ending)
            self._width = 0 if ending else len(line)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()
