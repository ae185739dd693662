"""Reading what a small model wrote when asked for query rewrites or a HyDE passage.

Small local models wrap JSON in code fences, answer with bullet lists, or ramble; the parser accepts
all of that and returns None when nothing usable is there.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*(.*?)```", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+\s*[.)、:：]|[(（]\d+[)）])\s*")
_SPLIT = re.compile(r"[,;，；、\n]+")
_LABEL = re.compile(r"^\s*(?:passage|answer|document|段落|答案|文档)\s*[:：]\s*", re.IGNORECASE)
_FIELD_ALIASES = {
    "variants": "variants", "queries": "variants", "rewrites": "variants", "rewritten_queries": "variants",
    "key_concepts": "key_concepts", "concepts": "key_concepts", "keyconcepts": "key_concepts",
    "synonyms": "synonyms", "related_terms": "synonyms",
    "search_terms": "search_terms", "keywords": "search_terms", "terms": "search_terms",
}


def parse_rewrite(text: str, query: str, max_variants: int) -> dict[str, list[str]] | None:
    """Parse a rewrite answer into ``variants``, ``key_concepts``, ``synonyms``, ``search_terms``.

    Accepts a JSON object (optionally in a code fence, with trailing commas, smart or single
    quotes) or, failing that, a bullet or numbered list of queries, or two or more short lines.
    Variants equal to the query or to each other (ignoring case and spaces) are dropped and at most
    ``max_variants`` kept.

    Returns:
        The fields, or None when nothing usable was found.
    """
    body = _strip_fences(text)
    data = _parse_json_object(body)
    fields: dict[str, list[str]] = {name: [] for name in ("variants", "key_concepts", "synonyms", "search_terms")}
    if data is not None:
        for key, value in data.items():
            name = _FIELD_ALIASES.get(re.sub(r"[\s-]+", "_", str(key).strip().lower()))
            if name:
                fields[name] = _as_strings(value, split=name != "variants")
    else:
        fields["variants"] = _list_lines(body)
    limit = max(len(query) * 4, 200)  # a "variant" longer than this is prose, not a query
    if data is None and not fields["variants"]:
        plain = [_clean_item(line) for line in body.splitlines() if line.strip()]
        plain = [line for line in plain if not line.endswith((":", "："))]
        if len(plain) >= 2 and all(len(line) <= limit for line in plain):
            fields["variants"] = plain  # one query per line, no bullets
    fields["variants"] = _dedupe([v for v in fields["variants"] if len(v) <= limit], exclude=query)[:max_variants]
    for name in ("key_concepts", "synonyms", "search_terms"):
        fields[name] = _dedupe(fields[name])
    if not any(fields.values()):
        return None
    return fields


def clean_passage(text: str) -> str:
    """A HyDE answer without code fences, a leading "Passage:" label, or surrounding quotes."""
    passage = _LABEL.sub("", _strip_fences(text).strip())
    return passage.strip().strip('"“”').strip()


def _strip_fences(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def _parse_json_object(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    candidate = text[start:end + 1]
    repaired = re.sub(r",\s*([}\]])", r"\1", candidate.replace("“", '"').replace("”", '"'))
    attempts = [candidate, repaired]
    if '"' not in repaired:
        attempts.append(repaired.replace("'", '"'))
    for attempt in attempts:
        try:
            data = json.loads(attempt)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    return None


def _as_strings(value: Any, *, split: bool) -> list[str]:
    if isinstance(value, str):
        items = _SPLIT.split(value) if split else [value]
    elif isinstance(value, (list, tuple)):
        items = [item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
                 for item in value if item is not None]
    else:
        return []
    return [_clean_item(item) for item in items]


def _list_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not _BULLET.match(line):
            continue
        item = _clean_item(_BULLET.sub("", line))
        if item and not item.endswith((":", "：")):
            lines.append(item)
    return lines


def _clean_item(item: str) -> str:
    return re.sub(r"\s+", " ", item).strip().strip("\"'“”‘’`").strip()


def _dedupe(items: list[str], exclude: str = "") -> list[str]:
    seen = {_key(exclude)} if exclude else set()
    out = []
    for item in items:
        key = _key(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _key(text: str) -> str:
    return re.sub(r"[\s\W_]+", "", text.lower())
