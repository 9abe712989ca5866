"""Loading and saving procedure files (YAML or JSON), treating them as untrusted input.

Caps (all configurable through :class:`LoadLimits`): file size, YAML/JSON nesting depth, number of
steps, and no YAML aliases at all (so a billion-laughs file is refused before anything is built).
Duplicate mapping keys are refused (YAML and JSON would otherwise keep the last one silently).
Every error names the file and, for validation errors, the location inside it (``steps[4].expr``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from stepguard.errors import ProcedureError
from stepguard.procedure._model import Procedure

__all__ = ["LoadLimits", "load_procedure", "parse_procedure", "procedure_json_schema", "save_procedure"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LoadLimits(NamedTuple):
    """Caps on an untrusted procedure file."""

    max_bytes: int = 10 * 1024 * 1024
    """Largest file accepted, bytes (10 MiB)."""
    max_depth: int = 32
    """Deepest YAML/JSON nesting accepted."""
    max_steps: int = 10_000
    """Most steps accepted in a file, counted before validation (10,000 validate in about 0.5 s;
    the paper's longest procedures have 95). ``Procedure`` itself allows up to 100,000 when built in code."""


def _check_yaml_events(text: str, limits: LoadLimits, where: str) -> None:
    """One pass over the YAML events, before anything is built: refuse aliases, nesting deeper than
    ``max_depth``, duplicate mapping keys and a top-level ``steps`` list longer than ``max_steps``."""
    # one entry per open collection: [keys seen, expecting a key?, is the top-level steps list, item count]
    stack: list[list[Any]] = []
    next_is_steps = False
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent):
                raise ProcedureError("YAML aliases (*name) are not allowed in procedure files", where)
            top = stack[-1] if stack else None
            if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)) and top is not None:
                if top[0] is not None:  # inside a mapping: this node is a key or a value
                    if top[1] and isinstance(event, yaml.ScalarEvent):
                        if event.value in top[0]:
                            line = event.start_mark.line + 1 if event.start_mark else "?"
                            raise ProcedureError(f"duplicate key {event.value[:64]!r} (line {line})", where)
                        top[0].add(event.value)
                        next_is_steps = len(stack) == 1 and event.value == "steps"
                    elif not top[1]:
                        pass  # a value: next_is_steps stays as the key set it
                    top[1] = not top[1]
                elif top[2]:
                    top[3] += 1
                    if top[3] > limits.max_steps:
                        raise ProcedureError(f"more than {limits.max_steps} steps (LoadLimits.max_steps)", where)
            if isinstance(event, yaml.MappingStartEvent):
                stack.append([set(), True, False, 0])
            elif isinstance(event, yaml.SequenceStartEvent):
                stack.append([None, False, next_is_steps and len(stack) == 1, 0])
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                next_is_steps = False
                if len(stack) > limits.max_depth:
                    raise ProcedureError(f"nesting deeper than {limits.max_depth} levels", where)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
    except yaml.YAMLError as exc:
        raise ProcedureError(f"not valid YAML: {exc}", where) from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: a dict, refusing duplicate keys."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k[:64]!r}")
        out[k] = v
    return out


_JSON_STRING = re.compile(r'"(?:[^"\\\n]++|\\.)*+"')
_BRACKET = re.compile(r"[\[\]{}]")


def _json_depth(text: str, limits: LoadLimits, where: str) -> None:
    """Refuse JSON nested deeper than ``max_depth`` (brackets outside strings); linear-time regexes."""
    depth = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            if depth > limits.max_depth:
                raise ProcedureError(f"nesting deeper than {limits.max_depth} levels", where)
        else:
            depth -= 1


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "procedure"


def parse_procedure(text: str, where: str = "<text>", fmt: str = "yaml", limits: LoadLimits = LoadLimits()) -> Procedure:
    """Parse procedure text (YAML or JSON) into a validated :class:`Procedure`.

    Args:
        text: the file content.
        where: a name for errors (the file path).
        fmt: ``"yaml"`` or ``"json"`` (JSON is also valid YAML, but parses faster as JSON).
        limits: size and nesting caps.

    Raises:
        ProcedureError: too large, too deep, aliases, syntax errors, or validation errors (with location).
    """
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ProcedureError(f"larger than {limits.max_bytes} bytes", where)
    if fmt == "json":
        if text.count("[") + text.count("{") > limits.max_depth:  # cheap pre-test; the scan is exact
            _json_depth(text, limits, where)
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, duplicate keys, ints over 4,300 digits
            raise ProcedureError(f"not valid JSON: {exc}", where) from None
    else:
        _check_yaml_events(text, limits, where)
        try:
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader, aliases already refused
        except yaml.YAMLError as exc:
            raise ProcedureError(f"not valid YAML: {exc}", where) from None
        except (ValueError, OverflowError) as exc:  # e.g. an integer over Python's 4,300-digit limit
            raise ProcedureError(f"not valid YAML: {exc}", where) from None
    if not isinstance(data, dict):
        raise ProcedureError(f"expected a mapping with 'steps', got {type(data).__name__}", where)
    steps = data.get("steps")
    if isinstance(steps, (list, tuple)) and len(steps) > limits.max_steps:
        raise ProcedureError(f"more than {limits.max_steps} steps (LoadLimits.max_steps)", where)
    try:
        return Procedure.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ProcedureError(f"{_location(first['loc'])}: {first['msg']}{more}", where) from None
    except ProcedureError as exc:
        raise ProcedureError(str(exc), where) from None


def load_procedure(path: str | Path, limits: LoadLimits = LoadLimits()) -> Procedure:
    """Load a procedure file (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        ProcedureError: unreadable, too large, malformed or invalid; the message names the file.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > limits.max_bytes:
            raise ProcedureError(f"larger than {limits.max_bytes} bytes ({size})", str(p))
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProcedureError(f"cannot read: {exc.strerror}", str(p)) from None
    except UnicodeDecodeError:
        raise ProcedureError("not UTF-8 text", str(p)) from None
    return parse_procedure(text, str(p), "json" if p.suffix.lower() == ".json" else "yaml", limits)


def save_procedure(procedure: Procedure, path: str | Path) -> None:
    """Write ``procedure`` as YAML or JSON (by suffix), leaving out unset defaults."""
    p = Path(path)
    data = procedure.model_dump(mode="json", exclude_defaults=True)
    if p.suffix.lower() == ".json":
        p.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    else:
        p.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def procedure_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of procedure files, for editors and validators."""
    schema = Procedure.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "stepguard procedure"
    return schema
