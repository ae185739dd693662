"""Reading and writing config YAML, with every file treated as hostile.

Config files, saved and uploaded presets and the remembered settings are all small
``section: {field: value}`` mappings, so anything else is refused before it is built: more than
``YAML_MAX_BYTES``, text that is not UTF-8, nesting deeper than a config ever needs, and any anchor or
alias, and more values than a settings file holds. Aliases are refused outright rather than counted,
because a few hundred bytes of them ("billion laughs") expand into billions of values the moment
anything walks the result; the check reads parser events only and stops early, so nothing is ever
expanded and no file costs more than a few milliseconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from rag.config.schema import ConfigError

YAML_MAX_BYTES = 64 * 1024  # a full preset is about 2 KB
MAX_DEPTH = 6  # file -> section -> field is 2; a little room for a wrong but harmless shape
MAX_EVENTS = 2000  # a file setting every field is about 170 parser events; bounds the time any file costs
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPENING = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSING = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def parse_yaml(data: str | bytes, origin: str) -> dict[str, Any]:
    """The mapping in ``data``, or a ``ConfigError`` saying why it is refused.

    Args:
        data: The file's bytes (or text).
        origin: How to name the file in messages, e.g. its path or upload name.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > YAML_MAX_BYTES:
        raise ConfigError(_too_large(origin, len(raw)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{origin}: not valid UTF-8 text") from None
    try:
        _check_events(text, origin)
        loaded = yaml.load(text, Loader=_Loader) or {}  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read config file {origin}: {exc}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{origin}: expected a mapping of sections")
    return loaded


def read_yaml(path: str | Path) -> dict[str, Any]:
    """:func:`parse_yaml` of the file at ``path`` (at most ``YAML_MAX_BYTES`` are read)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(YAML_MAX_BYTES + 1)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    if len(data) > YAML_MAX_BYTES:
        raise ConfigError(_too_large(str(path), size))
    return parse_yaml(data, str(path))


def _too_large(origin: str, size: int) -> str:
    return (f"{origin}: larger than {YAML_MAX_BYTES // 1024} KiB ({size:,} bytes); a settings file is a few KB, "
            "so this is not one")


def _check_events(text: str, origin: str) -> None:
    depth = 0
    for count, event in enumerate(yaml.parse(text, Loader=_Loader)):
        if count > MAX_EVENTS:
            raise ConfigError(f"{origin}: holds more values than a settings file ever does (line "
                              f"{event.start_mark.line + 1})")
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ConfigError(f"{origin}: YAML anchors and aliases are not allowed (line "
                              f"{event.start_mark.line + 1}); write each value out")
        if isinstance(event, _OPENING):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"{origin}: nested deeper than a settings file ever is (line "
                                  f"{event.start_mark.line + 1})")
        elif isinstance(event, _CLOSING):
            depth -= 1
