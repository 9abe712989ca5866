"""Read one chat-completion body exactly, or say why it is not one.

Every shape a server may send ends in one of three ways:

* text: ``message.content`` as a string; a list of content parts (the text of its ``text``
  parts, joined, other parts such as ``thinking`` skipped); a JSON number (its literal exactly as
  the server wrote it, never re-printed from a float); ``null`` or absent (``""``);
* an empty answer (``choices: []``: the guard re-asks);
* :class:`ReplyError` (anything else: not JSON, not an object, ``choices`` not a list, a choice or
  a content of the wrong type, a token count that is not a count) or a server error
  (``{"error": ...}`` with status 200), quoting the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stepguard.model import Usage

__all__ = ["Reply", "ReplyError", "content_text", "quote", "read_reply", "server_message"]

_QUOTE = 200


class ReplyError(ValueError):
    """A body is not a chat completion; the message says what was wrong and where (a JSON path)."""


class _Literal(str):
    """A JSON number kept as the exact text the server wrote."""


@dataclass(frozen=True)
class Reply:
    """One reply read from a 200 body.

    Attributes:
        text: the reply text (``""`` for no content or no choices).
        finish_reason: what the server said; ``"stop"`` if it said nothing, ``"empty"`` for no choices.
        usage: token counts (0 where the server gave none).
        model: the model name the server reported, or ``""``.
        error: the server's message when the body is ``{"error": ...}``, else ``None``.
        id: the completion's ``id`` (``chatcmpl-...``), or ``""``.
        tool_calls: ``message.tool_calls`` as ``({"name": ..., "arguments": "<JSON text>"}, ...)``;
            malformed entries are left out (the guard then finds no call and re-asks).
    """

    text: str = ""
    finish_reason: str = "stop"
    usage: Usage = Usage()
    model: str = ""
    error: str | None = None
    id: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()


def _tool_calls(message: Any) -> tuple[dict[str, Any], ...]:
    """The function calls of a chat message (``message.tool_calls[*].function``), as plain dicts."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    out = []
    for c in calls if isinstance(calls, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            args = fn.get("arguments")
            out.append({"name": str(fn["name"]), "arguments": args if isinstance(args, str) else "{}"})
    return tuple(out)


def quote(raw: str | bytes) -> str:
    """The start of a body, ``repr``-quoted, for messages (at most 200 characters of it)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return repr(text[:_QUOTE]) + (" ..." if len(text) > _QUOTE else "")


def server_message(raw: str | bytes) -> str:
    """What an error body says: ``error.message`` (or ``error`` if a string, or ``message``) of a
    JSON body, else the body's text itself, stripped; at most 300 characters."""
    text = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, str):
            return err[:300]
        message = err.get("message") if isinstance(err, dict) else None
        if isinstance(message, str):
            return message[:300]
    return text[:300]


def content_text(content: Any, where: str) -> str:
    """The text of a message's ``content`` as parsed from JSON (see the module docstring).

    A number is taken only as the literal :func:`read_reply` kept; a float parsed elsewhere has
    lost its digits, so it is refused.

    Raises:
        ReplyError: ``content`` (at ``where``, a JSON path) is not text, a list of parts, or null.
    """
    if content is None:
        return ""
    if isinstance(content, _Literal):
        return str.__str__(content)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for i, part in enumerate(content):
            if isinstance(part, str) and not isinstance(part, _Literal):
                out.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "output_text"):
                if not isinstance(part.get("text"), str) or isinstance(part.get("text"), _Literal):
                    raise ReplyError(f"{where}[{i}].text is not a string")
                out.append(part["text"])
            elif not isinstance(part, dict):
                raise ReplyError(f"{where}[{i}] is {_kind(part)}, not a content part")
        return "".join(out)
    raise ReplyError(f"{where} is {_kind(content)}, not text")


def _kind(value: Any) -> str:
    """``value``'s JSON type with its article: ``"an object"``, ``"a number"``, ..."""
    if isinstance(value, (_Literal, int, float)) and not isinstance(value, bool):
        return "a number"
    return {dict: "an object", list: "a list", bool: "a boolean", str: "a string"}.get(type(value), "a null")


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, _Literal) and value.isdigit():
        return int(value)
    raise ReplyError(f"usage.{name} is not a token count: {value!r}")


def _usage(data: dict[str, Any]) -> Usage:
    u = data.get("usage")
    if u is None:
        return Usage()
    if not isinstance(u, dict):
        raise ReplyError(f"usage is {_kind(u)}, not an object")
    details = u.get("prompt_tokens_details")
    cached = _count(details, "cached_tokens") if isinstance(details, dict) else 0
    return Usage(_count(u, "prompt_tokens"), _count(u, "completion_tokens"), cached)


def read_reply(raw: str | bytes) -> Reply:
    """Read a 200 body as a chat completion.

    Args:
        raw: the body as received.

    Returns:
        The :class:`Reply`; ``error`` is set (and nothing else read) when the body is ``{"error": ...}``.

    Raises:
        ReplyError: the body is not a chat completion; the message names the JSON path at fault.
    """
    try:
        data = json.loads(raw, parse_int=_Literal, parse_float=_Literal, parse_constant=_Literal)
    except ValueError as exc:
        raise ReplyError(f"the body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReplyError(f"the body is {_kind(data)}, not an object")
    if data.get("error") is not None and not data.get("choices"):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        return Reply(error=server_message(text) or "(empty error)")
    choices = data.get("choices")
    if choices is None:
        raise ReplyError("the body has no choices")
    if not isinstance(choices, list):
        raise ReplyError(f"choices is {_kind(choices)}, not a list")
    model = data.get("model")
    model = model if isinstance(model, str) and not isinstance(model, _Literal) else ""
    usage = _usage(data)
    rid = data.get("id")
    rid = str.__str__(rid)[:200] if isinstance(rid, str) and not isinstance(rid, _Literal) else ""
    if not choices:
        return Reply("", "empty", usage, model, id=rid)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise ReplyError(f"choices[0] is {_kind(choice)}, not an object")
    message = choice.get("message")
    if message is None and "text" in choice:  # the legacy completions shape
        text = content_text(choice.get("text"), "choices[0].text")
    elif message is None or isinstance(message, dict):
        text = content_text((message or {}).get("content"), "choices[0].message.content")
    else:
        raise ReplyError(f"choices[0].message is {_kind(message)}, not an object")
    finish = choice.get("finish_reason")
    finish = str.__str__(finish) if isinstance(finish, str) else "stop"
    return Reply(text, finish or "stop", usage, model, id=rid, tool_calls=_tool_calls(message))
