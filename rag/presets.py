"""Named retrieval/answer settings saved as YAML, plus the "current settings" that survive a reload.

A preset holds every config section a user tunes (everything but ``storage``): loading one never
moves the user's documents to another folder. Files live in ``<data_dir>/presets/<name>.yaml`` and
are plain ``section: {field: value}`` YAML, the same format as ``--config`` files, so a preset can be
handed to the CLI (``python -m rag --config preset.yaml search ...``).

Built-in presets are overrides on top of the base config; they cannot be overwritten or deleted.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping

import yaml

from rag.config import ConfigError, RagConfig, _merge, read_yaml

logger = logging.getLogger(__name__)

PRESET_SECTIONS = ("chunking", "embedding", "retrieval", "rerank", "mmr", "query", "reflection", "generation",
                   "llm", "metadata", "ingest")
NAME_PATTERN = re.compile(r"^[\w][\w .\-]{0,59}$", re.UNICODE)
CURRENT_FILE = ".current.yaml"

BUILTIN_PRESETS: dict[str, dict[str, Any]] = {
    "Default": {},
    "Vector only": {"retrieval.hybrid": False},
    "Hybrid RRF": {"retrieval.fusion": "rrf", "retrieval.vector_weight": 0.5, "retrieval.keyword_weight": 0.5},
    "Diverse (MMR)": {"mmr.enabled": True, "mmr.lambda_mult": 0.5, "retrieval.top_k": 6},
    "Careful (reflection)": {"reflection.enabled": True, "reflection.min_score": 7, "reflection.max_rounds": 2},
}


class PresetError(ValueError):
    """A preset name is invalid, unknown, read-only, or its file cannot be read."""


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
        """``base`` with the preset applied (``base.storage`` is always kept)."""
        if name in BUILTIN_PRESETS:
            return base.with_overrides(BUILTIN_PRESETS[name])
        path = self._path(name)
        if not path.exists():
            raise PresetError(f"no preset named {name!r} (known: {', '.join(self.names())})")
        return self._apply(read_yaml(path), base, str(path))

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
        """Remember the settings in use, so a browser reload or a server restart keeps them."""
        _atomic_write(self.root / CURRENT_FILE, dump_preset(config))

    def load_current(self, base: RagConfig) -> tuple[RagConfig, str]:
        """The remembered settings over ``base``, and why they were not used ("" when they were).

        A file from an older version with unknown fields or invalid values is ignored, not fatal.
        """
        path = self.root / CURRENT_FILE
        if not path.exists():
            return base, ""
        try:
            return self._apply(read_yaml(path), base, str(path)), ""
        except (ConfigError, PresetError) as exc:
            logger.warning("ignoring saved settings %s: %s", path, exc)
            return base, f"saved settings were ignored: {exc}"

    def clear_current(self) -> None:
        (self.root / CURRENT_FILE).unlink(missing_ok=True)

    def _path(self, name: str) -> Path:
        if not NAME_PATTERN.match(name or "") or name.strip() != name:
            raise PresetError(f"invalid preset name {name!r}: use up to 60 letters, digits, spaces, '.', '-' or '_'")
        return self.root / f"{name}.yaml"

    @staticmethod
    def _apply(nested: Mapping[str, Any], base: RagConfig, origin: str) -> RagConfig:
        unknown = [section for section in nested if section not in PRESET_SECTIONS]
        if unknown:
            raise PresetError(f"{origin}: sections not allowed in a preset: {', '.join(unknown)}")
        try:
            return _merge(base, nested).validate()
        except ConfigError as exc:
            raise PresetError(f"{origin}: {exc}") from exc


def dump_preset(config: RagConfig) -> str:
    data = {section: values for section, values in config.to_dict().items() if section in PRESET_SECTIONS}
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
