"""LLM-written document metadata (summary, keywords, topics, key phrases), stored per document.

A short document is described in one call. A long one is read map-reduce style: up to
``max_input_chars`` characters of its chunks, spread evenly over the whole document, are packed into
parts that each fit the model's context window with room for the reply; each part is described
("map"), and the parts' notes are described together ("reduce"), again in parts if they do not fit.
No call ever exceeds the context window, whatever the document's length.

Small local models wrap JSON in prose or code fences, or break it; parsing is lenient. A failure
leaves the fields empty and says why in ``DocumentMetadata.error`` — metadata never fails an ingest.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from rag.ingest.metadata_prompts import CLOSE_FENCE, FINAL, OPEN_FENCE, PART, SYSTEM, WHAT, fence, prompt_language
from rag.text.language import count_tokens as rough_tokens

logger = logging.getLogger(__name__)

FIELDS = ("summary", "keywords", "topics", "key_phrases")
LIST_LIMITS = {"keywords": 8, "topics": 4, "key_phrases": 5}
REPLY_TOKENS = 320  # room kept in the context window for the JSON reply
MAX_REDUCE_ROUNDS = 4
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_KEY_RE = re.compile(r'"(summary|keywords|topics|key_phrases)"\s*:')

TokenCounter = Callable[[str], int]


@dataclass
class DocumentMetadata:
    summary: str = ""
    keywords: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    key_phrases: list[str] = field(default_factory=list)
    error: str = ""  # why fields are missing
    calls: int = 0
    chars_read: int = 0

    def registry_fields(self) -> dict[str, str]:
        """The registry's columns; lists are stored comma-separated."""
        return {"summary": self.summary, "keywords": ", ".join(self.keywords), "topics": ", ".join(self.topics),
                "key_phrases": ", ".join(self.key_phrases)}


def generate_metadata(llm: LLM, texts: Sequence[str], *, language: str = "en", max_input_chars: int = 6000,
                      count: TokenCounter | None = None) -> DocumentMetadata:
    """Describe a document from its chunk texts (in document order).

    Args:
        llm: The model; its ``metadata.context_window`` bounds every call.
        texts: The document's chunk texts, in order.
        language: ``zh`` for Chinese prompts and output, else English. Defaults to ``en``.
        max_input_chars: Characters of chunk text read at most, spread over the document. Defaults to 6000.
        count: Tokens of a text under the model's tokenizer. Defaults to the model's ``count_tokens``, or
            a generous estimate when it has none.
    """
    lang = prompt_language(language)
    count = count or token_counter(llm)
    selected = [fence(text) for text in select_texts(texts, max_input_chars)]
    result = DocumentMetadata(chars_read=sum(len(text) for text in selected))
    budget = _input_budget(llm, lang, count)
    if not selected:
        result.error = "the document has no text to describe"
        return result
    if budget < 64:
        result.error = f"the model's context window ({_context_window(llm)} tokens) is too small for metadata"
        return result
    try:
        parts = pack(selected, budget, count)
        if len(parts) > 1:
            notes = _map(llm, lang, parts, result)
            for _ in range(MAX_REDUCE_ROUNDS):
                if not notes:
                    result.error = "the LLM described none of the document's parts"
                    return result
                parts = pack(notes, budget, count)
                if len(parts) == 1:
                    break
                notes = _map(llm, lang, parts, result)
            text, what = "\n".join(parts[0]), WHAT[lang]["notes"]
        else:
            text, what = "\n\n".join(parts[0]), WHAT[lang]["document"]
        reply = _ask(llm, lang, FINAL[lang].format(text=text, what=what, fence_open=OPEN_FENCE,
                                                   fence_close=CLOSE_FENCE), result)
    except Exception as exc:  # noqa: BLE001 - the LLM is optional here; the ingest goes on without it
        result.error = f"the LLM failed ({type(exc).__name__}: {exc})"
        logger.warning("document metadata skipped: %s", result.error)
        return result
    parsed = parse_json_object(reply) or lenient_fields(reply)
    if parsed is None:
        result.error = f"the LLM's reply was not JSON: {reply[:120]!r}"
        logger.warning("document metadata skipped: %s", result.error)
        return result
    _fill(result, parsed)
    if not result.summary:
        result.error = "the LLM's reply had no summary"
    return result


def select_texts(texts: Sequence[str], max_chars: int) -> list[str]:
    """All texts when they fit ``max_chars``, else texts spread evenly over the document (first included)."""
    texts = [text for text in texts if text.strip()]
    if sum(len(text) for text in texts) <= max_chars:
        return list(texts)
    average = sum(len(text) for text in texts) / len(texts)
    wanted = max(1, int(max_chars // max(average, 1.0)))
    step = len(texts) / wanted
    chosen, used = [], 0
    for index in sorted({int(i * step) for i in range(wanted)}):
        text = texts[index][: max_chars - used]
        if not text:
            break
        chosen.append(text)
        used += len(text)
    return chosen


def pack(texts: Sequence[str], budget: int, count: TokenCounter) -> list[list[str]]:
    """Group texts in order into parts of at most ``budget`` tokens (a longer text is cut to fit)."""
    parts: list[list[str]] = []
    used = budget + 1
    for text in texts:
        size = count(text)
        while size > budget:  # cut proportionally until it fits
            text = text[: max(1, int(len(text) * budget / size * 0.9))]
            size = count(text)
        if used + size > budget:
            parts.append([])
            used = 0
        parts[-1].append(text)
        used += size + 1
    return parts


def token_counter(llm: Any) -> TokenCounter:
    """The model's own tokenizer, or an estimate that errs on the high side."""
    own = getattr(llm, "count_tokens", None)
    if callable(own):
        return own
    return lambda text: int(max(1.5 * rough_tokens(text), len(text) / 2.5)) + 1


def parse_json_object(raw: str) -> dict | None:
    """The first JSON object in ``raw``, tolerating code fences and prose around it."""
    raw = re.sub(r"```(?:json)?", "", raw)
    start = raw.find("{")
    while start != -1:
        depth = 0
        for end in range(start, len(raw)):
            if raw[end] == "{":
                depth += 1
            elif raw[end] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(raw[start:end + 1])
                    except json.JSONDecodeError:
                        break
                    return value if isinstance(value, dict) else None
        start = raw.find("{", start + 1)
    return None


def lenient_fields(raw: str) -> dict | None:
    """The fields of a JSON-like reply that ``json`` refuses, most often for quotes left unescaped inside
    the summary ("Norman" comes from "Norseman") or a reply cut off by the length limit: each key's
    value runs from the key to the next key."""
    found = list(_KEY_RE.finditer(raw))
    if not found:
        return None
    fields: dict[str, Any] = {}
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(raw)
        value = raw[match.end():end].strip().rstrip("}").strip().rstrip(",").strip()
        if value.startswith("["):
            items = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
            fields[match.group(1)] = items or [item.strip().strip('"') for item in value.strip("[]").split(",")]
        else:
            fields[match.group(1)] = value[1:-1] if value[:1] == '"' and value[-1:] == '"' else value.strip('"')
    return fields


def _map(llm: LLM, lang: str, parts: list[list[str]], result: DocumentMetadata) -> list[str]:
    """One note per part: its summary and keywords (a reply that is not JSON is kept as the summary)."""
    notes = []
    for number, part in enumerate(parts, start=1):
        reply = _ask(llm, lang, PART[lang].format(text="\n\n".join(part), part=number, parts=len(parts),
                                                  fence_open=OPEN_FENCE, fence_close=CLOSE_FENCE), result)
        parsed = parse_json_object(reply) or lenient_fields(reply) or {"summary": reply}
        summary = _clean(parsed.get("summary", ""), 600)
        keywords = ", ".join(_as_list(parsed.get("keywords"), 6))
        if summary or keywords:
            notes.append(f"{number}. {summary}" + (f" ({keywords})" if keywords else ""))
    return notes


def _ask(llm: LLM, lang: str, prompt: str, result: DocumentMetadata) -> str:
    result.calls += 1
    messages = [ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM[lang]),
                ChatMessage(role=MessageRole.USER, content=prompt)]
    reply = llm.chat(messages, max_tokens=REPLY_TOKENS, temperature=0.0)
    return reply.message.content or ""


def _input_budget(llm: LLM, lang: str, count: TokenCounter) -> int:
    template = SYSTEM[lang] + FINAL[lang] + PART[lang] + WHAT[lang]["notes"]
    return _context_window(llm) - REPLY_TOKENS - count(template) - 48  # chat-template tokens and rounding


def _context_window(llm: LLM) -> int:
    try:
        return int(llm.metadata.context_window)
    except (AttributeError, TypeError, ValueError):
        return 2048


def _fill(result: DocumentMetadata, parsed: dict) -> None:
    result.summary = _clean(parsed.get("summary", ""), 1000)
    for name, limit in LIST_LIMITS.items():
        setattr(result, name, _as_list(parsed.get(name), limit))


def _as_list(value: Any, limit: int) -> list[str]:
    if isinstance(value, str):
        value = re.split(r"[,，、;；\n]", value)
    if not isinstance(value, list):
        return []
    items = [_clean(item, 80) for item in value if isinstance(item, (str, int, float))]
    return list(dict.fromkeys(item for item in items if item))[:limit]


def _clean(value: Any, limit: int) -> str:
    """Model output as plain one-line text: no control characters, no fences, bounded length."""
    text = fence(_CONTROL_RE.sub(" ", str(value))) if isinstance(value, (str, int, float)) else ""
    return " ".join(text.split())[:limit]
