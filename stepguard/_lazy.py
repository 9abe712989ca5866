"""Names a package loads on first use (PEP 562): one ``__getattr__`` and ``__dir__`` for every lazy package face."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, tuple[str, str]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (PEP 562) for the names in ``homes``.

    Call it in the package's ``__init__``: ``__getattr__, __dir__ = lazy_names(__name__, _HOMES)``.

    Args:
        package: the package's name (its ``__name__``), already in ``sys.modules`` while it runs.
        homes: each public name -> ``(module, attribute)`` it is read from; the module is imported
            on the name's first use and the value kept in the package, so a second use costs nothing.

    Returns:
        ``(__getattr__, __dir__)``: the first raises ``AttributeError`` naming the package for a name
        not in ``homes``; the second lists the package's names and every lazy one.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        try:
            module, attr = homes[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
