"""Where questions and the API key go: the LLM endpoint fields and the rules that guard them.

``llm.backend``, ``llm.base_url``, ``llm.model`` and ``llm.api_key_env`` decide which server receives
every question with its sources, and which environment variable is read and sent to it as a Bearer
token. They are therefore never taken from a file someone else could have written (an uploaded or
saved preset, the remembered settings) without the user confirming the host first; see
``rag.presets``. ``api_key_env`` must name a variable that is plainly an API key
(``API_KEY_ENV_PATTERN``), so no setting can make the app send ``HOME`` or ``AWS_SECRET_ACCESS_KEY``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

ENDPOINT_FIELDS = ("llm.backend", "llm.base_url", "llm.model", "llm.api_key_env")
API_KEY_ENV_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")
API_KEY_ENV_RULE = ("must be the name of an environment variable ending in _API_KEY (upper-case letters, digits "
                    "and _, e.g. RAG_LLM_API_KEY), so no setting can send another secret to the server")


def api_key_env_problem(name: str) -> str | None:
    """Why ``name`` may not be used as ``llm.api_key_env``, or None when it may."""
    return None if API_KEY_ENV_PATTERN.fullmatch(name) else API_KEY_ENV_RULE


def base_url_problem(url: str) -> str | None:
    """Why ``url`` is not a usable ``llm.base_url``, or None when it is."""
    if not url.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in 0-65535
    except ValueError as exc:
        return f"is not a valid URL ({exc})"
    if not parts.hostname:
        return "must name a host, e.g. http://127.0.0.1:8080/v1"
    return None


def endpoint_host(url: str) -> str:
    """``scheme://host:port`` of ``url``, the port made explicit: what a user must see before trusting it.

    Args:
        url: An ``http(s)://`` URL; user info (``user:pw@``) is dropped, since it is not the host.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.scheme}://{host}:{port}"


def endpoint_summary(values: dict[str, Any]) -> str:
    """Plain text (never markup) naming the host, key variable, backend and model of endpoint ``values``."""
    host = endpoint_host(values["llm.base_url"])
    lines = [f"questions and sources would be sent to: {host}",
             f"API key read from: ${values['llm.api_key_env']} and sent to that host",
             f"backend: {values['llm.backend']} · model: {values['llm.model']}"]
    if values["llm.backend"] != "openai":
        lines.append("(backend embedded: answers stay on this machine until the backend is openai)")
    return "\n".join(lines)
