"""The answer's first-phrase confidence: recorded from the model's logits while it streams, and the check on it."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.answer.confidence import answer_confidence, check_confidence, first_phrase, TokenProb
from rag.config import ConfigError, RagConfig
from rag.evaluation.answer_scoring import refused_by
from rag.ingest.ingestor import Ingestor
from rag.models.llm_embedded import EmbeddedLLM
from rag.prompts import ABSTAIN_EN
from tests import fixtures
from tests.fakes import make_engine

VOCAB = 50


class ScriptedLlama:
    """A llama.cpp stand-in: streams ``pieces`` and, per step, hands the logits processor logits we choose.

    Step k's logits are 0 everywhere except ``logit[k]`` on the token it then emits (and ``rival[k]`` on token
    0, to make the emitted token not the argmax); the emitted token is visible as the last input id next step.
    """

    def __init__(self, pieces: list[str], logit: list[float], rival: list[float] | None = None) -> None:
        self.vocab = ["<rival>"] + pieces
        self.pieces, self.logit = pieces, logit
        self.rival = rival or [0.0] * len(pieces)
        self.n_tokens = 0
        self.metadata: dict[str, str] = {}

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def detokenize(self, tokens: list[int]) -> bytes:
        return "".join(self.vocab[t] for t in tokens).encode("utf-8")

    def create_chat_completion(self, messages: list[dict[str, str]], stream: bool = False,
                               logits_processor: Any = None, **_: Any) -> Any:
        ids = [7, 8, 9]  # the prompt
        for step, piece in enumerate(self.pieces):
            scores = np.zeros(VOCAB, dtype=np.float32)
            scores[step + 1], scores[0] = self.logit[step], self.rival[step]
            if logits_processor is not None:
                logits_processor(np.array(ids, dtype=np.intc), scores)
            ids.append(step + 1)
            yield {"choices": [{"delta": {"content": piece}}]}


def _p(logit: float, rival: float = 0.0) -> float:
    """The softmax probability of the emitted token among VOCAB logits that are 0 but for it and the rival."""
    return math.exp(logit) / (math.exp(logit) + math.exp(rival) + VOCAB - 2)


def test_the_probability_of_each_chosen_token_is_recorded_from_the_logits() -> None:
    llama = ScriptedLlama(["Paris", " [", "1", "]."], [6.0, 2.0, 9.0, 4.0], rival=[0.0, 5.0, 0.0, 0.0])
    llm = EmbeddedLLM(llama, model_name="fake", temperature=0.0)
    text = "".join(r.delta for r in llm.stream_chat([]))
    assert text == "Paris [1]."
    recorded = llm.last_token_probs
    assert [t for t, _, _ in recorded] == ["Paris", " [", "1", "]."]
    assert [p for _, p, _ in recorded] == pytest.approx([_p(6.0), _p(2.0, 5.0), _p(9.0), _p(4.0)], abs=1e-5)
    # step 2 emitted a token that was not the likeliest: its top probability is the rival's
    assert recorded[1][2] == pytest.approx(_p(5.0, 2.0), abs=1e-5) and recorded[0][2] == pytest.approx(_p(6.0), abs=1e-5)
    confidence = answer_confidence(recorded)
    assert confidence["phrase"] == "Paris" and confidence["first_p"] == pytest.approx(_p(6.0), abs=1e-4)
    assert confidence["argmax_share"] == 0.75


def test_only_the_first_tokens_are_recorded() -> None:
    pieces = [f" w{i}" for i in range(30)]
    llm = EmbeddedLLM(ScriptedLlama(pieces, [3.0] * 30), model_name="fake")
    "".join(r.delta for r in llm.stream_chat([]))
    assert len(llm.last_token_probs) == 16


def test_the_first_phrase_ends_at_the_first_marker_or_sentence_end() -> None:
    def tokens(*texts: str) -> list[TokenProb]:
        return [TokenProb(t, 0.5, 0.5) for t in texts]

    assert [t.text for t in first_phrase(tokens("3", ".", "5", " million", " [", "1"))] == ["3", ".", "5", " million"]
    assert [t.text for t in first_phrase(tokens("Paris", ".", " It", " is"))] == ["Paris", "."]
    assert [t.text for t in first_phrase(tokens("一", "九", "。", "他"))] == ["一", "九"]
    assert [t.text for t in first_phrase(tokens(" [", "1"))] == [" ["]  # never empty
    mixed = answer_confidence([("a", 0.9, 0.9), ("b", 0.1, 0.8), ("[", 0.01, 0.01)])
    assert mixed["mean_p"] == pytest.approx(0.3) and mixed["min_p"] == 0.1 and mixed["first_p"] == 0.9
    assert answer_confidence([]) is None


def test_the_check_refuses_below_the_minimum_and_never_without_a_signal() -> None:
    confidence = {"mean_p": 0.3, "min_p": 0.1, "first_p": 0.9, "phrase": "1771"}
    note = check_confidence(confidence, "mean_p", 0.5)
    assert note and not note["supported"] and note["check"] == "confidence" and "0.30 < 0.50" in note["reason"]
    assert check_confidence(confidence, "first_p", 0.5) is None
    assert check_confidence(confidence, "mean_p", 0.0) is None  # 0 = off
    assert check_confidence(None, "mean_p", 0.9) is None  # a backend without probabilities still answers


@pytest.mark.parametrize(("key", "value"), [("generation.answer_confidence_min", 1.5),
                                            ("generation.answer_confidence_min", -0.1)])
def test_the_setting_is_bounded(key: str, value: float) -> None:
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: must be between 0(\.0)? and 1"):
        RagConfig().with_overrides({key: value})
    with pytest.raises(ConfigError, match="answer_confidence_signal"):
        RagConfig().with_overrides({"generation.answer_confidence_signal": "median"})


@pytest.fixture
def world(store, config: RagConfig, tmp_path: Path):
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, answer_check=False, verify_with_llm=False,
                                        answer_confidence_min=0.5)).validate()
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    return store, config


ANSWER = ["1200", " milligrams", " [", "1", "]."]
QUESTION = "What is the maximum daily dose of ibuprofen for adults?"


def test_an_unsure_answer_is_not_shown_and_the_reason_is_given(world) -> None:
    store, config = world
    unsure = EmbeddedLLM(ScriptedLlama(ANSWER, [1.0, 1.0, 8.0, 8.0, 8.0]), model_name="fake")
    result = make_engine(store, config, unsure).answer(QUESTION)
    assert result.abstained and result.answer == ABSTAIN_EN and not result.citations
    assert result.draft.startswith("1200 milligrams [1]")
    (note,) = result.verification
    assert note["check"] == "confidence" and "unsure" in note["reason"] and note["sentence"] == "1200 milligrams"
    assert result.trace["answer_confidence"]["mean_p"] < 0.5 and refused_by(result) == "confidence"


def test_a_sure_answer_is_shown_and_its_confidence_recorded(world) -> None:
    store, config = world
    sure = EmbeddedLLM(ScriptedLlama(ANSWER, [9.0, 9.0, 9.0, 9.0, 9.0]), model_name="fake")
    result = make_engine(store, config, sure).answer(QUESTION)
    assert not result.abstained and result.citations
    assert result.trace["answer_confidence"]["mean_p"] == pytest.approx(_p(9.0), abs=1e-3)
    off = replace(config, generation=replace(config.generation, answer_confidence_min=0.0))
    unsure = EmbeddedLLM(ScriptedLlama(ANSWER, [1.0, 1.0, 8.0, 8.0, 8.0]), model_name="fake")
    assert not make_engine(store, off, unsure).answer(QUESTION).abstained  # 0 records without refusing


def test_ask_anyway_and_broad_questions_are_not_refused_for_confidence(world) -> None:
    store, config = world
    unsure = EmbeddedLLM(ScriptedLlama(ANSWER, [1.0, 1.0, 8.0, 8.0, 8.0]), model_name="fake")
    stream = make_engine(store, config, unsure).stream(QUESTION, skip_gate=True)
    "".join(stream)
    asked_anyway = stream.result()
    assert not asked_anyway.abstained and asked_anyway.citations  # the user asked to see the draft
    unsure = EmbeddedLLM(ScriptedLlama(ANSWER, [1.0, 1.0, 8.0, 8.0, 8.0]), model_name="fake")
    broad = make_engine(store, config, unsure).answer("Summarise what this document says about ibuprofen.")
    assert not any(note.get("check") == "confidence" for note in broad.verification)
