"""One configuration tree for every knob the app exposes, each setting described once.

``schema`` says how a setting is described (a frozen pydantic dataclass field with type, default,
bounds and help) and turns failures into ``ConfigError``; ``indexing``, ``search`` and ``answering``
declare the sections; ``tree`` assembles ``RagConfig`` from defaults < YAML < ``RAG_*`` environment;
``yaml_io`` reads YAML as hostile input; ``endpoint`` guards where questions and the API key go.
Everything other modules import is re-exported here.
"""

from __future__ import annotations

from rag.config.answering import MAX_CONTEXT_TOKENS, MAX_N_CTX, GenerationConfig, LLMBackend, LLMConfig
from rag.config.endpoint import API_KEY_ENV_PATTERN, ENDPOINT_FIELDS, endpoint_host, endpoint_summary
from rag.config.indexing import (
    DEFAULT_HOME,
    ChromaMode,
    ChunkingConfig,
    ChunkStrategy,
    EmbeddingConfig,
    EmbeddingRouting,
    MetadataConfig,
    StorageConfig,
)
from rag.config.schema import ConfigError, SettingSpec, format_number
from rag.config.search import (
    MAX_CANDIDATES,
    FusionMode,
    MMRConfig,
    QueryConfig,
    ReflectionConfig,
    ReflectionStrategy,
    RerankConfig,
    RetrievalConfig,
    RetrievalSources,
)
from rag.config.tree import (
    ENV_ALIASES,
    RagConfig,
    _merge,
    dump_yaml,
    endpoint_of,
    load_config,
    setting_specs,
    with_endpoint_of,
)
from rag.config.yaml_io import YAML_MAX_BYTES, parse_yaml, read_yaml

__all__ = [
    "API_KEY_ENV_PATTERN", "DEFAULT_HOME", "ENDPOINT_FIELDS", "ENV_ALIASES", "MAX_CANDIDATES", "MAX_CONTEXT_TOKENS",
    "MAX_N_CTX", "YAML_MAX_BYTES", "ChromaMode", "ChunkStrategy", "ChunkingConfig", "ConfigError",
    "EmbeddingConfig", "EmbeddingRouting", "FusionMode", "GenerationConfig", "LLMBackend", "LLMConfig",
    "MMRConfig", "MetadataConfig", "QueryConfig", "RagConfig", "ReflectionConfig", "ReflectionStrategy",
    "RerankConfig", "RetrievalConfig", "RetrievalSources", "SettingSpec", "StorageConfig", "_merge", "dump_yaml", "endpoint_host",
    "endpoint_of", "endpoint_summary", "format_number", "load_config", "parse_yaml", "read_yaml",
    "setting_specs", "with_endpoint_of",
]
