"""A stand-in for llama.cpp for the load benchmark and its tests: no model, a fixed speed, a real lock.

``ScriptedLlama`` has the parts of ``llama_cpp.Llama`` that ``rag.models.llm_embedded.EmbeddedLLM``
uses, so the app's own ``EmbeddedLLM`` (its turn-taking, its yes/no check, its streaming) runs around
it unchanged; only the arithmetic is replaced by a sleep per token. It answers from its prompt: the
first sentence of source 1 with a ``[1]`` marker, "yes" to the answerability check, the last question to
a condensation prompt. It counts how many calls ever ran at once (``max_active``), which must stay 1.
"""

from __future__ import annotations

import re
import threading
import time
import zlib
from typing import Any, Iterator

VOCAB = 4096
_WORD = re.compile(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff]+")
_SOURCE_1 = re.compile(r"<<<SOURCE 1>>>\n(.*?)\n<<<END SOURCE 1>>>", re.DOTALL)
_SENTENCE = re.compile(r".+?(?:[.!?。！？](?=\s|$)|$)", re.DOTALL)
_LAST_QUESTION = re.compile(r"Last question:\s*(.+)")


class ScriptedLlama:
    """Duck-types ``llama_cpp.Llama`` (``create_chat_completion``, ``tokenize``, ``metadata``).

    Args:
        token_s: Seconds each generated piece takes. Defaults to 0.
        prompt_s: Seconds each call takes before its first piece (prompt evaluation). Defaults to 0.
        reply: A fixed reply for every generation instead of one read from the prompt. Defaults to none.
        hold: While this event is clear, every call waits for it inside the model (holding it). Defaults
            to none (never held).
    """

    metadata = {"tokenizer.chat_template": "{{ messages }}"}  # a template of its own: no chat_format needed

    def __init__(self, *, token_s: float = 0.0, prompt_s: float = 0.0, reply: str | None = None,
                 hold: threading.Event | None = None) -> None:
        self.token_s, self.prompt_s, self.reply, self.hold = token_s, prompt_s, reply, hold
        self.n_tokens = 0
        self.calls: list[list[dict[str, str]]] = []
        self.active = 0
        self.max_active = 0
        self.entered = threading.Event()  # set when a call is inside the model
        self._count = threading.Lock()

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        """One id per word (per character of Chinese), from a CRC of it."""
        return [zlib.crc32(w.encode("utf-8")) % VOCAB for w in _WORD.findall(text.decode("utf-8", "replace"))]

    def create_chat_completion(self, messages: list[dict[str, str]], stream: bool = False, max_tokens: int = 256,
                               logits_processor: Any = None, **kwargs: Any) -> Any:
        self._enter(messages)
        if logits_processor is not None and not stream:  # the yes/no check: the logits favour "yes"
            try:
                import numpy as np

                scores = np.full(VOCAB, -10.0)
                scores[self.tokenize(b"yes")] = 10.0
                for processor in logits_processor:
                    processor(np.zeros(1, dtype=np.intc), scores)
                return {"choices": [{"message": {"role": "assistant", "content": "yes"}}]}
            finally:
                self._leave()
        pieces = re.findall(r"\S+\s*", self.reply if self.reply is not None else answer_for(messages))[:max_tokens]
        if not stream:
            try:
                time.sleep(self.token_s * len(pieces))
                return {"choices": [{"message": {"role": "assistant", "content": "".join(pieces)}}]}
            finally:
                self._leave()
        return self._stream(pieces, logits_processor or [])

    def _stream(self, pieces: list[str], processors: Any) -> Iterator[dict[str, Any]]:
        """Yield ``pieces``; each step's logits (shown to ``processors``, as llama.cpp does) favour its piece."""
        import numpy as np

        try:
            yield {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
            ids: list[int] = [0]  # the prompt, as far as a logits processor can tell
            for piece in pieces:
                time.sleep(self.token_s)
                if processors:
                    scores = np.full(VOCAB, -10.0)
                    chosen = (self.tokenize(piece.encode("utf-8")) or [0])[0]
                    scores[chosen] = 10.0
                    for processor in processors:
                        processor(np.array(ids, dtype=np.intc), scores)
                    ids.append(chosen)
                yield {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        finally:
            self._leave()

    def _enter(self, messages: list[dict[str, str]]) -> None:
        with self._count:
            self.calls.append(messages)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.entered.set()
        if self.hold is not None:
            self.hold.wait()
        time.sleep(self.prompt_s)

    def _leave(self) -> None:
        with self._count:
            self.active -= 1


def answer_for(messages: list[dict[str, str]]) -> str:
    """What the stand-in says to a prompt: source 1's first sentence with [1], or the condensed question."""
    prompt = messages[-1]["content"] if messages else ""
    source = _SOURCE_1.search(prompt)
    if source:
        text = " ".join(source.group(1).split()).strip('"')
        sentence = (_SENTENCE.match(text).group(0) if _SENTENCE.match(text) else text).strip()
        return f"{sentence.rstrip('.。')} [1]." if sentence else "ok"
    question = _LAST_QUESTION.search(prompt)
    return question.group(1).strip() if question else "ok"
