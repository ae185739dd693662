"""Every question starts from the same llama.cpp cache, so its answer does not depend on the questions before it.

llama.cpp reuses the previous prompt's KV cache up to their longest common prefix. Which tokens were evaluated in
which batch changes the floating-point results slightly, and a long greedy answer then diverges. Four broad prompts
were each asked after three different histories; 6 of the 12 answers (300 tokens) differed from the same prompt
asked on an empty cache (docs/answering.md, "A noise floor"). So the first model call of each question starts
from a snapshot taken once per system prompt: that system prompt evaluated alone, from an empty cache. A call with
no system prompt starts from an empty cache. Later calls of the same question keep reusing the cache, so the answer
after the gate still evaluates only a few new tokens.

A question is marked by ``begin_question`` (the engine calls it for each question). The mark is a context variable,
so each Streamlit session's thread has its own. Calls made outside a question, such as ingest-time metadata, are
not pinned. If two questions' calls interleave, the second question restarts from its snapshot: the result is the
same, only slower. A snapshot holds the KV state of the system prompt's ~200 tokens: 6 MB for the 1.5B model.
"""

from __future__ import annotations

import contextvars
import ctypes
import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

logger = logging.getLogger(__name__)

MAX_SNAPSHOTS = 4  # the answer rules (factoid English, the rest, broad) and one more
_QUESTION: contextvars.ContextVar[int | None] = contextvars.ContextVar("citewise_question", default=None)
_NUMBERS = itertools.count(1)


def begin_question() -> None:
    """Mark the start of a question in this context: its first model call starts from a pinned cache."""
    _QUESTION.set(next(_NUMBERS))


@dataclass(frozen=True)
class _Snapshot:
    tokens: Any  # the token ids the state holds (numpy array)
    state: bytes


class PrefixPins:
    """The snapshots of one llama.cpp context, and which question its cache belongs to now.

    Call ``start`` while holding the model's turn, before each generation.
    """

    def __init__(self) -> None:
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._owner: int | None = None

    def start(self, llama: Any, messages: Sequence[dict[str, str]]) -> None:
        """Set the cache for the first call of a new question; anything else keeps it as it is."""
        question = _QUESTION.get()
        if question is None or question == self._owner or not _has_state_io(llama):
            return
        self._owner = question
        system = messages[0]["content"] if messages and messages[0].get("role") == "system" else None
        try:
            if system is None:
                _clear(llama)
            elif system in self._snapshots:
                self._snapshots.move_to_end(system)
                _restore(llama, self._snapshots[system])
            else:
                self.take(llama, system)
        except Exception as exc:  # noqa: BLE001 - an unpinned cache still answers, only less reproducibly
            logger.warning("could not pin the model's cache to the system prompt: %s", exc)
            llama.reset()

    def take(self, llama: Any, system: str) -> None:
        """Evaluate ``system`` alone from an empty cache and keep that state (the app's warm-up calls this)."""
        pinned = _has_state_io(llama)
        if pinned:
            _clear(llama)
        llama.create_chat_completion(messages=[{"role": "system", "content": system}, {"role": "user", "content": ""}],
                                     max_tokens=1, temperature=0.0)
        if not pinned:
            return
        self._snapshots[system] = snapshot = _save(llama)
        _restore(llama, snapshot)  # the cache laid out as every later restore lays it out
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)


def _has_state_io(llama: Any) -> bool:
    """A real llama-cpp-python ``Llama`` (test doubles have no context to save)."""
    return getattr(getattr(llama, "_ctx", None), "ctx", None) is not None and hasattr(llama, "input_ids")


def _save(llama: Any) -> _Snapshot:
    # llama-cpp-python's save_state also copies the logits of every cached token (129 MB, 0.3 s); only the KV state
    # and the token ids are needed to continue from here
    import llama_cpp

    size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
    buffer = (ctypes.c_uint8 * int(size))()
    written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
    return _Snapshot(llama.input_ids[: llama.n_tokens].copy(), ctypes.string_at(buffer, int(written)))


def _clear(llama: Any) -> None:
    """An empty cache: no tokens, and no cells left over that would change how attention is summed."""
    llama.reset()
    llama._ctx.kv_cache_clear()


def _restore(llama: Any, snapshot: _Snapshot) -> None:
    import llama_cpp

    _clear(llama)
    buffer = (ctypes.c_uint8 * len(snapshot.state)).from_buffer_copy(snapshot.state)
    if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(snapshot.state)) != len(snapshot.state):
        raise RuntimeError("llama.cpp did not take the whole saved state")
    llama.input_ids[: len(snapshot.tokens)] = snapshot.tokens
    llama.n_tokens = len(snapshot.tokens)
