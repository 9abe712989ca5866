"""Tools given to the guard: Python callables (or LangChain tools) by name, called with a timeout.

A tool is called only after every argument has been checked (:mod:`stepguard.verify`), and its
result is converted to the step's declared type; a tool that raises, runs past its timeout or
returns a value the step cannot hold is a :class:`stepguard.errors.ToolError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import importlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from stepguard.errors import ProcedureError, StepguardError, ToolError, ToolTimeout
from stepguard.evaluator import Number, format_number
from stepguard.tools._decimals import as_decimal

__all__ = ["Tool", "ToolSet", "as_toolset", "call_kwargs", "check_tools", "code_fingerprint", "kwargs_from_json",
           "kwargs_json", "load_tools", "missing_tools"]

_JSON_TYPES = {int: "integer", float: "number", Decimal: "number", str: "string", bool: "boolean"}


def _python_value(value: Number | str | bool, places: int | None = None) -> Any:
    """An argument as a tool receives it: ``int``, ``str``, ``bool``, or an exact ``Decimal`` (at
    ``places`` places where given: ``Decimal("25.00")``); an ``int`` with places is a ``Decimal`` too.

    Raises:
        ValueError: a number with no exact decimal form (``1/3``), or not exact at ``places``.
    """
    if isinstance(value, (str, bool, Decimal)) or (isinstance(value, int) and places is None):
        return value  # a Decimal is already as the tool receives it (a recorded call's, re-checked)
    exact = as_decimal(value, places)
    if exact is None:
        exact = as_decimal(value) if places is not None else None
        if exact is None:
            raise ValueError(f"{format_number(value)} has no exact decimal form; round it in a step with a scale")
    return exact


def call_kwargs(args: Mapping[str, Number | str | bool], places: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The keyword arguments a tool is called with (:func:`_python_value` of each).

    Raises:
        ValueError: an argument with no exact decimal form (the message names it).
    """
    out = {}
    for k, v in args.items():
        try:
            out[k] = _python_value(v, (places or {}).get(k))
        except ValueError as exc:
            raise ValueError(f"argument {k} = {exc}") from None
    return out


def kwargs_json(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments as JSON, exactly: a ``Decimal`` as ``{"decimal": "25.00"}`` (its scale kept)."""
    return {k: {"decimal": format(v, "f")} if isinstance(v, Decimal) else v for k, v in kwargs.items()}


def kwargs_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`kwargs_json`."""
    return {k: Decimal(v["decimal"]) if isinstance(v, Mapping) else v for k, v in data.items()}


@dataclass(frozen=True)
class Tool:
    """One tool: a name, the callable behind it, and how long it may run.

    Attributes:
        name: the name procedures use (``tool: catalog_lookup``).
        fn: the callable; called with keyword arguments (numbers as ``int`` or ``Decimal``), sync
            or ``async def``.
        description: what it does (sent to the model for native tool calling; default: the docstring's first line).
        timeout_s: seconds a call may run before it is a :class:`~stepguard.errors.ToolTimeout`
            (``None``: no limit). A sync tool past its time is left running in its thread, its result discarded.
        version: a version or fingerprint of the tool's behaviour; part of a run's identity, so a
            checkpoint made with one version is not resumed with another.
        parameters: the JSON Schema of its arguments for native tool calling (default: from ``fn``'s signature).
        data_version: a callable giving the version of the data the tool reads (a table's
            ``updated_at``, an ETag); recorded with each call, and a thread whose recorded results
            came from another version is not resumed (unless ``read_only`` and the results agree).
        read_only: the tool only reads (calling it again changes nothing); on resume its recorded
            results are re-checked by calling it again with the same arguments, and a call cut
            off by a crash is made again.
        idempotent: a second call with the same arguments has no effect beyond the first, so a
            call cut off by a crash (started, no result recorded) is made again on resume.
        idempotency_key: the name of a keyword parameter through which the guard passes the
            call's key (the step's identity in the run: the same on every resume of the thread);
            a tool that deduplicates by it is called again on resume as an idempotent one is.
    See docs/agent-workflows.md, "Nothing done twice".
    """

    name: str
    fn: Callable[..., Any] = field(repr=False)
    description: str = ""
    timeout_s: float | None = 30.0
    version: str | None = None
    parameters: dict[str, Any] | None = None
    origin: Any = field(default=None, repr=False, compare=False)
    """What ``fn`` wraps, when it is an adapter (a LangChain tool's ``invoke``): fingerprinted instead of it."""
    data_version: Callable[[], Any] | None = field(default=None, repr=False, compare=False, kw_only=True)
    read_only: bool = field(default=False, kw_only=True)
    idempotent: bool = field(default=False, kw_only=True)
    idempotency_key: str | None = field(default=None, kw_only=True)

    @property
    def repeatable(self) -> bool:
        """Whether a call cut off by a crash may be made again on resume (read-only, idempotent or keyed)."""
        return self.read_only or self.idempotent or self.idempotency_key is not None

    def schema(self, only: Iterable[str] | None = None) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool, with the arguments ``only`` (default all)."""
        params = self.parameters or _signature_schema(self.fn)
        if only is not None:
            keep = list(only)
            props = {k: params.get("properties", {}).get(k, {}) for k in keep}
            params = {"type": "object", "properties": props, "required": keep, "additionalProperties": False}
        doc = self.description or (inspect.getdoc(self.fn) or "").split("\n", 1)[0]
        return {"type": "function", "function": {"name": self.name, "description": doc, "parameters": params}}

    def _kwargs(self, args: Mapping[str, Any], step: str | None, places: Mapping[str, int] | None, key: str | None) -> dict[str, Any]:
        try:
            kwargs = call_kwargs(args, places)
        except ValueError as exc:
            raise ToolError(f"tool {self.name} was not called: {exc}", self.name, step) from None
        if self.idempotency_key is not None and key is not None:
            kwargs[self.idempotency_key] = key
        return kwargs

    def call(self, args: Mapping[str, Number | str | bool], step: str | None = None, *,
             places: Mapping[str, int] | None = None, key: str | None = None) -> Any:
        """Call the tool with checked ``args`` and return its result (a coroutine tool is run to completion).

        Args:
            args: argument name -> exact value (:class:`stepguard.tools.ToolCall` ``.args``), or
                keyword arguments already as the tool receives them (``Decimal`` s).
            step: the step's variable, for errors.
            places: argument name -> decimal places the number reaches the tool with.
            key: the call's idempotency key, passed as :attr:`idempotency_key` where the tool has one.

        Raises:
            ToolError: it raised (the message names the exception's type and text), or an argument
                has no exact decimal form (the tool is then not called).
            ToolTimeout: it ran past ``timeout_s``.
        """
        kwargs = self._kwargs(args, step, places, key)
        return self._call(kwargs, step)

    def _call(self, kwargs: dict[str, Any], step: str | None) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            if not _running_loop():
                return asyncio.run(self._acall(kwargs, step))
            return _in_thread(lambda: asyncio.run(self._acall(kwargs, step)))
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"tool-{self.name}")
        try:
            future = pool.submit(self.fn, **kwargs)
            try:
                return future.result(timeout=self.timeout_s)
            except concurrent.futures.TimeoutError:
                raise ToolTimeout(f"tool {self.name} ran past its {self.timeout_s} s timeout", self.name, step) from None
            except StepguardError:
                raise
            except Exception as exc:
                raise ToolError(f"tool {self.name} raised {type(exc).__name__}: {str(exc)[:300]}", self.name, step) from exc
        finally:
            pool.shutdown(wait=False)

    async def acall(self, args: Mapping[str, Number | str | bool], step: str | None = None, *,
                    places: Mapping[str, int] | None = None, key: str | None = None) -> Any:
        """Async twin of :meth:`call` (a sync tool runs in a worker thread). Same arguments and errors."""
        return await self._acall(self._kwargs(args, step, places, key), step)

    async def _acall(self, kwargs: dict[str, Any], step: str | None) -> Any:
        try:
            if inspect.iscoroutinefunction(self.fn):
                return await asyncio.wait_for(self.fn(**kwargs), self.timeout_s)
            return await asyncio.wait_for(asyncio.to_thread(self.fn, **kwargs), self.timeout_s)
        except TimeoutError:
            raise ToolTimeout(f"tool {self.name} ran past its {self.timeout_s} s timeout", self.name, step) from None
        except StepguardError:
            raise
        except Exception as exc:
            raise ToolError(f"tool {self.name} raised {type(exc).__name__}: {str(exc)[:300]}", self.name, step) from exc


def _running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_thread(fn: Callable[[], Any]) -> Any:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result()


def _signature_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """A JSON Schema of ``fn``'s keyword parameters from their annotations (untyped ones: any)."""
    try:
        sig = inspect.signature(fn)
        hints = {k: v for k, v in getattr(fn, "__annotations__", {}).items()}
    except (TypeError, ValueError):
        return {"type": "object", "properties": {}}
    props: dict[str, Any] = {}
    required = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        t = hints.get(name)
        if isinstance(t, str):
            t = {"int": int, "float": float, "str": str, "bool": bool, "Decimal": Decimal}.get(t)
        props[name] = {"type": _JSON_TYPES[t]} if t in _JSON_TYPES else {}
        if p.default is p.empty:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


class ToolSet(Mapping[str, Tool]):
    """The tools of one guard, by name (read-only)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Any:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def identity(self) -> dict[str, str]:
        """``{name: version}`` for a run's identity: the version given, else a fingerprint of the code
        behind the tool (:func:`code_fingerprint`), so a checkpoint thread made with one function is
        not resumed with another of the same name."""
        return {n: t.version or code_fingerprint(t.origin if t.origin is not None else t.fn) for n, t in sorted(self._tools.items())}

    def fingerprint(self) -> str:
        """The sha256 (16 hex) of :meth:`identity`."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]


ToolLike = Tool | Callable[..., Any] | Any


def _one(name: str | None, obj: Any) -> Tool:
    if isinstance(obj, Tool):
        return obj if name is None or name == obj.name else replace(obj, name=name)
    invoke = getattr(obj, "invoke", None)
    if callable(invoke) and isinstance(getattr(obj, "name", None), str) and not inspect.isfunction(obj):
        # a LangChain tool (BaseTool): called with one dict of arguments
        schema = None
        args_schema = getattr(obj, "args_schema", None)
        if args_schema is not None and hasattr(args_schema, "model_json_schema"):
            schema = args_schema.model_json_schema()
        tool_name = name or obj.name
        return Tool(tool_name, lambda **kw: invoke(kw), str(getattr(obj, "description", "") or ""), parameters=schema,
                    origin=getattr(obj, "func", None) or getattr(obj, "coroutine", None) or obj)
    if not callable(obj):
        raise TypeError(f"a tool must be a callable, a stepguard Tool or a LangChain tool, got {type(obj).__name__}")
    return Tool(name or str(getattr(obj, "__name__", "tool")), obj)


def code_fingerprint(obj: Any) -> str:
    """``module.qualname#sha256`` (12 hex) of a callable's source, for a run's identity when its tool
    has no ``version``: the same function gives the same text, another function or an edited one
    another. Where the source cannot be read (a builtin, a C extension), ``module.qualname`` alone;
    a callable object is fingerprinted by its class, a ``functools.partial`` by its function and arguments."""
    if isinstance(obj, functools.partial):
        bound = hashlib.sha256(repr((obj.args, sorted(obj.keywords.items()))).encode()).hexdigest()[:12]
        return f"{code_fingerprint(obj.func)}+{bound}"
    target = obj if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj) or isinstance(obj, type) else type(obj)
    target = getattr(target, "__func__", target)
    name = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        return name
    return f"{name}#{hashlib.sha256(source.encode()).hexdigest()[:12]}"


def as_toolset(tools: ToolSet | Mapping[str, Any] | Iterable[Any] | None) -> ToolSet:
    """The tools given to a guard as a :class:`ToolSet`.

    Args:
        tools: ``None``; a mapping of name to callable (or :class:`Tool`, or LangChain tool); or a
            sequence of callables (named by ``__name__``), :class:`Tool` s or LangChain tools (named by ``.name``).

    Raises:
        TypeError: an entry is none of those. ValueError: two tools share a name.
    """
    if tools is None:
        return ToolSet()
    if isinstance(tools, ToolSet):
        return tools
    if isinstance(tools, Mapping):
        return ToolSet(_one(k, v) for k, v in tools.items())
    return ToolSet(_one(None, t) for t in tools)


def load_tools(spec: str) -> ToolSet:
    """Import the tools named by ``module:attr`` (``examples.agent_tools:TOOLS``, or a file,
    ``path/to/tools.py:TOOLS``): what ``--tools`` does. A module is looked up from the current
    directory first, as ``python -m`` would.

    ``attr`` may be a mapping, a sequence, a single callable or a :class:`ToolSet`. This imports
    (runs) that module: only ever on the user's explicit request, never because a procedure file says so.

    Raises:
        ProcedureError: not of the form ``module:attr``; the module cannot be imported (whatever its
            import raised) or lacks the attribute; the attribute is not tools (a string, a number,
            two tools of one name). The message names the spec.
    """
    module, _, attr = spec.rpartition(":")
    if not module or not attr:
        raise ProcedureError(f"--tools takes module:attr (e.g. examples.agent_tools:TOOLS), got {spec!r}")
    try:
        obj = _import(module)
    except Exception as exc:  # noqa: BLE001 - the user's module ran: any error it raised is a bad --tools
        raise ProcedureError(f"cannot import tools module {module!r}: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProcedureError(f"tools module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, (str, bytes)) or isinstance(obj, type):
        raise ProcedureError(f"--tools {spec}: {attr} is a {type(obj).__name__}, not a tool, a list or a mapping of tools")
    try:
        if callable(obj) and not isinstance(obj, (Tool, ToolSet)) and not hasattr(obj, "invoke"):
            return as_toolset([obj])
        return as_toolset(obj if not isinstance(obj, Tool) else [obj])
    except (TypeError, ValueError) as exc:
        raise ProcedureError(f"--tools {spec}: {exc}") from None


def _import(module: str) -> Any:
    """A module by dotted name (the current directory searched first) or by ``.py`` path."""
    import os
    import sys
    from pathlib import Path

    if module.endswith(".py"):
        from importlib import util as importlib_util

        path = Path(module)
        spec = importlib_util.spec_from_file_location(f"stepguard_tools_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no module at {module}")
        mod = importlib_util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module)
    finally:
        if added:
            sys.path.remove(cwd)


def missing_tools(procedure: Any, tools: ToolSet) -> list[str]:
    """The tools ``procedure``'s tool steps call that ``tools`` lacks, sorted (``[]``: none missing)."""
    return sorted({name for s in procedure.steps for name in s.tools_needed() if name not in tools})


def check_tools(procedures: Mapping[str, Any], tools: ToolSet) -> None:
    """Refuse, before any request, procedures served without the tools their tool steps call.

    Args:
        procedures: ``{name: Procedure}`` (a drop-in client's, or a proxy's).
        tools: the tools given.

    Raises:
        ValueError: names each procedure and the tools it lacks, and how to give them.
    """
    lacking = {name: missing_tools(p, tools) for name, p in procedures.items()}
    lacking = {name: m for name, m in lacking.items() if m}
    if lacking:
        which = "; ".join(f"procedure {name!r} calls {', '.join(m)}" for name, m in sorted(lacking.items()))
        given = ", ".join(tools) or "none"
        raise ValueError(f"tools missing: {which} (given: {given}); pass them as tools=[...] (or --tools MODULE:ATTR)")
