"""Values keep their declared type and scale in GuardResult: Decimal at the step's places, int,
bool, str; as text with the places in JSON, read back as the same values (issue 14, item 12)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, GuardResult, Procedure, load_procedure
from stepguard.adapters import load_model
from stepguard.guard import StepValue
from stepguard.guard._result import StepOutcome, typed_value, value_text
from tests._paths import ROOT
from tests._stub_server import StubServer

INVOICE = ROOT / "examples" / "invoice.yaml"
INVOICE_INPUTS = {"subtotal": "100.10", "rate": "0.1"}

KINDS = Procedure.model_validate({"name": "kinds", "inputs": {"hours": "integer", "rate": "decimal"}, "steps": [
    {"var": "pay", "expr": "hours * rate", "type": "decimal", "scale": 2},
    {"var": "whole", "expr": "hours * 2", "type": "integer"},
    {"var": "over", "expr": "hours > 40", "type": "boolean"},
    {"var": "band", "expr": "'high' if pay > 1000 else 'low'", "type": "one_of", "choices": ["high", "low"]},
    {"var": "label", "type": "string", "instruction": "Write ok.", "check": "value == 'ok'"},
    {"var": "half", "expr": "rate / 2"},
]})
KINDS_INPUTS = {"hours": 37, "rate": "33"}
KINDS_REPLY = "pay = 1221\nwhole = 74\nover = false\nband = high\nlabel = ok\nhalf = 16.5\n"
KINDS_WANT = {"pay": Decimal("1221.00"), "whole": 74, "over": False, "band": "high", "label": "ok", "half": Decimal("16.5")}


def _types(values: dict[str, object]) -> dict[str, type]:
    return {k: type(v) for k, v in values.items()}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_two_place_money_is_a_decimal_with_two_places(mode: str) -> None:
    guard = Guard(load_model("sim:perfect"))
    proc = load_procedure(INVOICE)
    run = guard.run(proc, INVOICE_INPUTS) if mode == "sync" else asyncio.run(guard.arun(proc, INVOICE_INPUTS))
    assert run.status == "verified"
    assert run.answer == Decimal("104.60") and str(run.answer) == "104.60"  # not 104.6, not '104.60', not a Fraction
    assert run.values == {"discount": Decimal("5.01"), "net": Decimal("95.09"), "tax": Decimal("9.51"), "total": Decimal("104.60")}
    assert set(_types(run.values).values()) == {Decimal}
    assert run.texts["total"] == run.answer_text == "104.60"
    dumped = run.model_dump(mode="json")
    assert dumped["answer"] == "104.60" and [s["value"] for s in dumped["steps"]] == ["5.01", "95.09", "9.51", "104.60"]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=5.0) as server:
        server.script = lambda _last: KINDS_REPLY
        yield server


def test_each_declared_type_comes_back_as_its_python_type(stub: StubServer) -> None:
    """Through the real openai client against the stub server: one reply holds every step."""
    model = load_model(f"{stub.base_url}#scripted")
    try:
        result = Guard(model, GuardConfig(chunk_size=10)).run(KINDS, KINDS_INPUTS)
    finally:
        model.close()  # type: ignore[attr-defined]
    assert result.status == "verified", result.deviations
    assert result.values == KINDS_WANT
    assert _types(result.values) == _types(KINDS_WANT)  # False is a bool, 74 an int (== alone would not tell)
    assert result.texts == {"pay": "1221.00", "whole": "74", "over": "false", "band": "high", "label": "ok", "half": "16.5"}
    again = GuardResult.model_validate_json(result.model_dump_json())
    assert again == result and _types(again.values) == _types(KINDS_WANT) and again.answer == Decimal("16.5")


def test_flagged_values_are_typed_too_and_never_rounded() -> None:
    result = Guard(load_model("sim:paper"), GuardConfig(policy="flag")).run(load_procedure(INVOICE), INVOICE_INPUTS)
    for step in result.steps:
        assert step.value is None or isinstance(step.value, Decimal), step
        if step.provenance == "model_verified":
            assert -step.value.as_tuple().exponent == 2, step  # type: ignore[union-attr, operator]


@pytest.mark.parametrize(("text", "type_", "scale", "want"), [
    ("1221", "decimal", 2, Decimal("1221.00")),
    ("5.005", "decimal", 2, Decimal("5.005")),  # a flagged value with more places: kept exactly, not rounded
    ("-0.5", "decimal", 0, Decimal("-0.5")),
    ("12", "integer", None, 12),
    ("12.5", "integer", None, Decimal("12.5")),  # a flagged non-integer: exact, not truncated
    ("1/3", "number", None, Fraction(1, 3)),  # no finite decimal form: exact
    ("0.0000001", "number", None, Decimal("0.0000001")),
    ("true", "boolean", None, True),
    ("False", "boolean", None, False),
    ("maybe", "boolean", None, "maybe"),
    ("12abc", "decimal", 2, "12abc"),  # not a number: the model's text, never a prefix of it
    ("007", "string", None, "007"),
    (None, "decimal", 2, None),
])
def test_typed_value(text: str | None, type_: str, scale: int | None, want: object) -> None:
    got = typed_value(text, type_, scale)
    assert got == want and type(got) is type(want)
    if isinstance(want, Decimal):
        assert got.as_tuple() == want.as_tuple()  # type: ignore[union-attr]  # the places too


@pytest.mark.slow
def test_value_text_keeps_places_and_avoids_exponents() -> None:
    assert StepValue.__args__ == (Decimal, int, bool, str, Fraction, list[Any], dict[str, Any])  # type: ignore[attr-defined]  # public, documented
    assert value_text(Decimal("1221.00")) == "1221.00"
    assert value_text(Decimal("0.0000001")) == "0.0000001"  # str() would give 1E-7
    assert value_text(True) == "true" and value_text(Fraction(1, 3)) == "1/3" and value_text(None) is None
    outcome = StepOutcome(var="x", value="1E-7", type="number", provenance="flagged")
    assert outcome.model_dump(mode="json")["value"] == "0.0000001"
    assert StepOutcome.model_validate_json(outcome.model_dump_json()) == outcome
