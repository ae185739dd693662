"""How a setting is described once: type, default, bounds and help on a frozen pydantic dataclass field.

Each config section is declared with :func:`config_section`, which makes it a frozen pydantic dataclass
(so ``dataclasses.replace``, ``fields`` and ``asdict`` keep working and instances stay hashable) and
turns every validation failure into a :class:`ConfigError` naming ``section.field``. Numeric fields
must declare an inclusive floor and ceiling (``Field(default, ge=..., le=..., description=...)``); a
section that forgets one fails at import, so no knob is ever unbounded. :class:`SettingSpec` is the
read-only view the Settings form and ``python -m rag config`` are built from.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal, TypeVar

import annotated_types
import pydantic
from pydantic import ConfigDict, ValidationError

T = TypeVar("T")
_KINDS = {int: "int", float: "float", bool: "bool", str: "str"}


class ConfigError(ValueError):
    """A config value is invalid; the message names the field."""


@dataclass(frozen=True)
class SettingSpec:
    """One setting as users see it.

    Args:
        key: Dotted name, e.g. ``retrieval.top_k``.
        kind: ``int``, ``float``, ``bool``, ``str`` or ``choice``.
        default: The value when nothing overrides it.
        help: What the setting does, in one or two sentences.
        minimum: Inclusive floor of a number; None for other kinds.
        maximum: Inclusive ceiling of a number; None for other kinds.
        choices: The allowed values of a ``choice``.
        max_length: The longest text a ``str`` accepts, when capped.
    """

    key: str
    kind: str
    default: Any
    help: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str, ...] | None = None
    max_length: int | None = None

    def bounds(self) -> str:
        """``between 1 and 100`` for a number, ``one of: a, b`` for a choice, else ""."""
        if self.minimum is not None and self.maximum is not None:
            return f"between {format_number(self.minimum)} and {format_number(self.maximum)}"
        if self.choices:
            return f"one of: {', '.join(self.choices)}"
        return ""


class Section:
    """Base of every config section: built validated, so ``validate()`` only hands the section back."""

    def validate(self: T) -> T:
        """Kept for callers that validate explicitly; an invalid section cannot be built."""
        return self


def format_number(value: float) -> str:
    """``100`` for 100 and 100.0, ``0.1`` for 0.1: how bounds read in messages."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def config_section(name: str) -> Callable[[type[T]], type[T]]:
    """Make ``cls`` a frozen pydantic dataclass whose errors are ``ConfigError``s naming ``name.<field>``.

    Args:
        name: The section's key in ``RagConfig`` and in YAML (``retrieval``); "" for the root.
    """

    def build(cls: type[T]) -> type[T]:
        built = pydantic.dataclasses.dataclass(frozen=True, config=ConfigDict(extra="forbid"))(cls)
        built.section_name = name  # type: ignore[attr-defined]
        specs = section_specs(built)  # also checks every number is bounded, at import
        validated_init = built.__init__

        @functools.wraps(validated_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                validated_init(self, *args, **kwargs)
            except ValidationError as exc:
                raise ConfigError(_explain(name, specs, exc)) from None

        built.__init__ = __init__  # type: ignore[method-assign]
        return built

    return build


@functools.cache
def section_specs(cls: type) -> dict[str, SettingSpec]:
    """Field name -> :class:`SettingSpec` for one section class, in declaration order (cached: do not mutate)."""
    section = getattr(cls, "section_name", "")
    hints = typing.get_type_hints(cls)
    specs: dict[str, SettingSpec] = {}
    for name, info in cls.__pydantic_fields__.items():  # type: ignore[attr-defined]
        key = f"{section}.{name}" if section else name
        hint = hints[name]
        default = info.get_default(call_default_factory=True)
        if dataclasses.is_dataclass(hint):
            specs[name] = SettingSpec(key, "section", default, info.description or "")
            continue
        if not info.description:
            raise TypeError(f"{key}: every setting needs a description (the help users see)")
        low = next((m.ge for m in info.metadata if isinstance(m, annotated_types.Ge)), None)
        high = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
        length = next((m.max_length for m in info.metadata if isinstance(m, annotated_types.MaxLen)), None)
        if any(isinstance(m, (annotated_types.Gt, annotated_types.Lt)) for m in info.metadata):
            raise TypeError(f"{key}: use inclusive bounds (ge/le), so the form and messages can show them")
        if typing.get_origin(hint) is Literal:
            specs[name] = SettingSpec(key, "choice", default, info.description,
                                      choices=tuple(str(c) for c in typing.get_args(hint)))
            continue
        kind = _KINDS.get(hint)
        if kind is None:
            raise TypeError(f"{key}: unsupported setting type {hint!r}")
        if kind in ("int", "float") and (low is None or high is None):
            raise TypeError(f"{key}: a number needs both a floor (ge=) and a ceiling (le=)")
        specs[name] = SettingSpec(key, kind, default, info.description, low, high, max_length=length)
    return specs


def require(condition: bool, key: str, message: str) -> None:
    """Raise ``ConfigError("<key>: <message>")`` unless ``condition`` holds (cross-field rules)."""
    if not condition:
        raise ConfigError(f"{key}: {message}")


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: messages quote hostile input, never all of it."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _explain(section: str, specs: dict[str, SettingSpec], exc: ValidationError) -> str:
    """The first pydantic error as ``<section>.<field>: <what is wrong, with the bounds>``."""
    error = exc.errors(include_url=False)[0]
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ConfigError):
        return str(cause)
    name = str(error["loc"][0]) if error["loc"] else ""
    key = f"{section}.{name}" if section else name
    spec = specs.get(name)
    kind = error["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return f"{key}: unknown field"
    if spec is None:
        return f"{key}: {error['msg']}"
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{key}: must be {spec.bounds()}"
    if kind == "literal_error":
        return literal_message(spec, error["input"])
    if kind in ("string_too_short", "string_too_long"):
        return (f"{key}: must not be empty" if kind == "string_too_short"
                else f"{key}: must be at most {spec.max_length} characters")
    return type_message(spec, error["input"])


def literal_message(spec: SettingSpec, value: Any) -> str:
    """``chunking.strategy: unknown chunking strategy 'x'; choose one of: ...``."""
    section, _, name = spec.key.rpartition(".")
    return f"{spec.key}: unknown {section} {name.replace('_', ' ')} {short_repr(value)}; choose {spec.bounds()}"


def type_message(spec: SettingSpec, value: Any) -> str:
    """``retrieval.top_k: 'x' is not a valid int (between 1 and 100)``."""
    bounds = spec.bounds()
    return f"{spec.key}: {short_repr(value)} is not a valid {spec.kind}" + (f" ({bounds})" if bounds else "")
