"""Layering: the rooms import as shared/spec/architecture.md says, with no import cycle, and no module
imports another package's private module (or a private name of another package).

The contracts are import-linter's, in pyproject.toml (``[tool.importlinter]``), and scripts/check.sh
runs them in CI: the rooms as layers (a room imports only the rooms below it), no import cycle between
the packages of any package, private modules imported only from inside their package. The tests here
run the same contracts, check that every room is placed in the layers, and read every module of
``stepguard/`` and ``adapters/`` (installed as ``stepguard.adapters``) with :mod:`ast` for what
import-linter does not check: a private *name* of another package (``from stepguard.kinds._base
import _KINDS``). Every import counts, one inside a function or under ``TYPE_CHECKING`` as much as one
at the top.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._paths import ROOT

TREES = {"stepguard": "stepguard", "adapters": "stepguard.adapters"}
"""Folder in the repository -> the package it installs as (setup.py's package_dir)."""


def _modules() -> Iterator[tuple[str, str, str]]:
    """Each module as (repository path, its package, its source)."""
    for folder, package in TREES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            # a package's __init__ and its modules alike belong to the folder's package
            yield path.relative_to(ROOT).as_posix(), ".".join(parts[:-1]), path.read_text(encoding="utf-8")


def _imported(tree: ast.AST, own: str) -> Iterator[tuple[int, str]]:
    """Each dotted name a module imports (``a.b`` of ``import a.b``; ``a.b`` and ``a.b.c`` of
    ``from a.b import c``), relative imports resolved against the module's package ``own``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = own.split(".")[: len(own.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def _private_home(name: str) -> str | None:
    """The package whose private part ``name`` reaches (``stepguard.guard`` of
    ``stepguard.guard._options.X``), or None when every part is public."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _private_module(name: str) -> str:
    """``stepguard.guard._options`` of ``stepguard.guard._options.GuardOptions``."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: i + 1])
    return name


def _violations() -> list[tuple[str, int, str]]:
    out = []
    for path, own, source in _modules():
        for line, name in _imported(ast.parse(source, path), own):
            if not (name == "stepguard" or name.startswith("stepguard.")):
                continue
            home = _private_home(name)
            if home is None or own == home or own.startswith(home + "."):
                continue  # public, or the package's own (or an enclosing package's) private part
            out.append((path, line, _private_module(name)))
    return out


@pytest.mark.slow
def test_no_module_imports_another_packages_private_module() -> None:
    """No exceptions: what two packages share has a public home (the OpenAI wire format: stepguard.wire)."""
    found = sorted(set(_violations()))
    assert not found, "import the package's public face instead:\n" + "\n".join(f"{p}:{n}: {m}" for p, n, m in found)


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_every_room_is_placed_in_the_layers() -> None:
    """A new package or top-level module of stepguard/ (or adapters/) is given its layer, so the contract sees it."""
    layers = _contracts()["rooms"]["layers"]
    placed = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}
    rooms = {p.name for p in (ROOT / "stepguard").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    rooms |= {p.stem for p in (ROOT / "stepguard").glob("*.py") if p.stem != "__init__"} | {"adapters"}
    assert rooms == placed, f"not placed: {sorted(rooms - placed)}; placed but gone: {sorted(placed - rooms)}"


def test_the_contracts_cover_cycles_and_private_modules() -> None:
    contracts = _contracts()
    assert contracts["acyclic"]["type"] == "acyclic_siblings" and contracts["acyclic"]["ancestors"] == ["stepguard"]
    assert contracts["private"]["type"] == "private_modules"


@pytest.mark.slow
def test_the_import_contracts_hold(tmp_path: Path) -> None:
    """The contracts as CI runs them (scripts/check.sh): in a tree laid out as the wheel installs, since
    the editable install maps adapters/ to stepguard.adapters with a hook import-linter cannot follow."""
    pytest.importorskip("importlinter", reason="import-linter is not installed (in the dev extra)")
    tree = tmp_path / "tree"
    (tree / "stepguard").mkdir(parents=True)
    for entry in (ROOT / "stepguard").iterdir():
        if entry.name != "__pycache__":
            (tree / "stepguard" / entry.name).symlink_to(entry)
    (tree / "stepguard" / "adapters").symlink_to(ROOT / "adapters")
    run = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    out = subprocess.run([sys.executable, "-c", run, str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tree,
                         env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    modules = sum(1 for folder in TREES for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
    assert f"Analyzed {modules} files" in out.stdout, "the contracts did not see every module (adapters/ too)"


def test_the_walk_sees_a_private_import() -> None:
    """The checker itself: a relative and an absolute import of another package's private module."""
    tree = ast.parse("from stepguard.guard._options import GuardOptions\nfrom .._result import value_text\n")
    names = {name for _, name in _imported(tree, "stepguard.adapters")}
    assert "stepguard.guard._options" in names
    assert "stepguard._result.value_text" in names
    assert _private_home("stepguard.guard._options.GuardOptions") == "stepguard.guard"
    assert _private_home("stepguard.guard.GuardOptions") is None


def test_a_procedure_reads_every_built_in_kind_without_the_kinds_room() -> None:
    """The procedure room holds the built-in step models (it imports no kind): a file with a step of each
    kind loads, and a foreign field is named, with stepguard.kinds never imported."""
    child = """
import sys
from stepguard.procedure import parse_procedure
from stepguard.errors import ProcedureError
text = '''
inputs: {receipt: string, a: number}
steps:
  - {var: b, expr: a + 1}
  - {var: c, kind: tool, tool: lookup, args: {q: b}}
  - {var: d, kind: extract, source: receipt, label: Total}
  - {var: e, kind: text, format: list}
'''
kinds = [type(s).__name__ for s in parse_procedure(text, "p.yaml").steps]
try:
    parse_procedure(text.replace("expr: a + 1", "expr: a + 1, source: receipt"), "p.yaml")
except ProcedureError as exc:
    print("refused:", exc)
print(kinds, "stepguard.kinds" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "['ComputeStep', 'ToolStep', 'ExtractStep', 'TextStep'] False" in out.stdout
    assert "source applies only to kind extract or text" in out.stdout
