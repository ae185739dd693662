"""The one query rewriter: LLM-written search variants (with key concepts and keywords) and HyDE passages.

Any failure (the LLM raises, exceeds ``timeout_s``, or returns nothing usable) yields the raw query
and a ``fallback_reason`` instead of an exception, so retrieval always proceeds. Successful results
are cached per (query, variants). Query expansion (``rag.retrieval.expansion``) and reflection's
"rewrite" strategy both use it.

Example:
    enhancer = QueryEnhancer(llm, variants=3, timeout_s=20)
    result = enhancer.rewrite("how does BM25 weight terms?")
    result.variants  # ["how does BM25 weight terms?", "BM25 term weighting formula", ...]
"""

from __future__ import annotations

import contextvars
import logging
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rag.caching import LRUCache
from rag.config import QueryConfig
from rag.prompts import HYDE_PROMPT, LANGUAGE_NAMES, QUERY_REWRITE_PROMPT, as_quoted_data
from rag.retrieval.query_parse import clean_passage, parse_rewrite
from rag.text.language import count_tokens, detect_language

logger = logging.getLogger(__name__)


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
        self._cache: LRUCache[RewriteResult | HydeResult] = LRUCache(cache_size)
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
        prompt = QUERY_REWRITE_PROMPT.format(query=as_quoted_data(query), variants=self.variants,
                                             language=_language(query))
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
            raw = self._complete(HYDE_PROMPT.format(query=as_quoted_data(query), language=_language(query)))
        except Exception as exc:
            return self._hyde_fallback(query, f"LLM failed: {type(exc).__name__}: {exc}")
        passage = clean_passage(raw)
        if count_tokens(passage) < 3:
            return self._hyde_fallback(query, "LLM returned no usable passage", raw)
        result = HydeResult(hypothetical_doc=passage, raw=raw)
        self._store(key, result)
        return result

    def clear_cache(self) -> None:
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
        hit = self._cache.get(key)
        return None if hit is None else replace(hit, cached=True)

    def _store(self, key: tuple, result: RewriteResult | HydeResult) -> None:
        self._cache.put(key, result)


def _language(query: str) -> str:
    return LANGUAGE_NAMES[detect_language(query)]
