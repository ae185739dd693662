"""The broad topic replay's ranking figure."""

from __future__ import annotations

from rag.lab.broad_topic import auc


def test_auc_ranks_answerable_above_unanswerable_and_counts_ties_half() -> None:
    assert auc([0.9, 0.5], [0.5, 0.1]) == 0.875  # three wins and a tie out of four pairs
    assert auc([0.2], [0.8]) == 0.0 and auc([], [0.3]) is None
