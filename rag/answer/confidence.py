"""How sure the model was of its answer's first phrase, from the probabilities of the tokens it chose.

The answering backends record, for the first generated tokens (``rag.models.token_probs.CONFIDENCE_TOKENS``),
each token's text and the probability the model gave it (``last_token_probs``: llama.cpp's logits for the
embedded model, the server's ``logprobs`` for an OpenAI-compatible one). The English answer prompt makes the model start with
the shortest phrase a source states (rag.prompts): the probabilities of that phrase, the tokens before the
first ``[n]`` marker or the end of the first sentence, say whether it copied an answer it found or guessed
one. Three figures come out of it:

* ``mean_p``: the geometric mean of the phrase's token probabilities (exp of the mean log-probability);
* ``min_p``: the least likely token of the phrase;
* ``first_p``: the answer's first token.

``check_confidence`` is the post-draft check built on them (``generation.answer_confidence_min``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

SIGNALS = ("mean_p", "min_p", "first_p")
_PHRASE_END = re.compile(r"\[|[.!?](?=\s)|[。！？；;\n]")


@dataclass(frozen=True)
class TokenProb:
    """One generated token: its text, the probability of the chosen token, and of the likeliest one.

    Args:
        text: The token as text (may be part of a character).
        p: The probability the model gave the token it chose (softmax of that step's logits).
        top_p: The highest probability at that step (equals ``p`` when the chosen token is the argmax).
    """

    text: str
    p: float
    top_p: float


def first_phrase(tokens: Sequence[TokenProb]) -> list[TokenProb]:
    """The tokens before the first ``[n]`` marker or sentence end (at least the first token)."""
    phrase: list[TokenProb] = []
    text = ""
    for token in tokens:
        text += token.text
        if _PHRASE_END.search(text) and phrase:
            break
        phrase.append(token)
        if _PHRASE_END.search(text):
            break
    return phrase


def answer_confidence(recorded: Sequence[Sequence[Any]] | None) -> dict[str, Any] | None:
    """``mean_p``, ``min_p``, ``first_p`` of the first phrase, its token count and the share of recorded tokens
    that were the argmax; None when nothing was recorded (a backend without probabilities).

    Args:
        recorded: ``(text, p, top_p)`` per generated token, as the backends' ``last_token_probs`` hold them.
    """
    if not recorded:
        return None
    tokens = [TokenProb(str(text), float(p), float(top)) for text, p, top in recorded]
    phrase = first_phrase(tokens)
    probabilities = [max(t.p, 1e-12) for t in phrase]
    mean_log = sum(math.log(p) for p in probabilities) / len(probabilities)
    return {"mean_p": round(math.exp(mean_log), 4), "min_p": round(min(probabilities), 4),
            "first_p": round(probabilities[0], 4), "phrase_tokens": len(phrase),
            "phrase": "".join(t.text for t in phrase)[:80],
            "argmax_share": round(sum(t.p >= t.top_p - 1e-9 for t in tokens) / len(tokens), 4)}


def check_confidence(confidence: dict[str, Any] | None, signal: str, minimum: float) -> dict[str, Any] | None:
    """A verification note refusing the answer when its ``signal`` is below ``minimum``, else None.

    An unknown confidence (a backend without probabilities) never refuses: answering is the safe failure
    of a missing signal, as with the gate.
    """
    if minimum <= 0 or not confidence or confidence.get(signal) is None:
        return None
    value = float(confidence[signal])
    if value >= minimum:
        return None
    return {"sentence": confidence.get("phrase", ""), "source": None, "supported": False, "check": "confidence",
            "reason": (f"the model was unsure of its answer's first phrase ({_NAMES[signal]} {value:.2f} < "
                       f"{minimum:.2f}), so it is not shown as fact"),
            "missing": [], "quote": "", "p_yes": None, "anchor": None, "confidence": value}


_NAMES = {"mean_p": "mean token probability", "min_p": "least likely token's probability",
          "first_p": "first token's probability"}
