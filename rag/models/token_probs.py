"""Recording how likely each generated token was, for the answer's confidence (``rag.answer.confidence``)."""

from __future__ import annotations

import math
from typing import Any

# answer tokens whose probability is recorded: the answer's first phrase is seldom longer, and the embedded
# model's softmax over the whole vocabulary (~150k tokens) is paid only for these steps
CONFIDENCE_TOKENS = 16


class TokenRecorder:
    """A llama.cpp logits processor recording the probability of each chosen token for the first ``limit`` steps.

    At step k it stores the log-softmax of the logits; the token chosen at step k is the last input id at step
    k + 1 (so sampling at any temperature is read correctly); the last recorded step's token, never seen as an
    input, is taken as the step's argmax. Later steps cost nothing but a length check.

    Args:
        limit: Steps to record.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._steps: list[tuple[Any, int | None]] = []  # (log-softmax, chosen token id once known)
        self._prompt_length: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np

        if self._prompt_length is None:
            self._prompt_length = len(input_ids)
        step = len(input_ids) - self._prompt_length
        if 0 < step <= len(self._steps) and self._steps[step - 1][1] is None:
            self._steps[step - 1] = (self._steps[step - 1][0], int(input_ids[-1]))
        if step < self.limit and step == len(self._steps):
            logits = np.asarray(scores, dtype=np.float64)
            shifted = logits - logits.max()
            self._steps.append((shifted - np.log(np.exp(shifted).sum()), None))
        return scores

    def tokens(self, detokenize: Any) -> list[tuple[str, float, float]]:
        """(text, P(chosen), P(argmax)) per recorded step."""
        out = []
        for log_probs, chosen in self._steps:
            best = int(log_probs.argmax())
            token = best if chosen is None else chosen
            out.append((detokenize(token), round(math.exp(float(log_probs[token])), 6),
                        round(math.exp(float(log_probs[best])), 6)))
        return out


def server_token_probs(choice: Any) -> list[tuple[str, float, float]]:
    """(text, P(token), P(likeliest)) of a streamed chunk's tokens; empty when the server sent no logprobs."""
    out = []
    for item in getattr(getattr(choice, "logprobs", None), "content", None) or []:
        try:
            p = math.exp(float(item.logprob))
            tops = [math.exp(float(t.logprob)) for t in getattr(item, "top_logprobs", None) or []]
            out.append((str(item.token), round(p, 6), round(max([p, *tops]), 6)))
        except (TypeError, ValueError, AttributeError):  # a server's odd logprobs must not fail the answer
            continue
    return out
