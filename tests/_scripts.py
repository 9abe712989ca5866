"""Load a repository script (scripts/, benchmarks/) as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
from typing import Any

from tests._paths import ROOT


def load_script(relative: str) -> Any:
    """The module of ``ROOT / relative`` (``"scripts/fidelity_figure.py"``), freshly executed."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader, path
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
