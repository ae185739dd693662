"""The crash suites kill processes, which never loses the kernel's page cache: they skip fsync
(``rag.index.durable``), which only guards against power loss, and run several times faster."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEWISE_FSYNC", "off")
