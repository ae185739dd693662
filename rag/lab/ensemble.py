"""Three-list fusion for the lab: BM25 plus two dense retrievers (an experiment, not an app feature).

Two dense models trained differently can miss different passages, so a second dense list might add
what the first misses. This module replays that the way ``rag.lab.tune_fusion`` replays two-way fusion
(each list cut to ``candidate_k``, BM25 hits of score <= 0 dropped, short queries keyword-only, the
fusion itself by ``tune_fusion.fuse_lists``), in two shapes:

* ``weighted`` / ``rrf``: the three lists fused at once, weights (bm25, dense A, dense B);
* ``dense-first``: the two dense lists fused into one (weighted, normalised), then the existing
  two-way fusion with BM25 (``tune_fusion.fuse``), adaptive rule included.

The query-adaptive rule (``rag.retrieval.adaptive``) extends to three lists: when BM25's top hit holds
less than ``coverage_below`` of the question's IDF-weighted terms, ``dense_shift`` of the BM25 weight
moves to the dense lists, split in proportion to their own weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.lab.replay import Hits
from rag.lab.tune_fusion import FusionSetting, fuse, fuse_lists, fuse_scored

Weights = tuple[float, float, float]  # (bm25, dense A, dense B)


@dataclass(frozen=True)
class EnsembleSetting:
    """One way to fuse a BM25 list with two dense lists.

    Args:
        mode: ``weighted``, ``rrf`` (all three at once) or ``dense-first``.
        weights: (bm25, dense A, dense B), summing to 1. In ``dense-first`` the two dense weights only
            set the mix of the merged dense list; its weight against BM25 is ``1 - weights[0]``.
        normalization: ``minmax`` or ``max`` (weighted fusion, and the dense merge of ``dense-first``).
        candidate_k: How deep each list is read, and how many fused results are kept.
        rrf_k: The RRF constant.
        coverage_below: Adaptive rule (0 = off): coverage of BM25's top hit under which the lexical
            evidence is weak.
        dense_shift: BM25 weight moved to the dense side below ``coverage_below``.
    """

    mode: str
    weights: Weights = (0.6, 0.2, 0.2)
    normalization: str = "minmax"
    candidate_k: int = 20
    rrf_k: int = 60
    coverage_below: float = 0.0
    dense_shift: float = 0.1

    def label(self) -> str:
        w = "/".join(f"{x:.2f}" for x in self.weights)
        extra = f"k={self.rrf_k}" if self.mode == "rrf" else self.normalization
        adaptive = f" shift {self.dense_shift:g} when coverage<{self.coverage_below:g}" if self.coverage_below else ""
        return f"{self.mode} {extra} w(bm25/A/B)={w}{adaptive} depth={self.candidate_k}"

    def weights_for(self, coverage: float | None) -> Weights:
        """The three weights for a question whose top BM25 hit has ``coverage`` (None: unknown)."""
        bm25, a, b = self.weights
        if not self.coverage_below or coverage is None or coverage >= self.coverage_below:
            return self.weights
        moved = min(self.dense_shift, bm25)
        share = a / (a + b) if a + b > 0 else 0.5
        return (bm25 - moved, a + moved * share, b + moved * (1 - share))


def merge_dense(dense_a: Hits, dense_b: Hits, share_b: float, normalization: str, depth: int) -> Hits:
    """One dense list: each document's weighted sum of its normalised scores in the two (0 where absent).

    Args:
        share_b: Weight of ``dense_b`` (``dense_a`` gets ``1 - share_b``).
        depth: How many merged hits are kept (best first).
    """
    return fuse_scored([(dense_a, 1.0 - share_b), (dense_b, share_b)], "weighted", normalization=normalization,
                       candidate_k=depth)


def fuse3(bm25: Hits, dense_a: Hits, dense_b: Hits, setting: EnsembleSetting, *, short: bool = False,
          coverage: float | None = None) -> list[str]:
    """The fused ranking of one query under ``setting``.

    Args:
        bm25: The BM25 list (best first); hits of score <= 0 are no match.
        dense_a: The first dense list.
        dense_b: The second dense list.
        short: The question is short enough to go keyword-only, as the app does.
        coverage: BM25's top hit's IDF-weighted share of the question's terms, for the adaptive rule.
    """
    k = setting.candidate_k
    bm25 = [h for h in bm25[:k] if h[1] > 0]
    if short:
        return [d for d, _ in bm25]
    dense_a, dense_b = dense_a[:k], dense_b[:k]
    w_bm25, w_a, w_b = setting.weights
    if setting.mode == "dense-first":
        share_b = w_b / (w_a + w_b) if w_a + w_b > 0 else 0.5
        dense = merge_dense(dense_a, dense_b, share_b, setting.normalization, k)
        two_way = FusionSetting("weighted", 1.0 - w_bm25, normalization=setting.normalization, candidate_k=k,
                                coverage_below=setting.coverage_below,
                                weak_lexical_weight=1.0 - w_bm25 + min(setting.dense_shift, w_bm25))
        return fuse(dense, bm25, two_way, coverage=coverage)
    if setting.mode not in ("weighted", "rrf"):
        raise ValueError(f"mode must be weighted, rrf or dense-first, got {setting.mode!r}")
    w_bm25, w_a, w_b = setting.weights_for(coverage)
    return fuse_lists([(dense_a, w_a), (dense_b, w_b), (bm25, w_bm25)], setting.mode,
                      normalization=setting.normalization, rrf_k=setting.rrf_k, candidate_k=k)
