"""A chat history as a Markdown or JSON document (the Chat page's export buttons).

A history is a list of messages, each a mapping with ``role`` (``user`` or ``assistant``) and
``content``; assistant messages may also carry ``result`` (an ``AnswerResult``, or its ``to_dict()``)
and ``error``. Both exports are deterministic: no clock, no random ids, so the same history always
gives the same bytes. Document text is written as data (JSON strings, Markdown quotes), never as HTML.

The Markdown export is opened in viewers that render links, images and HTML, so nothing from a
document, a file name or the model is written live: answers go through ``safe_markdown`` (their
formatting kept, links and images as code), passages, names, questions and errors through
``escape_markdown`` (``rag.text``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from rag.answer.types import AnswerResult
from rag.text.escape import escape_label, escape_markdown
from rag.text.safe_markdown import safe_markdown

FORMAT_VERSION = 1
ROLE_TITLES = {"user": "You", "assistant": "Citewise"}


def result_dict(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message's answer result as plain JSON data, or None for a user message / no result."""
    result = message.get("result")
    if result is None:
        return None
    return result.to_dict() if isinstance(result, AnswerResult) else dict(result)


def to_json(messages: Sequence[Mapping[str, Any]], *, title: str = "Citewise chat") -> str:
    """The whole history: every message with its citations, sources, reflection, groundedness, timings."""
    out = []
    for message in messages:
        item: dict[str, Any] = {"role": str(message.get("role", "")), "content": str(message.get("content", ""))}
        result = result_dict(message)
        if result is not None:
            item["result"] = result
        if message.get("error"):
            item["error"] = str(message["error"])
        out.append(item)
    return json.dumps({"format": "citewise-chat", "version": FORMAT_VERSION, "title": title, "messages": out},
                      ensure_ascii=False, indent=2, default=str)


def to_markdown(messages: Sequence[Mapping[str, Any]], *, title: str = "Citewise chat") -> str:
    """A readable transcript: questions, answers, and under each answer its cited passages."""
    lines = [f"# {title}", ""]
    for message in messages:
        role = str(message.get("role", ""))
        lines += [f"## {ROLE_TITLES.get(role, escape_label(role.title()) or 'Message')}", ""]
        content = str(message.get("content", "")).strip()
        body = safe_markdown(content) if role == "assistant" else escape_markdown(content)
        lines += [body or "_(empty)_", ""]
        result = result_dict(message)
        error = message.get("error") or (result or {}).get("error")
        if error:
            lines += [f"> **Error:** {_one_line(error)}", ""]
        if result is not None:
            lines += _result_lines(result)
    return "\n".join(lines).rstrip() + "\n"


def _result_lines(result: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if not result.get("used_knowledge_base", True):
        lines += ["_Answered without searching the documents._", ""]
    standalone = result.get("standalone_question") or ""
    if standalone and standalone != result.get("question"):
        lines += [f"_Searched for: {_one_line(standalone)}_", ""]
    citations = result.get("citations") or []
    if citations:
        lines += ["**Citations**", ""]
        for c in citations:
            extra = " (matched without a marker)" if c.get("inferred") else ""
            lines.append(f"- \\[{c['n']}\\] {escape_label(c['file_name'])}, p. {c['page']}{extra}: "
                         f"\"{_one_line(c.get('text', ''))}\"")
        lines.append("")
    sources = result.get("sources") or []
    cited = {c["n"] for c in citations}
    uncited = [s for s in sources if s["n"] not in cited]
    if uncited:
        lines += ["**Other sources retrieved**", ""]
        lines += [f"- \\[{s['n']}\\] {escape_label(s['file_name'])}, {_pages(s['page_start'], s['page_end'])}"
                  for s in uncited]
        lines.append("")
    unsupported = [g for g in result.get("groundedness") or [] if not g.get("supported")]
    if unsupported:
        lines += ["**Not supported by the cited source**", ""]
        lines += [f"- {_one_line(g['sentence'])} ({_one_line(g.get('reason') or 'unsupported')})" for g in unsupported]
        lines.append("")
    rounds = result.get("reflection") or []
    if rounds:
        scores = ", ".join(f"round {r['round']}: {_score(r.get('score'))}" + (" (kept)" if r.get("selected") else "")
                           for r in rounds)
        lines += [f"_Reflection: {scores}_", ""]
    return lines


def _score(score: Any) -> str:
    return "unscored" if score is None else f"{float(score):g}/10"


def _pages(start: int, end: int) -> str:
    return f"p. {start}" if end <= start else f"pp. {start}–{end}"


def _one_line(text: Any) -> str:
    """Untrusted text as one escaped line (quotes, errors, sentences): shown, never rendered."""
    return escape_markdown(" ".join(str(text).split()))
