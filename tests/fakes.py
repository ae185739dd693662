"""Small fakes for unit tests: a deterministic embedder and a scripted LLM."""

from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field

_TOKEN = re.compile(r"[\u4e00-\u9fff]|\w+")


class HashEmbedding(BaseEmbedding):
    """Bag-of-words vectors from hashed tokens: texts sharing words are similar, others are not."""

    model_id: str = Field(default="hash")
    dim: int = Field(default=64)

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(self.dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()):
            vector[int(hashlib.md5(token.encode()).hexdigest(), 16) % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return (vector / norm if norm else vector + 1.0 / np.sqrt(self.dim)).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


class ScriptedLLM(CustomLLM):
    """Replies with the given texts in turn (the last one repeats); records every prompt."""

    replies: list[str] = Field(default_factory=lambda: ["ok"])
    prompts: list[str] = Field(default_factory=list)
    stream_options: list[dict[str, Any]] = Field(default_factory=list)  # the sampling options of each streamed reply

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=4096, num_output=256, model_name="scripted")

    def _next(self, prompt: str) -> str:
        self.prompts.append(prompt)
        index = min(len(self.prompts) - 1, len(self.replies) - 1)
        return self.replies[index]

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._next(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._next(prompt)
        self.stream_options.append(dict(kwargs))

        def gen() -> CompletionResponseGen:
            so_far = ""
            for piece in re.findall(r"\S+\s*", text):
                so_far += piece
                yield CompletionResponse(text=so_far, delta=piece)

        return gen()


def texts(nodes: Sequence[Any]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def make_engine(store: Any, config: Any, llm: Any = None, *, reranker: Any = None, backend: str = "embedded",
                fallback: Any = None, **options: Any) -> Any:
    """The app's query engine for ``config`` over ``store``, answering with ``llm`` (None: retrieval only)."""
    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.llm_runner import LLMRunner

    runner = None if llm is None else LLMRunner(llm, backend=backend, fallback_factory=fallback)
    return CitewiseQueryEngine.from_config(config, store, runner, reranker=reranker, **options)
