"""Faults found in prompt forms 6 (a digit sheet compares two whole numbers by the first place their
digits differ): the comparisons the rungs' text and the docs show are the ones a sheet asks, and the
forms' history names the version a run store or thread is refused by; with the neighbours that held
(the digit chosen decides as the numbers do; equal magnitudes and remainders equal to a multiple)."""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from stepguard import Guard, GuardConfig
from stepguard.guard import LadderWarning, _prompts
from stepguard.guard._prompts import PROMPT_FORMS
from stepguard.guard.rungs.arith._digits import Sheet, larger_at_first_difference
from tests._fakes import ScriptedModel
from tests._paths import ROOT

from .test_digit_rungs import _step


def test_the_forms_history_says_what_each_version_changed_the_current_one_too() -> None:
    """A store made under forms 5 is refused under 6 naming the prompts; the history is where a reader
    learns what changed between them. Forms 6 was bumped with no line there. The history is the forms
    file's now (``stepguard/guard/prompts/forms/<version>.json``), which refuses to load without it."""
    history = _prompts.FORMS.history
    for version in range(2, PROMPT_FORMS + 1):
        assert history.get(version, "").strip(), f"the forms file does not say what version {version} changed"


_ROOT = ROOT
_EXAMPLE = re.compile(r"`{1,2}(\d+)`{1,2} and `{1,2}(\d+)`{1,2}(?::| as)\s+`{1,2}(?:d\d+ = )?(max\(\d+, \d+\))`{1,2}")


def _comparison_examples() -> list[tuple[str, int, int, str]]:
    """Every ``A`` and ``B``: ``max(x, y)`` the rungs' docstrings and the docs give as a comparison by position."""
    files = [*sorted((_ROOT / "stepguard" / "guard" / "rungs" / "arith").glob("*.py")), *sorted((_ROOT / "docs").glob("*.md"))]
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


@settings(max_examples=300)
@given(st.integers(0, 10**12), st.integers(0, 10**12))
def test_the_digit_chosen_names_the_larger_number_as_the_numbers_do(a: int, b: int) -> None:
    """The neighbours of the examples: for any two whole numbers of as many digits, the first number's
    digit is the larger of the two asked exactly where the first number is the larger; nothing is
    asked of two numbers of different lengths or of one number twice."""
    sheet = Sheet()
    var = larger_at_first_difference(sheet, a, b)
    if len(str(a)) != len(str(b)) or a == b:
        assert var is None and not sheet.steps
        return
    found = re.fullmatch(r"max\((\d), (\d)\)", str(sheet.steps[0]["expr"]))
    assert var == "d1" and found is not None and found[1] != found[2]
    assert (found[1] > found[2]) == (a > b)


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("op,a,b,scale", [
    ("+", "5", "-5", None), ("+", "0.50", "-0.5", None), ("+", "-0.5", "0.50", None), ("-", "-0.5", "-0.50", None),
    ("/", "99", "99", None), ("/", "109989", "99", None), ("/", "144", "12", 2), ("/", "-9900", "0.99", 1),
])
def test_equal_magnitudes_and_a_remainder_equal_to_a_multiple_read_back_in_a_guarded_run(op: str, a: str, b: str, scale: int | None,
                                                                                         streamed: bool) -> None:
    """Held, pinned: a mixed-sign sum of equal magnitudes (nothing compared, the sign of 0 not read) and
    quotients whose remainders are a multiple (read, not asked), asked through the rung after the
    step was wrong, chunked or streamed."""
    proc = _step(op, scale)
    rung = {"+": "columns", "-": "columns", "/": "long_divide"}[op]
    env = {"a": Fraction(a), "b": Fraction(b)}
    config = GuardConfig.for_procedure(proc, ladder=(rung,), max_reprompts_per_step=1, on_exhausted="flag", streamed=streamed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LadderWarning)
        result = Guard(ScriptedModel(faults={"r": ["wrong"]}), config).run(proc, env)
    assert result.status == "verified" and [e.action for e in result.deviations][-1:] == ["read"]
    assert Fraction(result.texts["r"] or "") == Fraction(proc.expected_values(env)["r"])
