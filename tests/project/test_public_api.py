"""stepguard's one public face: ``__all__``, the lazy loader and the type checkers' imports agree."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import stepguard

INIT = Path(stepguard.__file__)


def test_all_is_the_table() -> None:
    assert stepguard.__all__ == sorted(stepguard._HOMES)
    assert set(stepguard._HOMES) == {n for names in stepguard._PUBLIC.values() for n in names}
    assert len(stepguard.__all__) == len(set(stepguard.__all__))


def test_every_public_name_imports_from_its_home() -> None:
    for name in stepguard.__all__:
        value = getattr(stepguard, name)
        home = importlib.import_module(stepguard._HOMES[name])
        assert value is getattr(home, name), name
        assert name in getattr(home, "__all__", ()), f"{name} is not public in {home.__name__}"


def test_type_checking_imports_match_the_table() -> None:
    """The ``if TYPE_CHECKING:`` block says ``X as X`` for exactly the table's names and homes."""
    tree = ast.parse(INIT.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: a re-export says `X as X`"
            seen[alias.name] = node.module
    assert seen == stepguard._HOMES


def test_names_a_user_needs_are_exported() -> None:
    for name in ("load_model", "ToolError", "postgres_checkpointer", "Guard", "GuardConfig", "load_procedure"):
        assert name in stepguard.__all__, name


def test_subpackages_do_not_list_helpers() -> None:
    import stepguard.guard

    for helper in ("build_result", "format_value", "identity_digest", "value_text", "PRODUCTION_SETTINGS", "OPTION_NAMES",
                   "thread_needs_checkpointer"):
        assert helper not in stepguard.guard.__all__
        assert hasattr(stepguard.guard, helper)  # still importable where other modules use it


def test_import_stepguard_stays_light() -> None:
    code = "import sys, stepguard; print('langgraph' in sys.modules, 'stepguard.guard' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
