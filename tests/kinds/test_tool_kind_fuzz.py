"""Fuzz test of the tool kind (issue 33, "a fuzz test per kind"): random argument expressions,
input values written at random scales, replies right or wrong, as text or native calls, and random
tool results never give an executed call whose arguments differ from the independently computed
ones (scale included), nor a verified value that differs from the tool's result in the step's type."""

from __future__ import annotations

import decimal
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
import pytest

from stepguard import BudgetExhausted, Guard, GuardConfig, parse_procedure
from stepguard.model import ChatResponse
from stepguard.tools import Tool
from tests._fakes import ReplyModel

pytestmark = pytest.mark.slow

TEMPLATES = {  # the argument's expression -> an independent computation of its value
    "a": lambda a, b: a, "b": lambda a, b: b, "a + b": lambda a, b: a + b, "a * b": lambda a, b: a * b,
    "a - 2": lambda a, b: a - 2, "b * 3": lambda a, b: b * 3, "(a + b) * 2": lambda a, b: (a + b) * 2,
}


class Box:
    """The fuzzed tool: records its keyword arguments, returns ``result``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.result: Any = None

    def fn(self, **kw: Any) -> Any:
        self.calls.append(kw)
        return self.result


BOX = Box()
GUARD = Guard(ReplyModel([]), GuardConfig(max_reprompts_per_step=0), tools=[Tool("t", BOX.fn, timeout_s=None)])


def _text(value: Fraction, extra_zeros: int) -> str:
    """``value`` written exactly, with ``extra_zeros`` trailing zeros after its shortest form."""
    d = Decimal(value.numerator) / Decimal(value.denominator) if value.denominator != 1 else Decimal(value.numerator)
    s = format(d, "f")
    if extra_zeros:
        s += ("" if "." in s else ".") + "0" * extra_zeros
    return s


def _plain_number(result: Any) -> Any:
    """The oracle's reading of a result: a number as it is; a text only when it is digits with an
    optional sign and one decimal point (``"7"``, ``"-7.5"``: what an API returning money as text
    writes), else ``None``."""
    import re

    if not isinstance(result, str):
        return result
    return Decimal(result) if re.fullmatch(r"[-+]?\d+(\.\d+)?", result) else None


results = st.one_of(
    st.integers(-10**6, 10**6),
    st.builds(lambda n, p: Decimal(n).scaleb(-p), st.integers(-10**8, 10**8), st.integers(0, 6)),
    st.text("ABC-7", min_size=1, max_size=6),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    template=st.sampled_from(sorted(TEMPLATES)), a_n=st.integers(-10**6, 10**6), a_places=st.integers(0, 4),
    b=st.integers(-1000, 1000), free_type=st.sampled_from(["decimal", "integer", "string"]),
    free_n=st.integers(-10**5, 10**5), free_places=st.integers(0, 3), step_type=st.sampled_from(["decimal", "integer", "string"]),
    scale=st.integers(0, 3), wrong=st.integers(-1, 1), zeros=st.integers(0, 2), native=st.booleans(), result=results,
)
def test_tool_calls_and_results_are_exact(template: str, a_n: int, a_places: int, b: int, free_type: str, free_n: int,
                                          free_places: int, step_type: str, scale: int, wrong: int, zeros: int,
                                          native: bool, result: Any) -> None:
    decl = f"type: decimal, scale: {scale}" if step_type == "decimal" else f"type: {step_type}"
    proc = parse_procedure(f"""
name: fuzz
inputs: {{a: decimal, b: integer}}
steps:
  - {{var: r, kind: tool, tool: t, args: {{x: "{template}", y: {{type: {free_type}}}}}, {decl}}}
""")
    a_text = _text(Fraction(a_n, 10**a_places), 0) if a_places == 0 else f"{'-' if a_n < 0 else ''}{abs(a_n) // 10**a_places}.{abs(a_n) % 10**a_places:0{a_places}d}"
    a = Fraction(Decimal(a_text))
    want = TEMPLATES[template](a, b)
    x_written = _text(Fraction(want) + wrong, zeros)
    if free_type == "string":
        y_written, y_want = '"note"', "note"
    elif free_type == "integer":
        y_written, y_want = str(free_n), free_n
    else:
        y_want = Decimal(free_n).scaleb(-free_places)
        y_written = format(y_want, "f")
    if native:
        reply: Any = ChatResponse("", tool_calls=({"name": "t", "arguments": f'{{"x": {x_written}, "y": {y_written}}}'},))
    else:
        reply = f"CALL t(x={x_written}, y={y_written})"
    BOX.calls, BOX.result = [], result
    GUARD.model = ReplyModel([reply])
    try:
        out = GUARD.run(proc, {"a": a_text, "b": b})
    except BudgetExhausted as exc:
        out = exc.result
    event(f"{out.status}, {'executed' if BOX.calls else 'not executed'}")
    if wrong:
        assert BOX.calls == []  # a wrong argument never reaches the tool
    for kw in BOX.calls:  # at most one
        assert kw["x"] == want, (kw, want)
        if template == "a":  # a bare name of a decimal input: at the places the caller wrote
            assert isinstance(kw["x"], Decimal) and kw["x"].as_tuple().exponent == -a_places, (kw["x"], a_text)
        if free_type == "decimal":
            assert isinstance(kw["y"], Decimal) and str(kw["y"]) == str(y_want), (kw["y"], y_want)
        else:
            assert kw["y"] == y_want and type(kw["y"]) is type(y_want)
    assert len(BOX.calls) <= 1
    if out.status == "verified":
        assert len(BOX.calls) == 1
        got = out.values["r"]
        if step_type == "string":
            assert isinstance(result, str) and got == result
        elif step_type == "integer":  # a text result counts only where it is a whole number written plainly
            number = _plain_number(result)
            assert number is not None and Fraction(number) == got and Fraction(number).denominator == 1
        else:
            number = _plain_number(result)
            assert number is not None, (result, got)
            with decimal.localcontext() as ctx:
                ctx.prec = 100
                rounded = Decimal(number).quantize(Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_EVEN)
            assert Fraction(rounded) == Fraction(got), (result, got)
