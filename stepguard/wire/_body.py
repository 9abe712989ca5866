"""Reading a request body the way the proxy must: all of it, or a 400 saying why not.

A chat request is read before the proxy decides whether it names a procedure, so a body it cannot
read is refused (400 ``invalid_json``), never forwarded: forwarding it would send a request that may
name a procedure to the upstream unguarded. What cannot be read: bytes that are not UTF-8, text
that is not JSON, JSON nested too deeply for the parser, an integer of more digits than Python
converts (``sys.get_int_max_str_digits()``, 4300 by default), and a body that is not a JSON object.

A request the proxy handles itself (a guarded run, or a plain request to an upstream with no
endpoint) is also checked by :func:`check_tree` (nesting depth, text that is not Unicode) and its
sampling fields by :func:`number_field`, :func:`integer_field` and :func:`flag_field`, each error
naming the field.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from stepguard.wire._errors import RequestError

__all__ = ["MAX_DEPTH", "SEED_RANGE", "TOKENS_RANGE", "check_tree", "flag_field", "integer_field", "json_kind",
           "number_field", "parse_json", "read_body", "shown"]

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects in a request the proxy handles itself (a chat request has 5 or so)."""
SEED_RANGE = (-(2**63), 2**63 - 1)
"""A seed is a signed 64-bit integer, as OpenAI-compatible servers take it."""
TOKENS_RANGE = (1, 2**31 - 1)
"""A token count: at least 1, at most a signed 32-bit integer."""


class _NumberTooLong(ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict; a key given twice is refused (json.loads would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than int() converts: the parser's own error names no place or reason
        raise _NumberTooLong(len(text.lstrip("-"))) from None


def json_kind(value: Any) -> str:
    """What JSON calls ``value``'s kind: ``object``, ``array``, ``string``, ``number``, ``boolean`` or ``null``."""
    if isinstance(value, bool):
        return "boolean"
    kinds = ((Mapping, "object"), (list, "array"), (str, "string"), ((int, float, Decimal), "number"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def _bad_json(message: str, param: str | None) -> RequestError:
    return RequestError(400, message, param, "invalid_json")


def parse_json(text: str, what: str, param: str | None = None) -> Any:
    """``text`` read as JSON: numbers with a fraction as exact ``Decimal``, ``NaN``/``Infinity`` as floats.

    Args:
        text: the JSON text.
        what: what it is, for the error message (``"the request body"``).
        param: the error's ``param`` (``None`` for the whole body).

    Raises:
        RequestError: 400 ``invalid_json``: not JSON (with line and column), nested too deeply,
            an integer of more digits than Python converts, or a key given twice in one object.
    """
    try:
        return json.loads(text, parse_float=Decimal, parse_int=_int, object_pairs_hook=_object)
    except _DuplicateKey as exc:  # {"model": "stepguard/x", "model": "gpt"}: which one an upstream reads is its own affair
        raise _bad_json(f"{what} holds the key {exc.key!r} twice in one object; give each key once", param) from None
    except _NumberTooLong as exc:
        limit = sys.get_int_max_str_digits()
        raise _bad_json(f"{what} holds a number too long to read: an integer of {exc.digits} digits "
                        f"(at most {limit})", param) from None
    except json.JSONDecodeError as exc:
        raise _bad_json(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", param) from None
    except RecursionError:
        raise _bad_json(f"{what} is nested too deeply to read: too many arrays or objects inside each other",
                        param) from None


def read_body(raw: bytes) -> dict[str, Any]:
    """A chat request's body: a JSON object, read whole (see the module's docstring).

    Raises:
        RequestError: 400 ``invalid_json``: not UTF-8 (names the byte and its offset), not JSON,
            unreadable (:func:`parse_json`), or JSON that is not an object.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad_json(f"the request body is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
                        f"({exc.reason})", None) from None
    value = parse_json(text, "the request body")
    if not isinstance(value, dict):
        raise _bad_json(f"the request body must be a JSON object (a chat completion request), not a JSON "
                        f"{json_kind(value)}", None)
    return value


def _where(root: str, trail: tuple[Any, Any] | None) -> str:
    keys: list[Any] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    keys.reverse()
    text = root + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys[:12])
    text += f"... ({len(keys)} levels down)" if len(keys) > 12 else ""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # a key with a lone surrogate, escaped
    return text.lstrip(".") or "the request body"


def check_tree(value: Any, root: str = "") -> None:
    """Refuse what the proxy would fail on later: nesting deeper than :data:`MAX_DEPTH`, and text
    with a lone surrogate (``"\\ud800"``: a valid JSON escape that is not Unicode text).

    Walks ``value`` without recursion. ``root`` names it in errors (``""``: the request body).

    Raises:
        RequestError: 400 ``invalid_json``, ``param`` the place (``messages[0].content``).
    """
    stack: list[tuple[Any, tuple[Any, Any] | None, int]] = [(value, None, 0)]
    while stack:
        node, trail, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node, root, trail)
            continue
        if not isinstance(node, (Mapping, list)):
            continue
        if depth >= MAX_DEPTH:
            where = _where(root, trail)
            raise _bad_json(f"{where}: nested too deeply (at most {MAX_DEPTH} levels of arrays and objects)", where)
        for key, child in node.items() if isinstance(node, Mapping) else enumerate(node):
            if isinstance(key, str):
                _check_text(key, root, (trail, key))
            stack.append((child, (trail, key), depth + 1))


def _check_text(text: str, root: str, trail: tuple[Any, Any] | None) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = _where(root, trail)
        raise _bad_json(f"{where}: not Unicode text: a lone surrogate \\u{ord(text[exc.start]):04x} "
                        f"at character {exc.start}", where) from None


def shown(value: Any) -> str:
    """``value`` as an error message quotes it: as JSON writes it (``NaN``, ``1E+400``, ``"false"``), in at
    most 60 characters."""
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool) and len(str(value)) > 40:
        return f"a number of {len(str(value).lstrip('-'))} characters"
    if isinstance(value, Decimal):
        text = str(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=True, default=str)  # NaN and Infinity as JSON5 writes them
        except (ValueError, RecursionError):
            text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def number_field(body: Mapping[str, Any], key: str, low: float, high: float) -> float | None:
    """``body[key]`` as a finite float from ``low`` to ``high``, or ``None`` when absent or null.

    Raises:
        RequestError: 400 ``invalid_value`` (``param`` is ``key``): a string, a boolean, ``NaN``,
            an infinity, or a number out of range.
    """
    value = body.get(key)
    if value is None:
        return None
    try:
        number = float(value) if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) else math.nan
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not (math.isfinite(number) and low <= number <= high):
        raise RequestError(400, f"{key} must be a finite number from {low:g} to {high:g}, not {shown(value)}",
                           key, "invalid_value")
    return number


def integer_field(body: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    """``body[key]`` as an integer from ``low`` to ``high``, or ``None`` when absent or null.

    Raises:
        RequestError: 400 ``invalid_value`` (``param`` is ``key``): not an integer (``5.0``, ``"5"``,
            ``true``) or out of range.
    """
    value = body.get(key)
    if value is None:
        return None
    if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
        raise RequestError(400, f"{key} must be an integer from {low} to {high}, not {shown(value)}", key, "invalid_value")
    return value


def flag_field(body: Mapping[str, Any], key: str) -> bool:
    """``body[key]`` as a boolean; absent or null is ``False``.

    Raises:
        RequestError: 400 ``invalid_value`` (``param`` is ``key``): anything but JSON ``true``/``false``
            (the string ``"false"`` is not false).
    """
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError(400, f"{key} must be true or false (a JSON boolean), not {shown(value)}", key, "invalid_value")
    return value
