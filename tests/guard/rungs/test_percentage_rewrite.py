"""Issue 44: a percentage ``tax / income * 100`` (2 places, half to even) stopped every rung.

``chain`` refused it (``19060 / 71400`` is endless before the ``* 100``), and ``split`` and
``digits`` with it. The chain now asks such a step in an exact rewrite with the quotient last
(``19060 * 100``, then ``t1 / 71400`` to 2 places), which the division rungs under it derive.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure, load_procedure
from stepguard.adapters import load_model
from stepguard.errors import EvaluationError
from stepguard.evaluator import compile_expression, parse_number
from stepguard.guard import get_rung
from stepguard.guard.rungs.arith.chain import quotient_last
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings
from tests._fakes import ScriptedModel
from tests._paths import ROOT

TAX = ROOT / "benchmarks" / "production" / "dev" / "income_tax_rate.yaml"
INPUTS = {"income": "71400", "allowance": "9100"}  # tax 19060: 26.6946...%, 26.69 half to even


def _rewritten(expr: str) -> str | None:
    tree = quotient_last(ast.parse(expr, mode="eval").body)
    return None if tree is None else ast.unparse(tree)


def test_a_quotient_in_a_product_moves_last() -> None:
    assert _rewritten("tax / income * 100") == "tax * 100 / income"  # a percentage as one division
    assert _rewritten("100 * (tax / income)") == "100 * tax / income"
    assert _rewritten("a / b / c") == "a / (b * c)"
    assert _rewritten("a / (b / c)") == "a * c / b"
    assert _rewritten("a / b * (c / d)") == "a * c / (b * d)"
    assert _rewritten("(x - y) / x * 100") == "(x - y) * 100 / x"
    assert _rewritten("a / b * 100 if b > 0 else 0") == "a * 100 / b if b > 0 else 0"  # each branch; the test as written
    # issue 44, part 2: a sum over the one divisor, and min/max with a quotient as the conditional it is
    assert _rewritten("a / b + c") == "(a + c * b) / b"
    assert _rewritten("max(a / b * 100, 0)") == "a * 100 / b if a * 100 * b >= 0 * (b * b) else 0"


def test_what_has_no_quotient_to_move_is_left_alone() -> None:
    for expr in ("a * b / c", "a / b", "a + b * c", "a // b * c", "min(a, b * c)"):
        assert _rewritten(expr) is None, expr


_NAMES = ("a", "b", "c", "d")


def _tree(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(_NAMES), st.sampled_from(["3", "7", "100", "0.4", "-2.5"]))
    if depth == 0:
        return leaf
    sub = _tree(depth - 1)
    return st.one_of(leaf, st.tuples(sub, st.sampled_from(["*", "/", "+", "-"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(expr=_tree(3), values=st.tuples(*[st.integers(-90, 90).filter(bool) for _ in _NAMES]))
def test_the_rewrite_keeps_the_value_exactly(expr: str, values: tuple[int, ...]) -> None:
    env = {n: Fraction(v, 7) for n, v in zip(_NAMES, values, strict=True)}
    try:
        want = compile_expression(expr).evaluate(env)
    except EvaluationError:  # a division by zero: the rewrite divides by the same divisors
        return
    rewritten = _rewritten(expr)
    if rewritten is not None:
        assert compile_expression(rewritten).evaluate(env) == want, (expr, rewritten)


def test_the_chain_asks_the_issues_percentage_product_first() -> None:
    proc = load_procedure(TAX)
    index = [s.var for s in proc.steps].index("effective_rate_pct")
    env = {"tax": parse_number("19060"), "income": parse_number("71400")}
    for rung in ("chain", "split", "digits"):
        sub = get_rung(rung).derive(proc, index, env)
        assert sub is not None, rung
        assert [(s.var, s.expr, s.scale, s.rounding) for s in sub.steps] == [
            ("t1", "19060 * 100", None, "ROUND_HALF_EVEN"), ("effective_rate_pct", "t1 / 71400", 2, "ROUND_HALF_EVEN")]
        assert sub.expected_values({})["effective_rate_pct"] == Fraction(2669, 100)
    # its division goes on to the rungs for a quotient
    division = Procedure.model_validate({"name": "d", "steps": [{"var": "q", "expr": "1906000 / 71400", "type": "decimal", "scale": 2}]})
    assert get_rung("single").derive(division, 0, {}) is not None
    assert get_rung("digits").derive(division, 0, {}) is not None


def test_a_step_the_chain_could_already_ask_is_asked_as_written() -> None:
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"],
                                     "steps": [{"var": "s", "expr": "a / 4 * 100", "type": "decimal", "scale": 1}]})
    sub = get_rung("chain").derive(proc, 0, {"a": parse_number("3.3"), "b": 1})
    assert [s.expr for s in sub.steps] == ["3.3 / 4", "t1 * 100"]  # 0.825 is finite: no rewrite


class _WrongWhole:
    """``sim:perfect`` for the procedure, but the percentage asked whole (``... / 71400 * 100``) is
    always written wrong, and each step in ``wrong_once`` (a text its line shows) wrong the first time."""

    spec = "sim:perfect+wrong"
    provider = "test"
    model_name = "sim-wrong"
    simulated = True

    def __init__(self, procedure: Procedure, wrong_once: tuple[str, ...] = ()) -> None:
        self.inner = load_model("sim:perfect", procedure=procedure)
        self.wrong_once = list(wrong_once)
        self.prompts: list[str] = []

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        reply = self.inner.complete(messages, settings)
        prompt = str(messages[-1]["content"])
        self.prompts.append(prompt)
        ask = prompt.split("Steps:", 1)[-1].split("\n\n", 1)[0]
        hit = next((w for w in self.wrong_once if w in ask), None)
        if hit is not None:
            self.wrong_once.remove(hit)
        if hit is not None or ("effective_rate_pct" in ask and "* 100" in ask):
            return replace(reply, text=re.sub(r"= (-?[\d.]+)\s*$", lambda m: f"= {Decimal(m[1]) + Decimal('0.07')}", reply.text.strip()))
        return reply

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


def _run(model: object, config: GuardConfig | None = None) -> object:
    proc = load_procedure(TAX)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`durability` has no effect")
        # one step a call (the wrapper writes a step's last number wrong), with the production ladder
        return Guard(model, config or GuardConfig.for_procedure(proc, follow=False)).run(proc, INPUTS)  # type: ignore[arg-type]


def test_the_production_ladder_verifies_the_percentage_the_model_writes_wrong_whole() -> None:
    """Before the rewrite: split and digits did not apply, resample repeated the wrong value, flagged."""
    model = _WrongWhole(load_procedure(TAX))
    result = _run(model)
    assert result.status == "verified" and result.values["effective_rate_pct"] == Decimal("26.69")  # type: ignore[attr-defined]
    events = [(d.step, d.rung) for d in result.deviations if d.action == "reprompt"]  # type: ignore[attr-defined]
    assert events == [("effective_rate_pct", "split")]
    assert any("effective_rate_pct = 1906000 / 71400" in p for p in model.prompts)  # the quotient last, the product's value written in
    assert all(s.provenance == "model_verified" for s in result.steps)  # type: ignore[attr-defined]  # nothing repaired


def test_a_wrong_division_sub_step_goes_on_to_the_quotient_rungs() -> None:
    model = _WrongWhole(load_procedure(TAX), wrong_once=("1906000 / 71400",))
    result = _run(model)
    assert result.status == "verified" and result.values["effective_rate_pct"] == Decimal("26.69")  # type: ignore[attr-defined]
    assert any("1906000 / 714" in p and "71400" not in p.split("Steps:", 1)[-1] for p in model.prompts)  # divide's small divisor


@pytest.mark.filterwarnings("ignore:procedure 'income_tax_rate' has decimal")  # digits alone, on purpose
def test_the_digits_rung_alone_verifies_it() -> None:
    proc = load_procedure(TAX)
    result = _run(_WrongWhole(proc), GuardConfig.for_procedure(proc, ladder=("digits",)))
    assert result.status == "verified" and result.values["effective_rate_pct"] == Decimal("26.69")  # type: ignore[attr-defined]


def test_the_scripted_model_wrong_once_is_verified_through_chain() -> None:
    proc = load_procedure(TAX)
    model = ScriptedModel(faults={"effective_rate_pct": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("chain",), chunk_size=1, inline_known=True)).run(proc, INPUTS)
    assert result.status == "verified" and result.values["effective_rate_pct"] == Decimal("26.69")
    assert [(d.step, d.rung) for d in result.deviations if d.action == "reprompt"] == [("effective_rate_pct", "chain")]
