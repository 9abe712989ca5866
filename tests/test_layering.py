"""Layering: no module imports another package's private module (or a private name of another package).

A package's private modules (``stepguard/guard/_options.py``) are its own: the package itself and the
packages inside it may import them; every other package reads the package's public face
(``from stepguard.guard import GuardOptions``). The test reads every module of ``stepguard/`` and
``adapters/`` (installed as ``stepguard.adapters``) with :mod:`ast`, so an import inside a function
or under ``TYPE_CHECKING`` counts as much as one at the top.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = {"stepguard": "stepguard", "adapters": "stepguard.adapters"}
"""Folder in the repository -> the package it installs as (setup.py's package_dir)."""

ALLOWED: dict[str, set[str]] = {
    # shared wire-format code of the drop-in client and the proxy, read by both (a neutral public home for it is next)
    "stepguard/serve/_app.py": {"stepguard.adapters._completion"},
    "stepguard/serve/_options.py": {"stepguard.adapters._client_errors", "stepguard.adapters._completion",
                                    "stepguard.adapters._guarded_call", "stepguard.adapters._request_fields"},
    "stepguard/serve/_responses.py": {"stepguard.adapters._completion"},
    # the proxy's strict JSON reading, pure Python, used by the client without the serve extra (starlette)
    "adapters/_guarded_call.py": {"stepguard.serve._body", "stepguard.serve._errors"},
}
"""File (repository path) -> the private modules of other packages it may still import."""


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


def test_no_module_imports_another_packages_private_module() -> None:
    found = sorted({(path, line, module) for path, line, module in _violations() if module not in ALLOWED.get(path, set())})
    assert not found, "import the package's public face instead:\n" + "\n".join(f"{p}:{n}: {m}" for p, n, m in found)


def test_allow_list_has_no_stale_entries() -> None:
    """Each allowed import still happens: an entry the file no longer needs is removed, not kept."""
    used = {(path, module) for path, _, module in _violations()}
    stale = sorted((path, module) for path, modules in ALLOWED.items() for module in modules if (path, module) not in used)
    assert not stale, f"remove from ALLOWED: {stale}"


def test_the_walk_sees_a_private_import() -> None:
    """The checker itself: a relative and an absolute import of another package's private module."""
    tree = ast.parse("from stepguard.guard._options import GuardOptions\nfrom .._result import value_text\n")
    names = {name for _, name in _imported(tree, "stepguard.adapters")}
    assert "stepguard.guard._options" in names
    assert "stepguard._result.value_text" in names
    assert _private_home("stepguard.guard._options.GuardOptions") == "stepguard.guard"
    assert _private_home("stepguard.guard.GuardOptions") is None
