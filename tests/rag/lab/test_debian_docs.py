"""The held-out documents from Debian are read only with the bytes the questions were written on."""

from __future__ import annotations

import hashlib
from pathlib import Path

from rag.lab import debian_docs
from rag.lab.debian_docs import DOCS, DebianDoc, missing


def test_a_document_with_other_bytes_counts_as_missing(tmp_path: Path, monkeypatch) -> None:
    good = b"%PDF-1.4 pinned"
    pinned = DebianDoc("a.pdf", "pkg", "1.0-1", "usr/share/doc/a.pdf", hashlib.sha256(good).hexdigest())
    monkeypatch.setattr(debian_docs, "DOCS", (pinned,))
    assert missing(tmp_path) == ["a.pdf"]
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4 changed upstream")
    assert missing(tmp_path) == ["a.pdf"]
    (tmp_path / "a.pdf").write_bytes(good)
    assert missing(tmp_path) == []


def test_every_document_is_pinned_to_an_exact_version_and_hash() -> None:
    assert len({doc.name for doc in DOCS}) == len(DOCS)
    for doc in DOCS:
        assert doc.version and len(doc.sha256) == 64 and doc.name.endswith(".pdf")
