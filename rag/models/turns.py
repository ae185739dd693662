"""Taking turns on a model that can serve one call at a time: first come, first served, with a bounded wait.

llama.cpp is not thread-safe, and every browser session of the app shares one loaded model, so calls
queue for it. A call that does not get its turn within the timeout fails with ``ModelBusyError``, which
says how many calls were ahead of it, instead of waiting without end. Whoever waits can hear how the
queue moves through a listener set for the current context (``listen_for_turns``): the Chat page uses
it to show "waiting for the model (N questions ahead)".

Each question holds at most one place in the queue at a time (its model calls run one after another),
so the calls ahead of a caller are the questions ahead of it.

A call may keep the model for its own thread's next call (``keep_for_s``): the answerability check
shares the answer prompt's whole prefix, so llama.cpp answers after it by evaluating a dozen tokens
instead of the whole prompt, but only if no other prompt was evaluated in between. Served strictly in
turn, eight sessions would interleave check and answer and every answer would evaluate its prompt again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

logger = logging.getLogger(__name__)

TurnListener = Callable[[int], None]
_listener: ContextVar[TurnListener | None] = ContextVar("model_turn_listener", default=None)


class ModelBusyError(RuntimeError):
    """The model did not become free within the wait allowed; ``ahead`` calls were in front of this one.

    Args:
        ahead: Calls holding or waiting for the model ahead of this one when the wait ended.
        timeout_s: The wait allowed, in seconds.
    """

    def __init__(self, ahead: int, timeout_s: float) -> None:
        self.ahead = ahead
        self.timeout_s = timeout_s
        were = "question was" if ahead == 1 else "questions were"
        super().__init__(f"The model is busy: {ahead} {were} ahead of yours and it did not become free within "
                         f"{timeout_s:g} s (llm.queue_timeout_s). Ask again in a moment, or allow a longer wait "
                         "in Settings.")


@contextmanager
def listen_for_turns(listener: TurnListener) -> Iterator[None]:
    """Within the block, waits for a model call ``listener(ahead)`` as the queue moves, then ``listener(0)``.

    The listener runs on the waiting thread (helper threads started with a copy of this context call it
    too); an exception it raises is logged and ignored.

    Args:
        listener: Called with the number of calls ahead whenever it changes, and with 0 on getting the turn.
    """
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


class ModelTurns:
    """A first-come, first-served lock with a bounded wait and a count of who is waiting."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._queue: deque[object] = deque()
        self._busy = False
        self._kept: tuple[int, float] | None = None  # (thread, until): the model is kept for that thread's next call

    @property
    def waiting(self) -> int:
        """Calls waiting for their turn now (the one being served not counted)."""
        with self._changed:
            return len(self._queue)

    @property
    def busy(self) -> bool:
        """True while a call is being served."""
        with self._changed:
            return self._busy

    @contextmanager
    def turn(self, timeout_s: float, *, keep_for_s: float = 0.0) -> Iterator[None]:
        """Hold the model for the block, after waiting at most ``timeout_s`` behind earlier callers.

        Args:
            timeout_s: Longest wait for the turn.
            keep_for_s: After the block, keep the model this long for this thread's next call (which then
                goes first); others wait meanwhile. Defaults to 0 (the next caller in line goes on).

        Raises:
            ModelBusyError: The turn did not come within ``timeout_s``.
        """
        self._wait_for_turn(timeout_s)
        try:
            yield
        finally:
            with self._changed:
                self._busy = False
                self._kept = (threading.get_ident(), time.monotonic() + keep_for_s) if keep_for_s > 0 else None
                self._changed.notify_all()

    def _wait_for_turn(self, timeout_s: float) -> None:
        listener = _listener.get()
        ticket = object()
        me = threading.get_ident()
        deadline = time.monotonic() + timeout_s
        told: int | None = None
        with self._changed:
            if self._kept_for() == me:
                self._queue.appendleft(ticket)  # the call the model was kept for
            else:
                self._queue.append(ticket)
        try:
            while True:
                with self._changed:
                    keeper = self._kept_for()
                    held = self._busy or (keeper is not None and keeper != me)
                    ahead = self._queue.index(ticket) + (1 if held else 0)
                    if ahead == 0:
                        self._queue.popleft()
                        self._busy, self._kept = True, None
                        break
                    now = time.monotonic()
                    remaining = deadline - now
                    if remaining <= 0:
                        raise ModelBusyError(ahead, timeout_s)
                    if ahead == told:
                        # wake when the queue moves, or when a kept model is released by the clock
                        until = self._kept[1] - now if keeper is not None and not self._busy else remaining
                        self._changed.wait(max(0.0, min(remaining, until)) or 0.001)
                        continue
                # tell the listener outside the lock: it may draw on a page, and others must not wait for that
                told = ahead
                _tell(listener, ahead)
        except BaseException:
            with self._changed:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                    self._changed.notify_all()  # everyone behind this caller moved up
            raise
        if told is not None:
            _tell(listener, 0)

    def _kept_for(self) -> int | None:
        """The thread the free model is kept for now, if any (call with the lock held)."""
        if self._kept is None or self._busy or time.monotonic() >= self._kept[1]:
            return None
        return self._kept[0]


def _tell(listener: TurnListener | None, ahead: int) -> None:
    if listener is None:
        return
    try:
        listener(ahead)
    except Exception as exc:  # noqa: BLE001 - a failing notice must not cost the caller its turn
        logger.warning("the model-wait listener failed: %s", exc)
