""""Did you mean" for a misspelt variable in a procedure file's expression, and the reference table saying
``scale`` is required for ``decimal`` (issue 32 item 5): the table showed it optional while a decimal
step without it is refused."""

from __future__ import annotations

import pytest

from stepguard.errors import ProcedureError
from stepguard.procedure import parse_procedure
from tests._paths import ROOT


def test_a_misspelt_variable_says_did_you_mean() -> None:
    text = ("name: t\ninputs: {subtotal: {type: decimal}}\nsteps:\n"
            "  - {var: discount, expr: subtotl * 2, type: decimal, scale: 2}\n"
            "  - {var: net, expr: subtotal - discont, check: value > zzz}\n")
    with pytest.raises(ProcedureError) as err:
        parse_procedure(text, "p.yaml")
    lines = str(err.value).splitlines()
    assert lines[0].endswith("reads 'subtotl', which is not an input or an earlier variable (did you mean 'subtotal'?)")
    assert lines[1].endswith("reads 'discont', which is not an input or an earlier variable (did you mean 'discount'?)")
    assert lines[2].endswith("reads 'zzz', which is not an input or an earlier variable")  # nothing close: no guess


def test_the_reference_says_scale_is_required_for_decimal() -> None:
    with pytest.raises(ProcedureError, match="'decimal' needs 'scale'"):
        parse_procedure("name: t\ninputs: {a: decimal}\nsteps:\n  - {var: x, expr: a * 2, type: decimal}\n")
    rows = [line for line in (ROOT / "docs" / "procedures.md").read_text().splitlines() if line.startswith("| `scale` |")]
    assert rows and all("| for `decimal` |" in row and "Required for type decimal" in row for row in rows)
