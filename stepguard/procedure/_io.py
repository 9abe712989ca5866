"""Loading and saving procedure files (YAML or JSON), treating them as untrusted input.

Caps (all configurable through :class:`LoadLimits`): file size, YAML/JSON nesting depth, number of
steps, and no YAML aliases at all (so a billion-laughs file is refused before anything is built).
Duplicate mapping keys are refused (YAML and JSON would otherwise keep the last one silently).
Every error names the file and, for validation errors, the location inside it (``steps[4].expr``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import ValidationError

from stepguard.errors import ProcedureError
from stepguard.procedure._model import DEFAULT_KIND, InputSpec, Procedure, Step, procedure_error, step_models

__all__ = ["LoadLimits", "load_procedure", "parse_procedure", "procedure_errors", "procedure_json_schema", "save_procedure"]

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


def check_yaml_events(text: str, limits: LoadLimits, where: str, what: str = "procedure files") -> None:
    """One pass over the YAML events, before anything is built: refuse aliases, nesting deeper than
    ``max_depth``, duplicate mapping keys (naming the line) and a top-level ``steps`` list longer than
    ``max_steps``. ``what`` names the files in the alias message; inputs files read it too."""
    # one entry per open collection: [keys seen, expecting a key?, is the top-level steps list, item count]
    stack: list[list[Any]] = []
    next_is_steps = False
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent):
                raise ProcedureError(f"YAML aliases (*name) are not allowed in {what}", where)
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
        raise ProcedureError(f"not valid YAML: {yaml_problem(exc)}", where) from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line, with its lines and columns, and without PyYAML's ``in "<unicode string>"``
    (the file is named by the error's location): ``did not find expected ',' or '}' at line 5, column 1
    (while parsing a flow mapping at line 4, column 5)``."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        def at(mark: Any) -> str:
            return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""

        context = f" ({exc.context}{at(exc.context_mark)})" if exc.context else ""
        return f"{exc.problem}{at(exc.problem_mark)}{context}"
    return " ".join(str(exc).replace('in "<unicode string>", ', "").split())


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: a dict, refusing a key given twice in one object.

    Raises:
        ValueError: ``duplicate key 'x'`` (the key cut to 64 characters).
    """
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k[:64]!r}")
        out[k] = v
    return out


_JSON_STRING = re.compile(r'"(?:[^"\\\n]++|\\.)*+"')
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str, limits: LoadLimits, where: str) -> None:
    """Refuse JSON nested deeper than ``max_depth`` (brackets outside strings); linear-time regexes."""
    depth = 0
    for m in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            if depth > limits.max_depth:
                raise ProcedureError(f"nesting deeper than {limits.max_depth} levels", where)
        else:
            depth -= 1


_KINDS = {  # pydantic's error type -> what was expected, in the project's words
    "string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
    "bool_type": "true or false", "bool_parsing": "true or false", "tuple_type": "a list", "list_type": "a list",
    "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type": "a mapping",
}
_FIELDS = {"inputs": InputSpec}


def _untagged(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """``loc`` without the step kind's tag that pydantic puts after a step's index (``steps.2.tool.args``)."""
    if len(loc) > 2 and loc[0] == "steps" and isinstance(loc[1], int) and isinstance(loc[2], str):
        if loc[2] in step_models():
            return loc[:2] + loc[3:]
    return loc


def _step_model(loc: tuple[Any, ...], data: dict[str, Any]) -> type[Step] | None:
    """The model of the step at ``("steps", i)``: its kind's (by the file's ``kind``), or ``None``."""
    steps = data.get("steps")
    if not (isinstance(steps, list) and loc[1] < len(steps) and isinstance(steps[loc[1]], dict)):
        return None
    return step_models().get(str(steps[loc[1]].get("kind", DEFAULT_KIND)))


def _shown(value: Any) -> str:
    """A short, safe rendering of a value from the file (at most 40 characters)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _got(value: Any) -> str:
    kind = {dict: "a mapping", list: "a list", str: "text", bool: "a boolean", int: "a number", float: "a number"}
    return f"{kind.get(type(value), type(value).__name__)} {_shown(value)}" if not isinstance(value, (dict, list)) else kind[type(value)]


def _location(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """``("steps", 2, "type")`` -> ``steps[2].type (gross)``; ``("inputs", 0, ...)`` -> ``inputs.hours``
    when the file gives inputs as a mapping (the index is ours, the name is the author's)."""
    out = ""
    label = ""
    raw_inputs = data.get("inputs")
    for depth, part in enumerate(loc):
        if depth == 1 and loc[0] == "inputs" and isinstance(part, int) and isinstance(raw_inputs, dict):
            names = list(raw_inputs)
            out += f".{names[part]}" if part < len(names) else f"[{part}]"
        elif isinstance(part, int):
            out += f"[{part}]"
            steps = data.get("steps")
            if depth == 1 and loc[0] == "steps" and isinstance(steps, list) and part < len(steps):
                var = steps[part].get("var") if isinstance(steps[part], dict) else None
                label = f" ({var})" if isinstance(var, str) and len(var) <= 64 else ""
        else:
            out += f".{part}" if out else str(part)
    return (out or "procedure") + label


def _allowed(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """The fields allowed at ``loc`` (the location of an unknown field's parent)."""
    model: type[Any] | None = _FIELDS.get(loc[0]) if len(loc) == 2 and isinstance(loc[1], int) else Procedure if not loc else None
    if len(loc) == 2 and loc[0] == "steps" and isinstance(loc[1], int):
        model = _step_model(loc, data)
    if model is None:
        return ""
    names = [n for n in model.model_fields if not (model is InputSpec and isinstance(data.get("inputs"), dict) and n == "name")]
    return f" (allowed: {', '.join(names)})"


class _Error(NamedTuple):
    """One of pydantic's errors, read for :func:`procedure_errors`."""

    loc: tuple[Any, ...]
    """Where, step kinds' tags dropped (:func:`_untagged`)."""
    kind: str
    """pydantic's error type (``missing``, ``string_type``...)."""
    ctx: dict[str, Any]
    """pydantic's context of the error (empty when none)."""
    got: Any
    """The value given."""
    msg: str
    """pydantic's own message."""
    data: dict[str, Any]
    """What was validated."""


_Say = Callable[[_Error], tuple[tuple[Any, ...], str]]
"""The location and message of an error of one type, in the project's words."""


def _say_step_kind(e: _Error) -> tuple[tuple[Any, ...], str]:
    given = e.got.get("kind") if isinstance(e.got, dict) else None
    return e.loc + ("kind",), f"{_shown(given)} is {e.msg}"


def _say_extra(e: _Error) -> tuple[tuple[Any, ...], str]:
    return e.loc, f"unknown field {_shown(e.loc[-1])}{_allowed(e.loc[:-1], e.data)}"


def _say_missing(e: _Error) -> tuple[tuple[Any, ...], str]:
    return e.loc, f"required field {_shown(e.loc[-1])} is missing"


def _say_procedure_field(e: _Error) -> tuple[tuple[Any, ...], str]:
    return e.loc + (e.ctx["field"],), e.msg


def _say_value_error(e: _Error) -> tuple[tuple[Any, ...], str]:
    return e.loc, str(e.ctx.get("error", e.msg))


def _say_literal(e: _Error) -> tuple[tuple[Any, ...], str]:
    return e.loc, f"{_shown(e.got)} is not one of {e.ctx.get('expected')}"


def _say_bound(e: _Error) -> tuple[tuple[Any, ...], str]:
    bound = e.ctx.get("ge", e.ctx.get("le"))
    return e.loc, f"must be {'at least' if e.kind == 'greater_than_equal' else 'at most'} {bound}, got {_shown(e.got)}"


def _say_length(e: _Error) -> tuple[tuple[Any, ...], str]:
    unit = "characters" if e.kind.startswith("string") else "items"
    size = len(e.got) if hasattr(e.got, "__len__") else "?"
    if e.kind.endswith("long"):
        return e.loc, f"at most {e.ctx.get('max_length')} {unit} allowed, got {size}"
    return e.loc, f"at least {e.ctx.get('min_length')} {unit} needed, got {size}"


def _say_type(e: _Error) -> tuple[tuple[Any, ...], str]:
    """A value of the wrong type; a number where an expression's text is wanted: to quote it."""
    got, loc = e.got, e.loc
    message = f"expected {_KINDS[e.kind]}, got {_got(got)}"
    field = next((p for p in reversed(_untagged(loc)) if isinstance(p, str)), "")
    if e.kind == "string_type" and isinstance(got, (int, float)) and not isinstance(got, bool) and (
            field in ("expr", "check") or (len(loc) > 3 and loc[-2] == "args")):
        message += f" (an expression is text: write it in quotes, {field}: \"{got}\", so its digits are read as written)"
    return loc, message


def _say_pydantic(e: _Error) -> tuple[tuple[Any, ...], str]:
    """A type not in :data:`_SAY`: pydantic's message without its prefixes."""
    return e.loc, str(e.msg).removeprefix("Value error, ").removeprefix("Assertion failed, ")


_SAY: dict[str, _Say] = {
    **dict.fromkeys(_KINDS, _say_type),
    "step_kind": _say_step_kind, "extra_forbidden": _say_extra, "missing": _say_missing,
    "procedure_field": _say_procedure_field, "value_error": _say_value_error, "literal_error": _say_literal,
    "greater_than_equal": _say_bound, "less_than_equal": _say_bound,
    **dict.fromkeys(("too_long", "too_short", "string_too_long", "string_too_short"), _say_length),
}
"""How each of pydantic's error types is said (a type not here: :func:`_say_pydantic`)."""


def procedure_errors(exc: ValidationError, data: dict[str, Any]) -> list[tuple[str, str]]:
    """Every error of a procedure's validation as ``(location, message)`` in the project's words.

    Args:
        exc: pydantic's error from ``Procedure.model_validate(data)``.
        data: what was validated (the parsed file), to name steps by ``var`` and inputs by name.

    Returns:
        One ``("steps[2].type (gross)", "'decimal' needs 'scale' (the number of places)")`` pair per
        error, in pydantic's order; none is dropped and none carries pydantic's phrasing or links.
    """
    out: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        e = _Error(_untagged(tuple(err["loc"])), err["type"], err.get("ctx") or {}, err.get("input"), err["msg"], data)
        loc, message = _SAY.get(e.kind, _say_pydantic)(e)
        out.append((_location(loc, data), message))
    return out


def parse_procedure(text: str, where: str = "<text>", fmt: str = "yaml", limits: LoadLimits = LoadLimits()) -> Procedure:
    """Parse procedure text (YAML or JSON) into a validated :class:`Procedure`.

    Args:
        text: the file content.
        where: a name for errors (the file path).
        fmt: ``"yaml"`` or ``"json"`` (JSON is also valid YAML, but parses faster as JSON).
        limits: size and nesting caps.

    Raises:
        ProcedureError: too large, too deep, aliases, syntax errors, or validation errors: every one,
            each with its location (``payroll.yaml: 2 errors`` then ``steps[2].type (gross): ...`` lines).
    """
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ProcedureError(f"larger than {limits.max_bytes} bytes", where)
    if fmt == "json":
        if text.count("[") + text.count("{") > limits.max_depth:  # cheap pre-test; the scan is exact
            json_depth(text, limits, where)
        try:
            data = json.loads(text, object_pairs_hook=no_duplicate_keys)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, duplicate keys, ints over 4,300 digits
            raise ProcedureError(f"not valid JSON: {exc}", where) from None
    else:
        check_yaml_events(text, limits, where)
        try:
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader, aliases already refused
        except yaml.YAMLError as exc:
            raise ProcedureError(f"not valid YAML: {yaml_problem(exc)}", where) from None
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
        raise procedure_error(procedure_errors(exc, data), where) from None
    except ProcedureError as exc:
        problems = getattr(exc, "problems", None)
        if problems:
            problems = _suggest_names(problems, data)
        raise (procedure_error(problems, where) if problems else ProcedureError(str(exc), where)) from None


_UNKNOWN_NAME = re.compile(r"reads '([^']+)', which is not an input or an earlier variable\Z")


def _suggest_names(problems: list[tuple[str, str]], data: dict[str, Any]) -> list[tuple[str, str]]:
    """Each "reads 'subtotl', which is not an input..." problem with the name meant, when one is close
    (``(did you mean 'subtotal'?)``, :func:`~stepguard.procedure._values.did_you_mean`) among the
    file's inputs and step variables."""
    from stepguard.procedure._values import did_you_mean

    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        names = [str(n) for n in inputs]
    elif isinstance(inputs, list):
        names = [str(i.get("name")) if isinstance(i, dict) else str(i) for i in inputs]
    else:
        names = []
    steps = data.get("steps")
    names += [str(st["var"]) for st in steps if isinstance(st, dict) and "var" in st] if isinstance(steps, list) else []
    out = []
    for loc, message in problems:
        found = _UNKNOWN_NAME.search(message)
        hint = did_you_mean(found.group(1), [n for n in names if n != found.group(1)]) if found else ""
        out.append((loc, message + hint))
    return out


def load_procedure(path: str | Path, limits: LoadLimits = LoadLimits()) -> Procedure:
    """Load a procedure file (``.yaml``, ``.yml`` or ``.json``).

    Raises:
        ProcedureError: unreadable, too large, malformed or invalid; the message names the file.
    """
    text, where, fmt = read_file_text(path, limits)
    return parse_procedure(text, where, fmt, limits)


def read_file_text(path: str | Path, limits: LoadLimits = LoadLimits()) -> tuple[str, str, Literal["yaml", "json"]]:
    """A procedure or inputs file's text, with its name for errors and its format (``json`` by
    suffix, else ``yaml``), read within ``limits.max_bytes``.

    Raises:
        ProcedureError: unreadable, too large or not UTF-8; names the file.
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
    return text, str(p), "json" if p.suffix.lower() == ".json" else "yaml"


def save_procedure(procedure: Procedure, path: str | Path) -> None:
    """Write ``procedure`` as YAML or JSON (by suffix), leaving out unset defaults."""
    p = Path(path)
    data = procedure.model_dump(mode="json", exclude_defaults=True)
    for step, written in zip(procedure.steps, data["steps"], strict=True):
        if step.kind != DEFAULT_KIND:  # a kind's model may default its own kind: the file must still name it
            written["kind"] = step.kind
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
