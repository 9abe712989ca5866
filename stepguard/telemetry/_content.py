"""What may go into a span: the content opt-in, message JSON, and scrubbing of secrets.

Prompt and reply text is recorded only when asked (``capture_content=True`` or the GenAI
environment variable); API keys are never read, and URLs lose any ``user:password@`` and query.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from stepguard.telemetry._names import ENV_CAPTURE_CONTENT

__all__ = ["capture_from_env", "input_messages_json", "output_messages_json", "scrub_url", "server_of"]

_ON = {"1", "true", "yes", "on", "span_only", "span_and_event"}


def capture_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks for content.

    Accepts ``true``/``1``/``yes``/``on`` and the newer ``SPAN_ONLY``/``SPAN_AND_EVENT``
    (case-insensitive); anything else, or unset, means no content.
    """
    env = os.environ if environ is None else environ
    return env.get(ENV_CAPTURE_CONTENT, "").strip().lower() in _ON


def input_messages_json(messages: Sequence[Mapping[str, Any]]) -> str:
    """Chat messages as a JSON string in the GenAI input-messages schema.

    ``[{"role": "user", "content": "hi"}]`` -> ``[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]``.
    """
    out = [
        {"role": str(m.get("role", "user")), "parts": [{"type": "text", "content": str(m.get("content", ""))}]}
        for m in messages
    ]
    return json.dumps(out, ensure_ascii=False)


def output_messages_json(text: str, finish_reason: str) -> str:
    """The reply as a JSON string in the GenAI output-messages schema (one assistant message)."""
    msg = {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": finish_reason}
    return json.dumps([msg], ensure_ascii=False)


def scrub_url(text: str) -> str:
    """Drop ``user:password@``, the query and the fragment's secrets from a URL-looking spec.

    ``http://u:k@host:8000/v1?key=s#model`` -> ``http://host:8000/v1#model``. Text that is not
    a URL (``sim:paper``) comes back unchanged.
    """
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<unparseable model spec>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))


def server_of(model: Any) -> tuple[str, int | None] | None:
    """``(server.address, server.port)`` of a model that has a ``base_url``; else None."""
    base = getattr(model, "base_url", None)
    if not isinstance(base, str) or "://" not in base:
        return None
    try:
        parts = urlsplit(base)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None
