"""Pseudo-relevance feedback arithmetic of the lab experiment: Rocchio, expansion terms, weighted BM25 terms."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from rag.evaluation.sets import EvalDataset
from rag.lab.prf import PrfSetting, expansion_terms, rocchio
from rag.lab.replay import BM25Replay, BM25Setting
from rag.lab.tune_ensemble import DEFAULT
from rag.lab import tune_prf
from rag.lab.tune_prf import both_grid, dense_grid, keyword_grid


def test_rocchio_moves_the_query_towards_the_feedback_centroid_and_renormalises() -> None:
    query = np.array([1.0, 0.0, 0.0])
    feedback = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])

    moved = rocchio(query, feedback, 0.5)

    # q + 0.5 * (0, 0.5, 0.5) = (1, 0.25, 0.25), divided by its norm sqrt(1.125)
    assert moved == pytest.approx(np.array([1.0, 0.25, 0.25]) / math.sqrt(1.125))
    assert np.linalg.norm(moved) == pytest.approx(1.0)


def test_rocchio_by_similarity_weighs_feedback_by_cosine_and_ignores_opposite_rows() -> None:
    query = np.array([1.0, 0.0])
    near, orthogonal, opposite = [0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]
    feedback = np.array([near, orthogonal, opposite])

    moved = rocchio(query, feedback, 1.0, by_similarity=True)

    # cosines 0.6, 0, -1 -> weights 0.6, 0, 0: the centroid is the near row alone; q + (0.6, 0.8) = (1.6, 0.8)
    assert moved == pytest.approx(np.array([1.6, 0.8]) / math.hypot(1.6, 0.8))
    # the plain mean counts all three: (-0.4 / 3, 0.6), so q + mean = (1 - 0.4 / 3, 0.6)
    plain = np.array([1.0 - 0.4 / 3, 0.6])
    assert rocchio(query, feedback, 1.0) == pytest.approx(plain / np.linalg.norm(plain))


def test_rocchio_without_feedback_or_weight_keeps_the_query() -> None:
    query = np.array([0.6, 0.8])

    assert rocchio(query, np.zeros((0, 2)), 0.5) is query
    assert rocchio(query, np.array([[1.0, 0.0]]), 0.0) is query
    # every cosine <= 0 falls back to the plain mean rather than dividing by zero
    assert rocchio(query, np.array([[-0.6, -0.8]]), 0.5, by_similarity=True) == pytest.approx(query)


def test_expansion_terms_rank_by_length_normalised_tf_times_idf_and_skip_question_terms() -> None:
    feedback = [["cell", "cell", "growth", "tumor"], ["cell", "tumor"]]
    idf = {"cell": 0.5, "growth": 2.0, "tumor": 1.0}

    terms = expansion_terms(feedback, idf, question=["growth"], count=5)

    # cell: (2/4 + 1/2) x 0.5 = 0.5; tumor: (1/4 + 1/2) x 1 = 0.75; growth is in the question
    assert terms == pytest.approx({"tumor": 1.0, "cell": 0.5 / 0.75})
    assert list(terms) == ["tumor", "cell"]
    # growth (1/4 x 2 = 0.5) ties cell: the tie goes to the alphabetically first term
    assert list(expansion_terms(feedback, idf, question=[], count=3)) == ["tumor", "cell", "growth"]
    assert expansion_terms([], idf, question=[], count=3) == {}
    assert expansion_terms([["x", "y"]], {}, question=[], count=3) == {}  # no idf: nothing scores above 0


def test_weighted_extra_terms_score_as_repeated_question_tokens() -> None:
    corpus = {"d1": "cell growth in tumor cells", "d2": "protein folding and cell death",
              "d3": "tumor suppressor protein"}
    dataset = EvalDataset(name="tiny", corpus={d: {"title": "", "text": t} for d, t in corpus.items()},
                          queries={"q": "cell growth"}, qrels={"q": {"d1": 1}})
    replayer = BM25Replay(dataset, tokenizer=str.split)
    words_only = BM25Setting(0.5, 0.75, 0.0)  # an appended token would also add a token pair

    repeated = replayer.scores(["cell", "growth", "protein", "protein", "tumor"], words_only)
    weighted = replayer.scores(["cell", "growth"], words_only, extra={"protein": 2.0, "tumor": 1.0, "absent": 5.0})

    assert weighted == pytest.approx(repeated, abs=1e-5)
    half = replayer.scores(["cell", "growth"], words_only, extra={"protein": 0.5})
    plain = replayer.scores(["cell", "growth"], words_only)
    protein = replayer.scores(["protein"], words_only)
    assert half == pytest.approx(plain + 0.5 * protein, abs=1e-5)
    assert [d for d, _ in replayer.top(half)][0] == "d1"


def test_settings_name_their_family_and_keep_the_default_fusion_unless_re_chosen() -> None:
    assert PrfSetting().family() == "none" and PrfSetting().fusion() == DEFAULT
    assert PrfSetting(dense_m=3, beta=0.5).family() == "dense"
    assert PrfSetting(dense_m=3, beta=0.0).family() == "none"
    assert PrfSetting(keyword_m=2, terms=10, term_weight=0.3).family() == "keyword"
    both = both_grid(dense_grid()[:2], keyword_grid()[:3])
    assert len(both) == 6 and {s.family() for s in both} == {"both"}
    moved = PrfSetting(vector_weight=0.5, candidate_k=30).fusion()
    assert (moved.vector_weight, moved.weak_lexical_weight, moved.candidate_k) == pytest.approx((0.5, 0.6, 30))
    assert moved.coverage_below == DEFAULT.coverage_below


def test_tune_prf_refuses_report_splits() -> None:
    for dataset, split in (("scifact", "test"), ("squad", "report"), ("cmrc2018", "report")):
        with pytest.raises(SystemExit):
            tune_prf.main(["--dataset", dataset, "--split", split])


def test_check_mode_reads_the_best_rows_then_each_familys_best_back_as_settings(tmp_path: Path) -> None:
    gated = PrfSetting(keyword_m=1, terms=10, term_weight=0.5, feedback_below=0.8)
    rows = [(PrfSetting(dense_m=5, beta=0.25), 0.736), (PrfSetting(keyword_m=1, terms=10, term_weight=0.5), 0.740),
            (gated, 0.741), (PrfSetting(dense_m=2, beta=0.25, keyword_m=1, terms=5, term_weight=0.7), 0.742)]
    saved = tmp_path / "rows.jsonl"
    saved.write_text("".join(json.dumps({"dataset": "scifact", "family": s.family(), "spec": asdict(s),
                                         "ndcg@10": v}) + "\n" for s, v in rows), encoding="utf-8")

    # the two best, then the best of each family not among them (both, keyword: already in; dense added)
    assert tune_prf.read_settings(saved, 2) == [rows[3][0], gated, rows[0][0]]
    # the two-list default the lab replays: vector 0.25 against keyword 0.5 (1/3 of the pair), 30 deep
    assert gated.label() == "keyword m=1 t=10 w=0.5 when coverage<0.8; fusion v=0.33 depth=30"
