"""Shared AppTest setup: a private data folder, hash embeddings instead of the real models, and
Streamlit's process-wide caches cleared around each test (they would otherwise leak stores between
tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import rag.runtime
from rag.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_app(page: str | None = None, timeout_s: float = 60) -> AppTest:
    """The whole app (navigation included), switched to ``page`` (a ``pages/...`` path) when given."""
    test = AppTest.from_file(APP, default_timeout=timeout_s)
    if page:
        test.switch_page(page)
    return test


@pytest.fixture
def app_data(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """RAG_DATA_DIR in tmp_path and fake embedders; yields the data folder."""
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(rag.runtime, "build_router", lambda config: EmbedderRouter(
        config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield tmp_path / "data"
    st.cache_resource.clear()
    st.cache_data.clear()
