"""Named retrieval/answer settings saved as YAML, plus the "current settings" that survive a reload.

A preset holds every config section a user tunes (everything but ``storage``): loading one never
moves the user's documents to another folder. Files live in ``<data_dir>/presets/<name>.yaml`` and
are plain ``section: {field: value}`` YAML, the same format as ``--config`` files, so a preset can be
handed to the CLI (``python -m rag --config preset.yaml search ...``).

Built-in presets are overrides on top of the base config; they cannot be overwritten or deleted.

A preset file is hostile input: anyone who can upload one, or save one on a shared server, could
otherwise send every later question and the API key to a host of their choosing. So the LLM endpoint
fields (``rag.config.ENDPOINT_FIELDS``: backend, base_url, model, api_key_env) are never applied from a
file here. :meth:`PresetStore.open` and :func:`preset_from_text` return the preset without them plus the
values it wanted (``PresetResult.held``), for the UI to show with their host and apply only on an
explicit confirmation (``PresetResult.confirmed``); :meth:`PresetStore.load` simply keeps ``base``'s.

The remembered settings (``.current.yaml``) are shared by every browser of a server, so they never
carry the endpoint either: :meth:`PresetStore.save_current` leaves the endpoint fields out and
:meth:`PresetStore.load_current` ignores them, so the endpoint of a new session always comes from the
base config (defaults < YAML < environment). A browser that wants another endpoint sets it on the
Settings page, typed or confirmed, for that session only.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from rag.config import (
    ENDPOINT_FIELDS,
    ConfigError,
    RagConfig,
    _merge,
    endpoint_of,
    parse_yaml,
    read_yaml,
    with_endpoint_of,
)

logger = logging.getLogger(__name__)

PRESET_SECTIONS = ("chunking", "embedding", "retrieval", "rerank", "mmr", "query", "reflection", "generation",
                   "llm", "metadata", "ingest")
NAME_PATTERN = re.compile(r"^[\w][\w .\-]{0,59}$", re.UNICODE)
CURRENT_FILE = ".current.yaml"

BUILTIN_PRESETS: dict[str, dict[str, Any]] = {
    "Default": {},
    "Vector only": {"retrieval.sources": "vector"},
    "Keyword only (BM25)": {"retrieval.sources": "keyword"},
    "Hybrid RRF": {"retrieval.fusion": "rrf", "retrieval.vector_weight": 0.5, "retrieval.keyword_weight": 0.5},
    "Diverse (MMR)": {"mmr.enabled": True, "mmr.lambda_mult": 0.5, "retrieval.top_k": 6},
    "Careful (reflection)": {"reflection.enabled": True, "reflection.min_score": 7, "reflection.max_rounds": 2},
}


class PresetError(ValueError):
    """A preset name is invalid, unknown, read-only, or its file cannot be read."""


@dataclass(frozen=True)
class PresetResult:
    """A preset applied without the LLM endpoint, and the endpoint values it wanted.

    Args:
        config: The base config with the preset applied, the base's endpoint kept.
        held: Dotted endpoint field -> the preset's value, for each one that differs from the base's.
    """

    config: RagConfig
    held: dict[str, Any] = field(default_factory=dict)

    def confirmed(self) -> RagConfig:
        """``config`` with the held endpoint values too (validated already): after the user confirmed them."""
        return self.config.with_overrides(self.held) if self.held else self.config


class PresetStore:
    """Saves and loads named presets under ``root`` (usually ``<data_dir>/presets``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser()

    @classmethod
    def for_config(cls, config: RagConfig) -> PresetStore:
        return cls(config.data_path / "presets")

    def names(self) -> list[str]:
        """Built-in presets first, then saved ones in alphabetical order."""
        saved = sorted(p.stem for p in self.root.glob("*.yaml") if not p.name.startswith("."))
        return list(BUILTIN_PRESETS) + [name for name in saved if name not in BUILTIN_PRESETS]

    def is_builtin(self, name: str) -> bool:
        return name in BUILTIN_PRESETS

    def load(self, name: str, base: RagConfig) -> RagConfig:
        """``base`` with the preset applied; ``base.storage`` and ``base``'s LLM endpoint are always kept."""
        return self.open(name, base).config

    def open(self, name: str, base: RagConfig) -> PresetResult:
        """The preset over ``base`` without the LLM endpoint, and the endpoint values it holds back."""
        if name in BUILTIN_PRESETS:
            return PresetResult(base.with_overrides(BUILTIN_PRESETS[name]))
        path = self._path(name)
        if not path.exists():
            raise PresetError(f"no preset named {name!r} (known: {', '.join(self.names())})")
        return _apply(_read(path), base, str(path))

    def save(self, name: str, config: RagConfig) -> Path:
        """Write ``config``'s tunable sections as ``<name>.yaml``; overwrites a saved preset of that name."""
        if name in BUILTIN_PRESETS:
            raise PresetError(f"{name!r} is a built-in preset; save under another name")
        path = self._path(name)
        _atomic_write(path, dump_preset(config))
        return path

    def delete(self, name: str) -> None:
        if name in BUILTIN_PRESETS:
            raise PresetError(f"{name!r} is a built-in preset and cannot be deleted")
        path = self._path(name)
        if not path.exists():
            raise PresetError(f"no preset named {name!r}")
        path.unlink()

    def save_current(self, config: RagConfig) -> None:
        """Remember the settings in use, so a browser reload or a server restart keeps them.

        The LLM endpoint fields are left out: this file is shared by every browser of the server.
        """
        _atomic_write(self.root / CURRENT_FILE, dump_preset(config, endpoint=False))

    def load_current(self, base: RagConfig) -> tuple[RagConfig, str]:
        """The remembered settings over ``base``, and a notice for the user ("" when there is none).

        The endpoint always stays ``base``'s; endpoint values found in the file (an older version wrote
        them) are named in the notice. A file with unknown fields or invalid values is ignored, not fatal.
        """
        path = self.root / CURRENT_FILE
        if not path.exists():
            return base, ""
        try:
            result = _apply(_read(path), base, str(path))
        except PresetError as exc:
            logger.warning("ignoring saved settings %s: %s", path, exc)
            return base, f"saved settings were ignored: {exc}"
        if result.held:
            logger.warning("remembered settings %s name an LLM endpoint; not taken", path)
            return result.config, (f"The remembered settings named an LLM endpoint ({', '.join(result.held)}); it "
                                   "was not taken from that shared file. The endpoint comes from the server's "
                                   "configuration; set another one below for this session.")
        return result.config, ""

    def clear_current(self) -> None:
        (self.root / CURRENT_FILE).unlink(missing_ok=True)

    def _path(self, name: str) -> Path:
        if not NAME_PATTERN.match(name or "") or name.strip() != name:
            raise PresetError(f"invalid preset name {name!r}: use up to 60 letters, digits, spaces, '.', '-' or '_'")
        return self.root / f"{name}.yaml"


def preset_from_text(data: str | bytes, base: RagConfig, *, origin: str) -> PresetResult:
    """An uploaded preset file over ``base``, without the LLM endpoint (held back for confirmation).

    Args:
        data: The file's bytes; at most ``rag.config.YAML_MAX_BYTES``, no anchors or aliases.
        base: What the preset applies over; storage and the endpoint are always kept from it.
        origin: The file's name, for messages.

    Raises:
        PresetError: Not a mapping of preset sections, or a value (held ones included) fails validation.
    """
    try:
        nested = parse_yaml(data, origin)
    except ConfigError as exc:
        raise PresetError(str(exc)) from None
    if not all(isinstance(values, dict) for values in nested.values()):
        raise PresetError(f"{origin}: expected `section: {{field: value}}` mappings, as the downloaded settings "
                          "file has")
    return _apply(nested, base, origin)


def _read(path: Path) -> dict[str, Any]:
    try:
        return read_yaml(path)
    except ConfigError as exc:
        raise PresetError(str(exc)) from None


def _apply(nested: Mapping[str, Any], base: RagConfig, origin: str) -> PresetResult:
    unknown = [str(section) for section in nested if section not in PRESET_SECTIONS]
    if unknown:
        raise PresetError(f"{origin}: sections not allowed in a preset: {', '.join(unknown)} "
                          f"(allowed: {', '.join(PRESET_SECTIONS)})")
    try:
        wanted = _merge(base, nested)
    except ConfigError as exc:
        raise PresetError(f"{origin}: {exc}") from None
    before = endpoint_of(base)
    held = {key: value for key, value in endpoint_of(wanted).items() if value != before[key]}
    return PresetResult(with_endpoint_of(wanted, base), held)


def dump_preset(config: RagConfig, *, endpoint: bool = True) -> str:
    """``config``'s preset sections as YAML; ``endpoint=False`` leaves the LLM endpoint fields out."""
    data = {section: values for section, values in config.to_dict().items() if section in PRESET_SECTIONS}
    if not endpoint:
        for key in ENDPOINT_FIELDS:
            section, name = key.split(".")
            data[section].pop(name, None)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def changed_fields(a: RagConfig, b: RagConfig) -> dict[str, tuple[Any, Any]]:
    """Dotted field → (value in a, value in b) for every field that differs."""
    left, right = a.to_dict(), b.to_dict()
    return {f"{section}.{name}": (value, right[section][name])
            for section, values in left.items() for name, value in values.items()
            if right[section][name] != value}


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
