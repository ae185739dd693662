"""LLM query rewriting (multi-query variants, key concepts, keywords) and HyDE, with fallbacks.

Small local models wrap JSON in code fences, answer with bullet lists, or ramble; the parser accepts
all of that. Any failure (the LLM raises, exceeds ``timeout_s``, or returns nothing usable) yields
the raw query and a ``fallback_reason`` instead of an exception, so retrieval always proceeds.
Successful results are cached per (query, variants) in a small LRU.

Example:
    enhancer = QueryEnhancer(llm, variants=3, timeout_s=20)
    result = enhancer.rewrite("how does BM25 weight terms?")
    result.variants  # ["how does BM25 weight terms?", "BM25 term weighting formula", ...]
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rag.config import QueryConfig
from rag.text.language import count_tokens, detect_language

logger = logging.getLogger(__name__)

REWRITE_PROMPT = (
    "You improve search queries for a document search engine.\n"
    "Question: {query}\n\n"
    "Reply with one JSON object and nothing else, with these keys:\n"
    '- "variants": {variants} different rewordings of the question, each a complete search query '
    "that could match the wording of a passage answering it;\n"
    '- "key_concepts": the main concepts of the question;\n'
    '- "synonyms": synonyms and closely related terms;\n'
    '- "search_terms": keywords for a keyword search.\n'
    "Write every string in {language}.\n"
    'Example shape: {{"variants": ["..."], "key_concepts": ["..."], "synonyms": ["..."], '
    '"search_terms": ["..."]}}\n'
    "JSON:"
)

HYDE_PROMPT = (
    "Write a short passage (3 to 5 sentences) from a document that answers the question below. "
    "Write factual prose in {language}, as the document itself would; do not repeat the question "
    "and do not say that you are unsure.\n"
    "Question: {query}\n"
    "Passage:"
)

LANGUAGE_NAMES = {"zh": "Simplified Chinese (简体中文)", "en": "English"}

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


@dataclass
class RewriteResult:
    """Query variants and terms. ``variants[0]`` is always the original query.

    ``fallback_reason`` is empty on success; otherwise ``variants == [query]`` and the lists are empty.
    """

    variants: list[str]
    key_concepts: list[str] = field(default_factory=list)
    synonyms: list[str] = field(default_factory=list)
    search_terms: list[str] = field(default_factory=list)
    fallback_reason: str = ""
    cached: bool = False
    raw: str = ""  # the LLM's text, for the trace

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class HydeResult:
    """A hypothetical answer passage to embed; on fallback it is the query itself."""

    hypothetical_doc: str
    fallback_reason: str = ""
    cached: bool = False
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class QueryEnhancer:
    """Rewrites queries and writes HyDE passages with an injected llama-index LLM.

    The LLM call runs in a daemon worker thread and is abandoned after ``timeout_s``. An abandoned
    call keeps running in the background until the LLM returns; an in-process model that is not
    thread-safe must be guarded by the caller (``busy`` tells whether such a call is still running).

    Args:
        llm: A llama-index ``LLM`` (``complete(prompt).text`` is used).
        variants: How many rewordings to ask for (1-8). Defaults to 3.
        timeout_s: Seconds to wait for the LLM. Defaults to 20.
        cache_size: Entries kept in the LRU cache. Defaults to 256.
    """

    def __init__(self, llm: Any, variants: int = 3, timeout_s: float = 20.0, *, cache_size: int = 256) -> None:
        if not 1 <= variants <= 8:
            raise ValueError("variants must be between 1 and 8")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        self._llm = llm
        self.variants = variants
        self.timeout_s = timeout_s
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, RewriteResult | HydeResult] = OrderedDict()
        self._lock = threading.Lock()
        self._running = 0

    @classmethod
    def from_config(cls, llm: Any, config: QueryConfig) -> QueryEnhancer:
        return cls(llm, variants=config.variants, timeout_s=config.timeout_s)

    @property
    def busy(self) -> bool:
        """True while an LLM call (possibly an abandoned, timed-out one) is still running."""
        return self._running > 0

    def rewrite(self, query: str) -> RewriteResult:
        """Ask the LLM for variants, key concepts, synonyms and search terms; never raises."""
        query = query.strip()
        key = ("rewrite", query, self.variants)
        hit = self._cached(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        if not query:
            return RewriteResult(variants=[query], fallback_reason="empty query")
        prompt = REWRITE_PROMPT.format(query=query, variants=self.variants, language=_language(query))
        try:
            raw = self._complete(prompt)
        except Exception as exc:
            return self._rewrite_fallback(query, f"LLM failed: {type(exc).__name__}: {exc}")
        fields = parse_rewrite(raw, query, self.variants)
        if fields is None:
            return self._rewrite_fallback(query, "LLM output was not usable JSON or a list", raw)
        result = RewriteResult(variants=[query, *fields["variants"]], key_concepts=fields["key_concepts"],
                               synonyms=fields["synonyms"], search_terms=fields["search_terms"], raw=raw)
        self._store(key, result)
        return result

    def hyde(self, query: str) -> HydeResult:
        """Ask the LLM for a passage answering ``query`` (in the query's language); never raises."""
        query = query.strip()
        key = ("hyde", query)
        hit = self._cached(key)
        if hit is not None:
            return hit  # type: ignore[return-value]
        if not query:
            return HydeResult(hypothetical_doc=query, fallback_reason="empty query")
        try:
            raw = self._complete(HYDE_PROMPT.format(query=query, language=_language(query)))
        except Exception as exc:
            return self._hyde_fallback(query, f"LLM failed: {type(exc).__name__}: {exc}")
        passage = clean_passage(raw)
        if count_tokens(passage) < 3:
            return self._hyde_fallback(query, "LLM returned no usable passage", raw)
        result = HydeResult(hypothetical_doc=passage, raw=raw)
        self._store(key, result)
        return result

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def _rewrite_fallback(self, query: str, reason: str, raw: str = "") -> RewriteResult:
        logger.warning("query rewrite fell back to the raw query: %s", reason)
        return RewriteResult(variants=[query], fallback_reason=reason, raw=raw)

    def _hyde_fallback(self, query: str, reason: str, raw: str = "") -> HydeResult:
        logger.warning("HyDE fell back to the raw query: %s", reason)
        return HydeResult(hypothetical_doc=query, fallback_reason=reason, raw=raw)

    def _complete(self, prompt: str) -> str:
        """``llm.complete(prompt).text`` in a daemon thread; ``TimeoutError`` after ``timeout_s``."""
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["text"] = self._llm.complete(prompt).text
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc
            finally:
                with self._lock:
                    self._running -= 1
                done.set()

        with self._lock:
            self._running += 1
        # copy the context so llama-index instrumentation tags and spans follow the call
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), name="query-enhance-llm", daemon=True).start()
        if not done.wait(self.timeout_s):
            raise TimeoutError(f"no answer within {self.timeout_s:g}s")
        if "error" in box:
            raise box["error"]
        return str(box.get("text") or "")

    def _cached(self, key: tuple) -> RewriteResult | HydeResult | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is None:
                return None
            self._cache.move_to_end(key)
        return replace(hit, cached=True)

    def _store(self, key: tuple, result: RewriteResult | HydeResult) -> None:
        if self.cache_size <= 0:
            return
        with self._lock:
            self._cache[key] = result
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


def _language(query: str) -> str:
    return LANGUAGE_NAMES[detect_language(query)]


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
