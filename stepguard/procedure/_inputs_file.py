"""Input values read from a file (a suite's input sets), strictly: a value arrives as written.

PyYAML reads YAML 1.1, where ``qty: 010`` is octal 8, ``minutes: 1:30`` is 90 (base 60),
``ok: yes`` is true and ``due: 2024-03-05`` a ``date``; and YAML and ``json.loads`` both keep the
last of two equal keys without a word. This loader reads YAML with the scalars of the YAML 1.2
core schema, stricter in three places, and JSON with exact numbers:

========================================  ===========================  ==============================
written (unquoted)                         read as                      why
========================================  ===========================  ==============================
``~``, ``null``, ``Null``, ``NULL``, empty ``None``                     YAML 1.2 core
``true``/``True``/``TRUE``, ``false``...   ``bool``                     YAML 1.2 core
``25``, ``-3``, ``+1``, ``0``              ``int``                      YAML 1.2 core
``25.00``, ``.5``, ``1e3``, ``-0.20``      ``Decimal`` of that text     exact; places kept (``25.00``)
``010``, ``0o17``, ``0x1F``, ``0b101``     refused: quote it or write   YAML 1.1 and 1.2 disagree (8 or
                                           it in decimal                10), or JSON has no such number
``.inf``, ``.nan``                         refused                      not a finite number
anything else: ``1:30``, ``1_000``,        ``str``, exactly as written  YAML 1.2 core (no base 60, no
``yes``, ``on``, ``2024-03-05``                                         ``_``, no 1.1 booleans or dates)
========================================  ===========================  ==============================

A quoted scalar is always text. JSON numbers are ``int`` or ``Decimal`` of their text;
``NaN``/``Infinity`` are refused. A number of more than 400 digits, or whose exponent makes it
larger than the evaluator's bounds, is refused (the bound of :func:`stepguard.evaluator.parse_number`,
which reads the same number written as quoted text). Explicit tags other than the core ones
(``!!timestamp``, ``!!binary``, ``!!set``, ``!python/...``), YAML aliases, merge keys, keys that
are not text, and a key given twice in one mapping are refused; every error names the file and,
for YAML, the line. The declared input type then decides the value's form
(:func:`stepguard.procedure.coerce_value`): ``Decimal('25.00')`` binds to a decimal input as 25,
``"1:30"`` to a string input as ``"1:30"`` and is refused by an integer one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from yaml.composer import Composer
from yaml.constructor import BaseConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from stepguard.errors import EvaluationError, ProcedureError
from stepguard.evaluator import parse_number
from stepguard.procedure._io import LoadLimits, check_yaml_events, json_depth, no_duplicate_keys, read_file_text, yaml_problem

__all__ = ["load_inputs_file", "parse_inputs_text"]

_CORE = "tag:yaml.org,2002:"
_AMBIGUOUS = "tag:stepguard,2026:ambiguous-number"
_NOT_FINITE = "tag:stepguard,2026:not-finite"

_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_OTHER_INT = re.compile(r"[-+]?(?:0[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+|0b[01]+)\Z")  # 010: octal 8 in YAML 1.1, 10 in 1.2
_EXPONENT = re.compile(r"[eE][-+]?0*([0-9]+)\Z")
_INF_NAN = re.compile(r"[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z")


class _Resolver(BaseResolver):
    """Plain scalars resolved by the YAML 1.2 core schema's rules, with the refused forms tagged."""


for _tag, _regexp in ((_CORE + "null", _NULL), (_CORE + "bool", _BOOL), (_CORE + "int", _INT),
                      (_AMBIGUOUS, _OTHER_INT), (_CORE + "float", _FLOAT), (_NOT_FINITE, _INF_NAN)):
    _Resolver.add_implicit_resolver(_tag, _regexp, None)  # None: tried on every plain scalar, in this order


class _Refused(Exception):
    """A value the file may not hold; the loader adds the file's name."""


def _line(node: Node) -> str:
    return f" (line {node.start_mark.line + 1})" if node.start_mark is not None else ""


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _number(text: str, where: str = "") -> int | Decimal:
    """An ``int`` or the ``Decimal`` of ``text``, bounded as :func:`parse_number` bounds it."""
    exponent = _EXPONENT.search(text)
    if exponent and len(exponent.group(1)) > 4:
        raise _Refused(f"the number {_shown(text)} has an exponent of more than 4 digits{where}")
    try:
        parse_number(text)  # the bound: digits and size, before any conversion
    except EvaluationError as exc:
        raise _Refused(f"the number {_shown(text)} is past the bounds: {exc}{where}") from None
    return int(text) if _INT.match(text) else Decimal(text)


class _Constructor(BaseConstructor):
    """Builds only what an input file may hold: mappings with text keys, lists, text, exact numbers,
    booleans and null."""

    def _scalar(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            raise _Refused(f"the tag {node.tag} applies to a single value{_line(node)}")
        return str(node.value)

    def _null(self, node: Node) -> None:
        if not _NULL.match(self._scalar(node)):
            raise _Refused(f"{_shown(node.value)} is not null{_line(node)}")

    def _bool(self, node: Node) -> bool:
        text = self._scalar(node)
        if not _BOOL.match(text):
            raise _Refused(f"{_shown(text)} is not true or false{_line(node)}")
        return text.lower() == "true"

    def _int(self, node: Node) -> int | Decimal:
        text = self._scalar(node)
        if not _INT.match(text):
            raise _Refused(f"{_shown(text)} is not a whole number in decimal{_line(node)}")
        return _number(text, _line(node))

    def _float(self, node: Node) -> int | Decimal:
        text = self._scalar(node)
        if not _FLOAT.match(text):
            raise _Refused(f"{_shown(text)} is not a finite decimal number{_line(node)}")
        return _number(text, _line(node))

    def _ambiguous(self, node: Node) -> None:
        text = self._scalar(node)
        sign, digits = ("-" if text.startswith("-") else ""), text.lstrip("+-")
        if digits[1:2].isdigit():
            as_11 = f"octal ({sign}{int(digits, 8)})" if set(digits) <= set("01234567") else "text"
            why = (f"has a leading zero: YAML 1.1 reads it as {as_11}, YAML 1.2 as {sign}{int(digits)}; "
                   "write it without the zero, or quote it if it is text")
        else:
            base = {"o": "octal", "x": "hexadecimal", "b": "binary"}[digits[1]]
            why = f"is written in {base}, which JSON and `stepguard run -i` do not read: write it in decimal, or quote it if it is text"
        raise _Refused(f"{_shown(text)} {why}{_line(node)}")

    def _not_finite(self, node: Node) -> None:
        raise _Refused(f"{_shown(self._scalar(node))} is not a finite number{_line(node)}")

    def _str(self, node: Node) -> str:
        return self._scalar(node)

    def _seq(self, node: Node) -> list[Any]:
        if not isinstance(node, SequenceNode):
            raise _Refused(f"the tag {node.tag} applies to a list{_line(node)}")
        return [self.construct_object(child, deep=True) for child in node.value]

    def _map(self, node: Node) -> dict[str, Any]:
        if not isinstance(node, MappingNode):
            raise _Refused(f"the tag {node.tag} applies to a mapping{_line(node)}")
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _Refused(f"a key must be text (a name), got {key!r}{_line(key_node)}")
            if key in out:
                raise _Refused(f"duplicate key {_shown(key)}{_line(key_node)}: give each key once")
            out[key] = self.construct_object(value_node, deep=True)
        return out

    def _unknown(self, node: Node) -> None:
        raise _Refused(f"the tag {node.tag} is not accepted in an inputs file (text, numbers, true/false, "
                       f"null, lists and mappings only){_line(node)}")


# The constructors by tag, set as the table add_constructor() would fill (BaseConstructor's is empty);
# PyYAML's stubs type add_constructor() for its own loader classes only. The None tag: any other tag.
_Constructor.yaml_constructors = {
    **{_CORE + tag: build for tag, build in (("null", _Constructor._null), ("bool", _Constructor._bool),
                                             ("int", _Constructor._int), ("float", _Constructor._float),
                                             ("str", _Constructor._str), ("seq", _Constructor._seq),
                                             ("map", _Constructor._map))},
    _AMBIGUOUS: _Constructor._ambiguous, _NOT_FINITE: _Constructor._not_finite, None: _Constructor._unknown,
}


class _YamlLoader(Protocol):
    """What parse_inputs_text uses of a loader."""

    def get_single_data(self) -> Any: ...

    def dispose(self) -> None: ...


class _PyLoader(Reader, Scanner, Parser, Composer, _Constructor, _Resolver):
    """The pure-Python loader: for a PyYAML built without libyaml."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)


_Loader: Callable[[str], _YamlLoader] = _PyLoader
if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class _CLoader(CParser, _Constructor, _Resolver):
        """The libyaml loader (the same constructors and resolver, a C parser)."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            _Constructor.__init__(self)
            _Resolver.__init__(self)

    _Loader = _CLoader


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    try:
        return no_duplicate_keys(pairs)
    except ValueError:
        raise _Refused(f"duplicate key {_shown(next(k for i, (k, _) in enumerate(pairs) if k in dict(pairs[:i])))}") from None


def _json_constant(name: str) -> None:
    raise _Refused(f"{name} is not a finite number")


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


def _json_duplicate_line(text: str) -> int | None:
    """The line of the first key given twice in one JSON object (json.loads says which key, not where)."""
    stack: list[set[str] | None] = []
    pending: tuple[str, int] | None = None
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        if tok == ":" and pending is not None and stack and stack[-1] is not None:
            key, pos = pending
            if key in stack[-1]:
                return text.count("\n", 0, pos) + 1
            stack[-1].add(key)
        pending = None
        if tok in "{[":
            stack.append(set() if tok == "{" else None)
        elif tok in "}]":
            if stack:
                stack.pop()
        elif tok.startswith('"'):
            pending = (json.loads(tok), m.start())
    return None


def parse_inputs_text(text: str, where: str = "<text>", fmt: Literal["yaml", "json"] = "yaml",
                      limits: LoadLimits = LoadLimits()) -> Any:
    """Parse the text of an inputs file strictly (see the module's docstring for what each value becomes).

    Args:
        text: the file's content.
        where: a name for errors (the file's path).
        fmt: ``"yaml"`` or ``"json"``.
        limits: the size and nesting caps of procedure files (``max_bytes``, ``max_depth``).

    Returns:
        The parsed document: ``dict`` (text keys), ``list``, ``str``, ``int``, ``Decimal``, ``bool`` or ``None``.

    Raises:
        ProcedureError: too large or deep, not valid YAML or JSON, an alias, a key given twice (with
            its line), an ambiguous or non-finite number, a number past the bounds, or another tag;
            the message names ``where``.
    """
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ProcedureError(f"larger than {limits.max_bytes} bytes", where)
    try:
        if fmt == "json":
            json_depth(text, limits, where)
            try:
                return json.loads(text, parse_float=_number, parse_int=_number, parse_constant=_json_constant,
                                  object_pairs_hook=_json_object)
            except json.JSONDecodeError as exc:
                raise ProcedureError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", where) from None
            except RecursionError:
                raise ProcedureError(f"nesting deeper than {limits.max_depth} levels", where) from None
            except _Refused as exc:
                line = _json_duplicate_line(text) if str(exc).startswith("duplicate key") else None
                raise _Refused(f"{exc} (line {line})" if line else str(exc)) from None
        check_yaml_events(text, limits, where, "inputs files")
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        except yaml.YAMLError as exc:
            raise ProcedureError(f"not valid YAML: {yaml_problem(exc)}", where) from None
        finally:
            loader.dispose()
    except _Refused as exc:
        raise ProcedureError(str(exc), where) from None


def load_inputs_file(path: str | Path, limits: LoadLimits = LoadLimits()) -> Any:
    """Read an inputs file (``.json`` as JSON, anything else as YAML) with :func:`parse_inputs_text`.

    Args:
        path: the file (``payroll.inputs.yaml``).
        limits: size and nesting caps.

    Returns:
        The parsed document (see :func:`parse_inputs_text`).

    Raises:
        ProcedureError: unreadable, not UTF-8, or refused by :func:`parse_inputs_text`; names the file.
    """
    text, where, fmt = read_file_text(path, limits)
    return parse_inputs_text(text, where, fmt, limits)
