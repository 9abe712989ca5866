"""Imports from a pip extra, with an error that says how to install it.

The guard and ``stepguard run``/``check``/``init`` need no extra; the benchmark's statistics
(exact McNemar, Wilson intervals) and its report plots need ``bench`` (scipy, matplotlib), the
guarding proxy ``serve`` (Starlette, uvicorn), the shared checkpointer ``postgres``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from stepguard.errors import MissingExtraError

__all__ = ["import_extra"]


def import_extra(module: str, extra: str = "bench", what: str = "the benchmark's statistics and plots") -> ModuleType:
    """Import ``module`` (``"scipy.stats"``, ``"matplotlib.figure"``) from a pip extra.

    Args:
        module: the dotted module name.
        extra: the stepguard extra that installs it.
        what: what needs it, for the message.

    Returns:
        The imported module.

    Raises:
        MissingExtraError: the module (or a package it needs) is not installed; the message names
            it and ``pip install 'stepguard[<extra>]'``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        verb = "needs" if _one(what) else "need"
        raise MissingExtraError(
            f"{what} {verb} {module} ({missing} is not installed): pip install 'stepguard[{extra}]'", extra, missing
        ) from exc


def _one(what: str) -> bool:
    """Is ``what`` (``the guarding proxy (stepguard serve)``, ``prompt files with a regex answer
    format``) one thing, so its verb takes an ``s``? A plural noun before any bracket says no."""
    head = what.split("(")[0].strip().split(" with ")[0]
    return not head.endswith("s")
