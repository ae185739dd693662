"""Pseudo-relevance feedback for the lab: search again with what the first pass found (an experiment).

The first pass is today's default fused ranking, replayed from cached lists as ``rag.lab.tune_ensemble``
replays it. Its top passages are taken as relevant and the question is searched once more:

* dense (Rocchio): ``q' = normalise(q + beta * mean of the top-m passages' vectors)``, optionally a mean
  weighted by each passage's cosine to the question; ``q'`` is searched over the whole corpus and its
  list replaces the first dense list in the fusion;
* keyword (RM3-style): the ``t`` best new terms by tf-idf over the top-m passages are added to the BM25
  query, each with weight ``w`` x (its score / the best term's score), scored as the app scores a
  question (``BM25Replay.scores``).

The final fusion is ``tune_fusion.fuse`` at today's default (weights, adaptive rule, depth) unless a
setting re-chooses the vector weight or depth. The adaptive rule reads the first-pass BM25 top hit's
coverage, the one the app has when it fuses. With a second dense model and an ``EnsembleSetting`` (the
three-way fusion of ``rag.lab.ensemble``), that fusion is both the first pass and the final one, and
dense feedback moves the first model's question only.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from rag.evaluation.datasets import EvalDataset
from rag.evaluation.metrics import per_query
from rag.lab.ensemble import EnsembleSetting, fuse3
from rag.lab.replay import BM25Replay, BM25Setting, Hits, dense_lists, dense_vectors, nearest
from rag.lab.tune_ensemble import DEFAULT, LazyEmbedder
from rag.lab.tune_fusion import EVAL_DEPTH, FusionSetting, fuse, score_runs, split_questions, unlike_slice, \
    with_all_questions
from rag.text.language import count_tokens

SHIFT = DEFAULT.weak_lexical_weight - DEFAULT.vector_weight  # the adaptive rule's move, kept when re-weighting


@dataclass(frozen=True)
class PrfSetting:
    """One feedback setting (all zero: the first pass, i.e. today's default).

    Args:
        dense_m: Passages of the first pass whose vectors move the question (0: no dense feedback).
        beta: How far they move it.
        by_similarity: Weigh each passage by its cosine to the question instead of equally.
        keyword_m: Passages of the first pass the expansion terms come from (0: no keyword feedback).
        terms: How many terms are added.
        term_weight: The best added term's weight (a question token weighs 1).
        vector_weight: The fusion's dense weight (the adaptive rule adds ``SHIFT`` below its coverage).
        candidate_k: How deep each list is read, and how many fused results are kept.
        feedback_below: Feedback only for questions whose first-pass BM25 top hit holds less than this
            share of their IDF-weighted terms (the adaptive rule's witness of a weak lexical match);
            0: every question.
    """

    dense_m: int = 0
    beta: float = 0.0
    by_similarity: bool = False
    keyword_m: int = 0
    terms: int = 0
    term_weight: float = 0.0
    vector_weight: float = DEFAULT.vector_weight
    candidate_k: int = DEFAULT.candidate_k
    feedback_below: float = 0.0

    @property
    def dense(self) -> bool:
        return self.dense_m > 0 and self.beta > 0

    @property
    def keyword(self) -> bool:
        return self.keyword_m > 0 and self.terms > 0 and self.term_weight > 0

    def family(self) -> str:
        return {(True, True): "both", (True, False): "dense", (False, True): "keyword"}.get(
            (self.dense, self.keyword), "none")

    def fusion(self) -> FusionSetting:
        """Today's default fusion at this setting's vector weight and depth."""
        return replace(DEFAULT, vector_weight=self.vector_weight, weak_lexical_weight=self.vector_weight + SHIFT,
                       candidate_k=self.candidate_k)

    def label(self, fusion: str | None = None) -> str:
        """The feedback, then ``fusion`` (default: this setting's two-way fusion)."""
        parts = []
        if self.dense:
            parts.append(f"dense m={self.dense_m} beta={self.beta:g}{' by cosine' if self.by_similarity else ''}")
        if self.keyword:
            parts.append(f"keyword m={self.keyword_m} t={self.terms} w={self.term_weight:g}")
        fusion = fusion or f"fusion v={self.vector_weight:.2f} depth={self.candidate_k}"
        gate = f" when coverage<{self.feedback_below:g}" if self.feedback_below and parts else ""
        return f"{' + '.join(parts) or 'no feedback'}{gate}; {fusion}"


def rocchio(query: np.ndarray, feedback: np.ndarray, beta: float, *, by_similarity: bool = False) -> np.ndarray:
    """``normalise(query + beta * centroid)`` of the feedback rows; ``query`` itself without feedback.

    Args:
        query: The question's (normalised) vector.
        feedback: One row per feedback passage (normalised vectors).
        beta: Weight of the centroid.
        by_similarity: Weigh each row by its cosine to ``query`` (negative cosines count 0); equal
            weights when every cosine is <= 0.
    """
    if beta <= 0 or len(feedback) == 0:
        return query
    weights = np.clip(feedback @ query, 0.0, None) if by_similarity else np.ones(len(feedback))
    if weights.sum() <= 0:
        weights = np.ones(len(feedback))
    moved = query + beta * (weights @ feedback) / weights.sum()
    norm = float(np.linalg.norm(moved))
    return moved / norm if norm > 0 else query


def expansion_terms(feedback: Sequence[Sequence[str]], idf: Mapping[str, float], question: Iterable[str],
                    count: int) -> dict[str, float]:
    """The ``count`` best terms of the feedback passages that the question lacks, term -> score / best score.

    A term's score is its length-normalised frequency summed over the passages, times its idf, so a
    term frequent in the feedback and rare in the corpus leads. Ties go to the alphabetically first term.

    Args:
        feedback: The feedback passages' BM25 tokens.
        idf: token -> idf (``BM25Replay.idf``); a token without one scores 0.
        question: The question's tokens (already searched, so never added).
        count: How many terms to keep.
    """
    skip, scores = set(question), Counter()
    for tokens in feedback:
        for term, n in Counter(tokens).items():
            if term not in skip:
                scores[term] += n / len(tokens) * idf.get(term, 0.0)
    best = [t for t in sorted(scores, key=lambda t: (-scores[t], t))[:count] if scores[t] > 0]
    return {t: scores[t] / scores[best[0]] for t in best}


class PrfReplay:
    """One split's questions with their first pass (today's default) and the lists feedback re-ranks.

    Args:
        dataset_name: ``scifact``, ``squad`` or ``cmrc2018``.
        split: A tuning split.
        data_root: Where the datasets are.
        spec: The dense model (its vectors come from the lab cache when there).
        bm25: The BM25 setting (today's default: k1 0.5, b 0.75, phrase 0.5).
        second: (second dense model, three-way fusion) to fuse three lists instead of today's two.
    """

    def __init__(self, dataset_name: str, split: str, data_root: Path, spec: str, bm25: BM25Setting,
                 second: tuple[str, EnsembleSetting] | None = None) -> None:
        full = with_all_questions(dataset_name, data_root)
        self.dataset: EvalDataset = split_questions(full, split, data_root)
        self.qids = list(self.dataset.queries)
        self.vectors = dense_vectors(full, spec, LazyEmbedder(spec))
        self._row = {d: i for i, d in enumerate(self.vectors.doc_ids)}
        position = {q: i for i, q in enumerate(self.vectors.qids)}
        self.queries = self.vectors.queries[[position[q] for q in self.qids]]
        self.dense = dict(zip(self.qids, nearest(self.queries, self.vectors.corpus, self.vectors.doc_ids)))
        self.replayer, self.bm25_setting = BM25Replay(full), bm25
        self.bm25 = {q: self.replayer.top(self.replayer.scores(self.replayer.query_tokens[q], bm25)) for q in self.qids}
        self.coverage = {q: self.replayer.coverage(q, hits[0][0]) for q, hits in self.bm25.items() if hits}
        self.slices = {"unlike": unlike_slice(self.dataset, self.replayer)}
        self.short = {q for q, text in self.dataset.queries.items() if count_tokens(text) <= 2}
        self.ensemble, self.dense_b = (second[1], dense_lists(full, second[0], LazyEmbedder(second[0]))) \
            if second else (None, {})
        self.first = self._fused(self.dense, self.bm25, DEFAULT.candidate_k, DEFAULT)

    def _fused(self, dense: dict[str, Hits], bm25: dict[str, Hits], depth: int,
               fusion: FusionSetting) -> dict[str, list[str]]:
        if self.ensemble:
            return {q: fuse3(bm25[q], dense[q], self.dense_b.get(q, []), self.ensemble, short=q in self.short,
                             coverage=self.coverage.get(q))[:depth] for q in self.qids}
        return self._two_way(dense, bm25, depth, fusion)

    def _two_way(self, dense: dict[str, Hits], bm25: dict[str, Hits], depth: int,
                 fusion: FusionSetting) -> dict[str, list[str]]:
        return {q: fuse(dense[q], bm25[q], fusion, short=q in self.short, coverage=self.coverage.get(q))[:depth]
                for q in self.qids}

    def label(self, setting: PrfSetting) -> str:
        """``setting``'s label, naming the three-way fusion when that is the one used."""
        return setting.label("three-way fusion" if self.ensemble else None)

    def default_runs(self) -> dict[str, list[str]]:
        """Today's default (two-way) ranking, also when the replay fuses three lists."""
        return self._two_way(self.dense, self.bm25, EVAL_DEPTH, DEFAULT)

    def runs(self, setting: PrfSetting) -> dict[str, list[str]]:
        """qid -> the ranking after feedback under ``setting`` (20 deep, as evaluated)."""
        # questions without a BM25 hit have no lexical evidence at all: weak, so gated feedback applies
        fed = [(i, q) for i, q in enumerate(self.qids)
               if not setting.feedback_below or self.coverage.get(q, 0.0) < setting.feedback_below]
        dense, bm25 = self.dense, self.bm25
        if setting.dense and fed:
            moved = np.stack([rocchio(self.queries[i], self.vectors.corpus[[self._row[d] for d in
                                                                            self.first[q][:setting.dense_m]]],
                                      setting.beta, by_similarity=setting.by_similarity) for i, q in fed])
            dense = {**dense, **dict(zip((q for _, q in fed), nearest(moved, self.vectors.corpus,
                                                                      self.vectors.doc_ids)))}
        if setting.keyword:
            bm25 = {**bm25, **{q: self.expanded_bm25(q, setting) for _, q in fed}}
        return self._fused(dense, bm25, EVAL_DEPTH, setting.fusion())

    def expanded_bm25(self, qid: str, setting: PrfSetting) -> Hits:
        """The BM25 list of ``qid``'s question with the feedback terms of ``setting`` added."""
        tokens = self.replayer.query_tokens[qid]
        feedback = [self.replayer.doc_tokens(d) for d in self.first[qid][:setting.keyword_m]]
        terms = expansion_terms(feedback, self.replayer.idf(), tokens, setting.terms)
        extra = {t: setting.term_weight * share for t, share in terms.items()}
        return self.replayer.top(self.replayer.scores(tokens, self.bm25_setting, extra))

    def score(self, setting: PrfSetting) -> dict[str, float]:
        """Mean metrics of ``setting``, with the ``unlike:`` slice."""
        return score_runs(self.dataset, self.runs(setting), self.slices)

    def per_question(self, runs: dict[str, list[str]], metric: str) -> dict[str, float]:
        """qid -> ``metric`` of ``runs``, for the paired bootstrap."""
        qrels = {q: self.dataset.qrels.get(q, {}) for q in self.qids}
        return {q: s[metric] for q, s in per_query(runs, qrels).items()}
