"""``bench answer`` summarises sources, cold and warm TTFT and the whole verified answer from its rows."""

from __future__ import annotations

from rag.lab.bench_answer import format_report, summary


def _row(ttft: float, total: float, sources: float = 30.0, verify: float | None = 900.0) -> dict:
    return {"sources_ms": sources, "ttft_ms": ttft, "total_ms": total, "verify_ms": verify, "prompt_tokens": 240,
            "tokens_per_s": 8.0, "abstained": False}


def test_summary_separates_the_cold_question_and_reads_percentiles() -> None:
    rows = [_row(9000, 15000, sources=400)] + [_row(1000.0 * i, 10000.0 + i) for i in range(1, 21)]
    figures = summary(rows)
    assert figures["ttft_cold_ms"] == 9000
    assert figures["ttft_warm_p50_ms"] == 10000.0 and figures["ttft_warm_p95_ms"] == 19000.0
    assert figures["sources_ms_max"] == 400.0 and figures["prompt_tokens_p50"] == 240.0
    report = {"dataset": "squad2", "split": "report", "questions": 21, "max_context_tokens": 180,
              "max_answer_tokens": 384, "n_threads": 2, "cpus": 2,
              "models": [{"model": "m", **figures, "load_before": 1.0, "load_after": 1.5}]}
    text = format_report(report)
    assert "warm p50 10.0 s, p95 19.0 s" in text and "load average 1.0 -> 1.5" in text
