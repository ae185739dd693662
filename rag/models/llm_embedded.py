"""A llama-index LLM that runs a GGUF model in-process with llama.cpp (``llama-cpp-python``).

The model's own chat template (read from the GGUF, ChatML for Qwen) formats the messages. A
llama.cpp context is not re-entrant, so calls take turns (``rag.models.turns``: first come, first
served), each holding the model for its whole stream; a call that does not get its turn within
``queue_timeout_s`` fails with ``ModelBusyError``. llama.cpp keeps the KV cache of the previous
prompt and re-evaluates only the part after the longest common prefix, so keep fixed text (system
prompt, instructions) at the start of prompts. The first call of each question starts from the system
prompt evaluated alone (``rag.models.prefix_pins``), so an answer does not depend on earlier questions.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from rag.models.assets import GGUFSpec, verify_gguf
from rag.models.prefix_pins import PrefixPins
from rag.models.token_probs import CONFIDENCE_TOKENS, TokenRecorder
from rag.models.turns import ModelTurns

logger = logging.getLogger(__name__)

_SAMPLING_KWARGS = ("temperature", "max_tokens", "stop", "top_p", "top_k", "repeat_penalty", "seed")
# the answer that follows a yes/no check starts a few ms after it on the same thread; keeping the model for
# it means llama.cpp evaluates a dozen new tokens, not the whole prompt that another question would evict
CHECK_KEEPS_MODEL_S = 0.5
# every answer samples from the same seed: llama-cpp-python otherwise derives each call's seed from the previous
# call's, so an answer at temperature > 0 depended on how many model calls (checks included) came before it
SAMPLING_SEED = 1


class EmbeddedLLM(CustomLLM):
    """A loaded ``llama_cpp.Llama`` as a llama-index chat LLM. Build it with :meth:`load`.

    Args:
        llama: A ``llama_cpp.Llama`` (or anything with ``create_chat_completion`` and ``tokenize``).
        model_name: Shown in the UI and in metadata.
        n_ctx: The context window the model was loaded with. Defaults to 4096.
        temperature: Sampling temperature. Defaults to 0.1.
        max_tokens: Answer length limit. Defaults to 384.
        queue_timeout_s: Longest wait for the model while other calls hold it. Defaults to 120.
    """

    model_name: str
    n_ctx: int = Field(default=4096, ge=256)
    temperature: float = Field(default=0.1, ge=0.0, le=2.0)
    max_tokens: int = Field(default=384, ge=1)
    queue_timeout_s: float = Field(default=120.0, gt=0.0)
    last_stats: dict[str, float] = Field(default_factory=dict, exclude=True,
                                         description="Timing of the last generation (seconds, tokens).")
    last_check_stats: dict[str, float] = Field(default_factory=dict, exclude=True,
                                               description="Timing of the last yes/no check.")
    last_token_probs: list[tuple[str, float, float]] = Field(
        default_factory=list, exclude=True,
        description="(text, P(chosen token), P(likeliest token)) of the last answer's first tokens.")
    _llama: Any = PrivateAttr()
    # shared by every copy (``model_copy`` keeps private attributes), like the llama.cpp handle it guards
    _turns: ModelTurns = PrivateAttr(default_factory=ModelTurns)
    _pins: PrefixPins = PrivateAttr(default_factory=PrefixPins)

    def __init__(self, llama: Any, *, model_name: str, **kwargs: Any) -> None:
        super().__init__(model_name=model_name, **kwargs)
        self._llama = llama

    @classmethod
    def load(cls, path: Path, *, spec: GGUFSpec | None = None, model_name: str | None = None,
             n_ctx: int = 4096, n_threads: int = 2, temperature: float = 0.1,
             max_tokens: int = 384) -> EmbeddedLLM:
        """Verify a GGUF file (size + sha256 when ``spec`` is given), then load it.

        Raises:
            ImportError: llama-cpp-python is not installed.
            rag.models.assets.ModelIntegrityError: The file fails verification.
        """
        path = Path(path)
        verify_gguf(path, spec)
        try:
            import llama_cpp
        except ImportError as exc:
            raise ImportError("the embedded LLM needs llama-cpp-python: pip install llama-cpp-python "
                              "(built with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AMX_INT8=OFF)") from exc
        started = time.monotonic()
        llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                n_threads_batch=n_threads, verbose=False)
        if "tokenizer.chat_template" not in (llama.metadata or {}) and spec is not None:
            llama.chat_format = spec.chat_format
        logger.info("loaded %s in %.1fs (n_ctx=%d, threads=%d)", path.name, time.monotonic() - started,
                    n_ctx, n_threads)
        return cls(llama, model_name=model_name or (spec.name if spec else path.stem), n_ctx=n_ctx,
                   temperature=temperature, max_tokens=max_tokens)

    @classmethod
    def class_name(cls) -> str:
        return "EmbeddedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.n_ctx, num_output=self.max_tokens, is_chat_model=True,
                           model_name=self.model_name)

    @property
    def waiting(self) -> int:
        """Calls waiting for the model now (the one it is serving not counted)."""
        return self._turns.waiting

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer (no BOS)."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def warm_up(self, system_prompt: str) -> float:
        """Evaluate ``system_prompt`` once, so the first question finds it in the KV cache; returns seconds.

        Only the tokens before the first user message are shared with later prompts; the 1-token reply
        is thrown away. The app calls this in the background right after loading the model.
        """
        with self._turns.turn(self.queue_timeout_s):
            started = time.monotonic()
            self._pins.take(self._llama, system_prompt)  # also the state each question with these rules starts from
            return time.monotonic() - started

    def yes_no_probability(self, messages: Sequence[ChatMessage], yes_words: Sequence[str],
                           no_words: Sequence[str]) -> tuple[float | None, str]:
        """P(first reply token is a yes word) / P(yes or no word), read from the logits.

        One token is generated; the logits of that step are captured by a logits processor (llama.cpp
        computes only the last position's logits, so this costs the prompt plus one step, and the
        prompt's prefix stays in the KV cache for the answer that follows).
        """
        import numpy as np

        yes_ids, no_ids = self._word_ids(yes_words), self._word_ids(no_words)
        captured: dict[str, Any] = {}

        def capture(input_ids: Any, scores: Any) -> Any:
            if "scores" not in captured:
                captured["scores"] = np.array(scores, dtype=np.float64)
            return scores

        try:
            from llama_cpp import LogitsProcessorList
        except ImportError:  # a fake llama in tests
            return None, "logits"
        payload = [_to_dict(m) for m in messages]
        with self._turns.turn(self.queue_timeout_s, keep_for_s=CHECK_KEEPS_MODEL_S):
            self._pins.start(self._llama, payload)
            _reset_perf_counters(self._llama)
            started = time.monotonic()
            self._llama.create_chat_completion(messages=payload, max_tokens=1,
                                               temperature=0.0, logits_processor=LogitsProcessorList([capture]))
            self.last_check_stats = {"total_s": time.monotonic() - started, **_perf_counters(self._llama)}
        scores = captured.get("scores")
        if scores is None or not (yes_ids or no_ids):
            return None, "logits"
        probabilities = np.exp(scores - scores.max())
        yes = float(probabilities[yes_ids].sum()) if yes_ids else 0.0
        no = float(probabilities[no_ids].sum()) if no_ids else 0.0
        return (yes / (yes + no) if yes + no > 0 else None), "logits"

    def _word_ids(self, words: Sequence[str]) -> list[int]:
        """Token ids of the words that are a single token (multi-token words would be ambiguous)."""
        ids = []
        for word in words:
            tokens = self._llama.tokenize(word.encode("utf-8"), add_bos=False, special=False)
            if len(tokens) == 1 and tokens[0] not in ids:
                ids.append(tokens[0])
        return ids

    # --- llama-index LLM interface -------------------------------------------------------------

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        last = ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=""))
        for last in self._stream_chat(messages, **kwargs):
            pass
        return last

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._stream_chat(messages, **kwargs)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        text = ""
        for text, _delta in self._generate([{"role": "user", "content": prompt}], kwargs):
            pass
        return CompletionResponse(text=text)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        def gen() -> CompletionResponseGen:
            for text, delta in self._generate([{"role": "user", "content": prompt}], kwargs):
                yield CompletionResponse(text=text, delta=delta)

        return gen()

    # --- internals ------------------------------------------------------------------------------

    def _stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        payload = [_to_dict(m) for m in messages]

        def gen() -> ChatResponseGen:
            for text, delta in self._generate(payload, kwargs):
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)

        return gen()

    def _generate(self, messages: list[dict[str, str]], kwargs: dict[str, Any]) -> Iterator[tuple[str, str]]:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": SAMPLING_SEED}
        params.update({k: v for k, v in kwargs.items() if k in _SAMPLING_KWARGS})
        text = ""
        recorder = TokenRecorder(CONFIDENCE_TOKENS)
        processors = _processor_list(recorder)
        if processors is not None:
            params["logits_processor"] = processors
        with self._turns.turn(self.queue_timeout_s):
            self._pins.start(self._llama, messages)
            _reset_perf_counters(self._llama)
            prompt_tokens_before = getattr(self._llama, "n_tokens", 0)
            started = time.monotonic()
            first = 0.0
            chunks = 0
            self.last_token_probs = []
            for chunk in self._llama.create_chat_completion(messages=messages, stream=True, **params):
                delta = (chunk["choices"][0].get("delta") or {}).get("content") or ""
                if not delta:
                    continue
                if not chunks:
                    first = time.monotonic() - started
                chunks += 1
                text += delta
                yield text, delta
            total = time.monotonic() - started
            self.last_token_probs = recorder.tokens(self._detokenize)
            self.last_stats = {"ttft_s": first, "total_s": total, "chunks": chunks,
                               "kv_tokens_before": prompt_tokens_before, **_perf_counters(self._llama)}


    def _detokenize(self, token: int) -> str:
        try:
            return self._llama.detokenize([token]).decode("utf-8", errors="replace")
        except Exception:  # noqa: BLE001 - a token outside the vocabulary: keep its probability, not its text
            return ""


def _processor_list(recorder: TokenRecorder) -> Any:
    try:
        from llama_cpp import LogitsProcessorList
    except ImportError:  # llama-cpp-python missing: a fake llama in tests takes a plain list
        return [recorder]
    return LogitsProcessorList([recorder])


def _to_dict(message: ChatMessage) -> dict[str, str]:
    role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
    return {"role": role if role in ("system", "user", "assistant") else "user", "content": message.content or ""}


def _reset_perf_counters(llama: Any) -> None:
    try:
        import llama_cpp

        llama_cpp.llama_perf_context_reset(llama.ctx)
    except Exception:  # a fake in tests, or an API change: timings stay wall-clock only
        pass


def _perf_counters(llama: Any) -> dict[str, float]:
    """llama.cpp's counters for the last call: prompt tokens evaluated (after prefix reuse), generated tokens."""
    try:
        import llama_cpp

        data = llama_cpp.llama_perf_context(llama.ctx)
        return {"prompt_eval_tokens": int(data.n_p_eval), "prompt_eval_s": data.t_p_eval_ms / 1000,
                "gen_tokens": int(data.n_eval), "gen_s": data.t_eval_ms / 1000,
                "context_tokens": int(llama.n_tokens)}
    except Exception:  # a fake in tests, or an API change
        return {}
