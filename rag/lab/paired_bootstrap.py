"""Paired bootstrap of a metric difference between two retrieval settings on the same questions.

A grid's best point is chosen on the questions it is scored on, so its lead over the default is partly
luck. Resampling the questions (with replacement, the same draw for both settings) shows how far the
mean difference moves with the sample: if the interval holds 0, the lead is not established.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``a - b`` over the questions, with a percentile bootstrap interval.

    Args:
        mean: Observed mean difference.
        low: Lower bound of the interval.
        high: Upper bound of the interval.
        share_above_zero: Share of resamples whose mean difference is > 0.
        questions: How many questions were paired.
    """

    mean: float
    low: float
    high: float
    share_above_zero: float
    questions: int


def paired_bootstrap(a: Mapping[str, float], b: Mapping[str, float], *, resamples: int = 1000, seed: int = 13,
                     confidence: float = 0.95) -> PairedDifference:
    """The bootstrap interval of ``mean(a[q] - b[q])`` over the questions both score.

    Args:
        a: qid -> per-question metric of the candidate.
        b: qid -> per-question metric of the baseline.
        resamples: Bootstrap resamples. Defaults to 1000.
        seed: Seed of the resampling, fixed so the interval is reproducible. Defaults to 13.
        confidence: Two-sided interval level. Defaults to 0.95.

    Raises:
        ValueError: No question is scored by both, or ``resamples`` < 1.
    """
    qids = sorted(set(a) & set(b))
    if not qids:
        raise ValueError("paired_bootstrap: the two settings share no scored question")
    if resamples < 1:
        raise ValueError(f"paired_bootstrap: resamples must be >= 1, got {resamples}")
    diff = np.array([a[q] - b[q] for q in qids], dtype=float)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return PairedDifference(float(diff.mean()), float(low), float(high), float((means > 0).mean()), diff.size)
