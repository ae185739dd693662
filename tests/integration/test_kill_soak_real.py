"""The kill -9 soak over a subset, in CI: a real ingest with the bundled models, killed once anywhere
after parsing starts and once inside its commit; after each restart the library is consistent and the
document is ingested again and found by keywords and by vectors. The full soak (20 rounds over the
shared PDFs) is ``python -m rag.lab.soak_kill``; its figure is in the README."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from rag.lab.soak_kill import run_soak
from tests import fixtures


@pytest.mark.integration
def test_an_ingest_killed_at_random_moments_recovers_with_the_real_models(tmp_path: Path) -> None:
    pdf = fixtures.make_english_pdf(tmp_path, pages=12)
    rounds = run_soak([pdf], rounds=2, work=tmp_path / "library", seed=3, baseline=False)
    assert [r.mode for r in rounds] == ["anywhere", "commit"]
    for result in rounds:
        assert result.ok, result
        assert result.exit_code in (0, -signal.SIGKILL)
    assert any(r.exit_code == -signal.SIGKILL for r in rounds)  # at least one kill landed mid-ingest
