"""The config tree: every section together, built from defaults, a YAML file and ``RAG_*`` variables.

Sources, later ones winning: field defaults < a YAML file < ``RAG_*`` environment variables.
Environment names are ``RAG_<SECTION>__<FIELD>`` (for example ``RAG_RETRIEVAL__TOP_K=8``), plus a few
short aliases such as ``RAG_DATA_DIR``. Every config is frozen and hashable, so it can key caches.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import Field

from rag.config.answering import GenerationConfig, LLMConfig
from rag.config.indexing import ChunkingConfig, EmbeddingConfig, MetadataConfig, StorageConfig
from rag.config.schema import ConfigError, SettingSpec, config_section, literal_message, section_specs, type_message
from rag.config.search import MMRConfig, QueryConfig, ReflectionConfig, RerankConfig, RetrievalConfig
from rag.config.endpoint import ENDPOINT_FIELDS
from rag.config.yaml_io import read_yaml


@config_section("")
class RagConfig:
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig, description="How documents are split.")
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig, description="Embedding models.")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig, description="Search and fusion.")
    rerank: RerankConfig = Field(default_factory=RerankConfig, description="Cross-encoder reranking.")
    mmr: MMRConfig = Field(default_factory=MMRConfig, description="Maximal marginal relevance.")
    query: QueryConfig = Field(default_factory=QueryConfig, description="Query rewrite and HyDE.")
    reflection: ReflectionConfig = Field(default_factory=ReflectionConfig, description="Grade and retry.")
    generation: GenerationConfig = Field(default_factory=GenerationConfig, description="Answer generation.")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="The answering model.")
    storage: StorageConfig = Field(default_factory=StorageConfig, description="Where everything is stored.")
    metadata: MetadataConfig = Field(default_factory=MetadataConfig, description="Ingest-time LLM metadata.")

    def validate(self) -> RagConfig:
        """Kept for callers that validate explicitly; an invalid config cannot be built."""
        return self

    def with_overrides(self, overrides: Mapping[str, Any]) -> RagConfig:
        """Return a copy with dotted keys (``retrieval.top_k``) set; values may be strings."""
        nested: dict[str, dict[str, Any]] = {}
        for key, value in overrides.items():
            section, _, name = str(key).partition(".")
            if not name:
                raise ConfigError(f"{key}: expected <section>.<field>, e.g. retrieval.top_k")
            nested.setdefault(section, {})[name] = value
        return _merge(self, nested)

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
    return config.with_overrides(overrides) if overrides else config


def setting_specs() -> dict[str, SettingSpec]:
    """Dotted key -> description of every setting (type, default, bounds, help), in config order."""
    return dict(_all_specs())


@functools.cache
def _all_specs() -> tuple[tuple[str, SettingSpec], ...]:
    hints = typing.get_type_hints(RagConfig)
    return tuple((spec.key, spec) for section in dataclasses.fields(RagConfig)
                 for spec in section_specs(hints[section.name]).values())


def _merge(config: RagConfig, nested: Mapping[str, Any]) -> RagConfig:
    """``config`` with ``{section: {field: value}}`` applied; values are coerced, then the sections validated."""
    sections = {f.name for f in dataclasses.fields(config)}
    changes: dict[str, Any] = {}
    for section_name, values in nested.items():
        if section_name not in sections:
            raise ConfigError(f"{section_name}: unknown config section (known: {', '.join(sections)})")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{section_name}: expected a mapping of fields")
        values = _migrate(section_name, values)
        section = changes.get(section_name, getattr(config, section_name))
        hints = typing.get_type_hints(type(section))
        specs = section_specs(type(section))
        coerced = {}
        for name, value in values.items():
            if name not in specs:
                raise ConfigError(f"{section_name}.{name}: unknown field")
            coerced[name] = _coerce(specs[name], value, hints[name])
        changes[section_name] = dataclasses.replace(section, **coerced)
    return dataclasses.replace(config, **changes)


def _migrate(section_name: str, values: Mapping[str, Any]) -> Mapping[str, Any]:
    """Settings saved before a field was renamed: ``retrieval.hybrid`` (bool) became ``retrieval.sources``."""
    if section_name == "retrieval" and "hybrid" in values and "sources" not in values:
        values = dict(values)
        hybrid = _coerce(section_specs(RetrievalConfig)["sources"], values.pop("hybrid"), bool)
        values["sources"] = "hybrid" if hybrid else "vector"
    return values


def _coerce(spec: SettingSpec, value: Any, hint: Any) -> Any:
    """``value`` (often a string from YAML, env or a form) as the field's type; bounds are checked later."""
    if isinstance(value, (Mapping, list, tuple, set)):
        raise ConfigError(f"{spec.key}: expected a single value, not a {type(value).__name__}")
    if typing.get_origin(hint) is Literal:
        if value not in typing.get_args(hint):
            raise ConfigError(literal_message(spec, value))
        return value
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
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
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(type_message(spec, value)) from None
    return value


def dump_yaml(config: RagConfig) -> str:
    """``config`` as the YAML a preset or ``--config`` file holds."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True)


def endpoint_of(config: RagConfig) -> dict[str, Any]:
    """Dotted endpoint field -> value in ``config``."""
    return {key: getattr(config.llm, key.split(".", 1)[1]) for key in ENDPOINT_FIELDS}


def with_endpoint_of(config: RagConfig, source: RagConfig) -> RagConfig:
    """``config`` with ``source``'s endpoint fields (everything else unchanged)."""
    values = {key.split(".", 1)[1]: value for key, value in endpoint_of(source).items()}
    return dataclasses.replace(config, llm=dataclasses.replace(config.llm, **values))
