"""Should this question search the documents? Decided by the LLM through tool calling, when it can.

Only a llama-index ``FunctionCallingLLM`` whose metadata says it supports function calling is asked;
our embedded and OpenAI-compatible wrappers are plain chat LLMs, so with them every question is
searched (and the trace says why). A tool call means "search" (with the query the LLM chose); a reply
without one is used as the answer directly, without sources.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import FunctionTool

from rag.prompts import ROUTE_SYSTEM_PROMPT, ROUTE_TOOL_DESCRIPTION

logger = logging.getLogger(__name__)

SEARCH_TOOL_NAME = "search_documents"


@dataclass
class RouteDecision:
    query: str | None  # search with this query (None: with the question)
    direct_answer: str | None = None  # answer without searching


def supports_tools(llm: Any) -> bool:
    if not isinstance(llm, FunctionCallingLLM):
        return False
    try:
        return bool(llm.metadata.is_function_calling_model)
    except Exception:  # noqa: BLE001
        return False


def route_question(llm: Any, question: str, trace: dict[str, Any]) -> RouteDecision:
    """Ask a tool-calling LLM whether to search; every failure means "search"."""
    if not supports_tools(llm):
        trace["route"] = "search (the LLM backend has no tool calling, so every question searches)"
        return RouteDecision(query=None)

    def search_documents(query: str) -> str:
        """Search the user's documents."""
        return query

    tool = FunctionTool.from_defaults(fn=search_documents, name=SEARCH_TOOL_NAME, description=ROUTE_TOOL_DESCRIPTION)
    try:
        response = llm.chat_with_tools([tool], user_msg=question, tool_required=False,
                                       chat_history=[ChatMessage(role=MessageRole.SYSTEM, content=ROUTE_SYSTEM_PROMPT)])
        calls = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    except Exception as exc:  # noqa: BLE001
        logger.warning("routing failed, searching anyway: %s", exc)
        trace["route"] = f"search (routing failed: {type(exc).__name__}: {exc})"
        return RouteDecision(query=None)
    for call in calls:
        if call.tool_name == SEARCH_TOOL_NAME:
            query = str((call.tool_kwargs or {}).get("query") or "").strip() or None
            trace["route"] = f"search (the LLM called {SEARCH_TOOL_NAME})"
            return RouteDecision(query=query)
    answer = (response.message.content or "").strip()
    if not answer:
        trace["route"] = "search (the LLM neither called the tool nor answered)"
        return RouteDecision(query=None)
    trace["route"] = "direct (the LLM answered without searching)"
    return RouteDecision(query=None, direct_answer=answer)
