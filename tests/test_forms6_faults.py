"""Faults found in prompt forms 6 (a digit sheet compares two whole numbers by the first place their
digits differ): what the forms say they are, where a run store or thread is refused by them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from stepguard.guard import _prompts
from stepguard.guard._prompts import PROMPT_FORMS
from stepguard.guard.rungs._digits import Sheet, larger_at_first_difference


def _forms_history() -> str:
    """The docstring written under ``PROMPT_FORMS`` in its module (a module constant keeps none at run time)."""
    body = ast.parse(Path(_prompts.__file__).read_text(encoding="utf-8")).body
    for node, after in zip(body, body[1:], strict=False):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROMPT_FORMS" for t in node.targets):
            assert isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            return str(after.value.value)
    raise AssertionError("PROMPT_FORMS has no docstring")


def test_the_forms_history_says_what_each_version_changed_the_current_one_too() -> None:
    """A store made under forms 5 is refused under 6 naming the prompts; the history is where a reader
    learns what changed between them. Forms 6 was bumped with no line there."""
    history = " ".join(_forms_history().split())
    for version in range(2, PROMPT_FORMS + 1):
        assert f" {version}: " in history, f"PROMPT_FORMS' docstring does not say what version {version} changed"


_ROOT = Path(__file__).resolve().parents[1]
_EXAMPLE = re.compile(r"`{1,2}(\d+)`{1,2} and `{1,2}(\d+)`{1,2}(?::| as)\s+`{1,2}(?:d\d+ = )?(max\(\d+, \d+\))`{1,2}")


def _comparison_examples() -> list[tuple[str, int, int, str]]:
    """Every ``A`` and ``B``: ``max(x, y)`` the rungs' docstrings and the docs give as a comparison by position."""
    files = [*sorted((_ROOT / "stepguard" / "guard" / "rungs").glob("*.py")), *sorted((_ROOT / "docs").glob("*.md"))]
    return [(f.name, int(m[1]), int(m[2]), m[3]) for f in files for m in _EXAMPLE.finditer(" ".join(f.read_text(encoding="utf-8").split()))]


def test_each_comparison_the_docs_show_is_the_one_the_sheet_asks() -> None:
    """``long_divide``'s module text gave ``1200`` and ``1095`` as ``max(1, 0)``: their first digits are
    the same, and the sheet asks ``max(2, 0)``, the second place."""
    examples = _comparison_examples()
    assert {name for name, *_ in examples} >= {"longdiv.py", "columns.py", "_digits.py", "concepts.md", "policies.md"}
    for name, a, b, shown in examples:
        sheet = Sheet()
        larger_at_first_difference(sheet, a, b)
        assert [s["expr"] for s in sheet.steps] == [shown], f"{name}: {a} and {b} shown as {shown}"
