"""docs/procedures.md writes down what the evaluator's operators give (issue 45: ``round`` halves to
even, ``//`` and ``%`` floor, ``round(2.675, 2)`` is 2.68 exactly); every row of its table is
evaluated here, so the page and the evaluator cannot drift apart."""

from __future__ import annotations

import re
from fractions import Fraction

from stepguard.evaluator import compile_expression
from tests._paths import ROOT

DOC = ROOT / "docs" / "procedures.md"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \|", re.M)


def test_every_row_of_the_expression_table_is_what_the_evaluator_gives() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("Expressions (`expr`"):text.index("Step kinds")]
    rows = ROW.findall(section)
    assert len(rows) >= 8 and ("round(2.675, 2)", "2.68") in rows
    for source, shown in rows:
        assert compile_expression(source).evaluate({}) == Fraction(shown), source
