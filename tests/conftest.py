"""Shared fixtures. Everything runs offline; the shared evaluation data is optional."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for leaked in ("NLTK_DATA", "TIKTOKEN_CACHE_DIR", "RAG_CONFIG", "RAG_DATA_DIR"):
    os.environ.pop(leaked, None)

from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from rag.config import RagConfig  # noqa: E402
from rag.models.embedding_router import EmbedderRouter  # noqa: E402
from rag.index.store import DocumentStore  # noqa: E402
from tests.fakes import HashEmbedding  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
CITEWISE_HOME = Path(os.environ.get("CITEWISE_HOME", Path.home() / ".cache" / "citewise"))


def needs_shared_data() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not SHARED_DATA.exists(),
                              reason=f"dataset-scale test: {SHARED_DATA} is not present in this checkout")


@pytest.fixture
def config(tmp_path: Path) -> RagConfig:
    base = RagConfig()
    return replace(base, storage=replace(base.storage, data_dir=str(tmp_path / "data"))).validate()


@pytest.fixture
def fake_router(config: RagConfig) -> EmbedderRouter:
    """English and Chinese 'models' that are fast deterministic hashes of the words."""
    return EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))


@pytest.fixture
def store(config: RagConfig, fake_router: EmbedderRouter):
    document_store = DocumentStore(config, fake_router)
    yield document_store
    document_store.close()
