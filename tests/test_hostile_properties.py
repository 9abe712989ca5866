"""Property-based tests: the trace parser on arbitrary text, the evaluator on arbitrary expressions
drawn from a grammar of allowed and disallowed constructs."""

from __future__ import annotations

import time
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepguard.errors import EvaluationError
from stepguard.evaluator import compile_expression
from stepguard.trace import parse_trace

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_FRAGMENTS = st.sampled_from([
    "S1", "S_{7}", "S99", "total", " = ", " + ", " - ", "(", ")", "-", "−", "1,234", "3.50", "42", "9" * 500,
    "Final answer:", "Answer:", "\\boxed{", "}", "**", "`", "$", "\n", ", ", "; and ", "Step 3:", "> ", "1. ",
    "e5", "１２", "٤", "```", "print(", "def f", ":", "=", "==", "\t",
])
_TEXT = st.one_of(st.text(max_size=400), st.lists(_FRAGMENTS, max_size=60).map("".join))


@_SETTINGS
@given(_TEXT, st.booleans())
def test_parser_never_raises_and_values_are_exact_or_none(text: str, named: bool) -> None:
    trace = parse_trace(text, var_names=("S1", "total") if named else None, max_digits=400)
    for item in (*trace.records, *trace.answers):
        assert item.value is None or type(item.value) in (int, Fraction), item
        if item.value is not None:
            assert abs(item.value) < 10**401
            assert item.error is None
    assert [r.offset for r in trace.records] == sorted(r.offset for r in trace.records)
    assert [a.offset for a in trace.answers] == sorted(a.offset for a in trace.answers)


_ATOMS = st.sampled_from([
    "x", "y", "0", "1", "-3", "7", "2.5", "1e3", "10**400", "'a'", "True", "(1, 2)",
    # disallowed: each must be refused, never run
    "__import__", "x.real", "(1).__class__", "[1]", "{1: 2}", "{1}", "x[0]", "lambda: 1", "open",
    "f'{x}'", "[i for i in (1,)]", "(y := 1)", "...", "b'a'", "1j", "*x", "globals()",
])
_BINOPS = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@", " and ", " or ",
                           " < ", " == ", " in ", " not in ", " is "])


def _expr(depth: int) -> st.SearchStrategy[str]:
    """Expressions up to ``depth`` levels: atoms, binary operators, unary, calls, conditionals."""
    if depth == 0:
        return _ATOMS
    sub = _expr(depth - 1)
    return st.one_of(
        _ATOMS,
        st.tuples(sub, _BINOPS, sub).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(st.sampled_from(["-", "+", "not ", "~"]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(["abs", "min", "max", "round", "pow", "eval", "x"]), st.lists(sub, max_size=3))
          .map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
    )


@_SETTINGS
@given(_expr(4))
def test_evaluator_gives_a_result_or_evaluation_error_in_bounded_time(source: str) -> None:
    t0 = time.perf_counter()
    try:
        value = compile_expression(source).evaluate({"x": 5, "y": Fraction(1, 3)})
    except EvaluationError:
        pass
    else:
        assert type(value) in (int, Fraction, bool, str, tuple), (source, value)
        if type(value) is int:
            assert value.bit_length() <= 1024
    assert time.perf_counter() - t0 < 1.0, source


@_SETTINGS
@given(st.text(max_size=300))
def test_evaluator_on_arbitrary_text(source: str) -> None:
    try:
        compile_expression(source).evaluate({})
    except EvaluationError:
        pass
