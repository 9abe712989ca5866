"""The production suite (benchmarks/production): every expected value checked against an
independent computation with Python's ``decimal`` module, written from each procedure's business
rule (docs/production.md), and every case verified under the guard on ``sim:perfect``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

import pytest

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.bench.suites import load_suite, suite_files
from stepguard.procedure import Procedure, load_procedure
from tests._paths import ROOT

SUITE = ROOT / "benchmarks" / "production"
CENT, TENTH, UNIT, BP = Decimal("0.01"), Decimal("0.1"), Decimal("1"), Decimal("0.0001")
D = Decimal


def up(x: Decimal, q: Decimal = CENT) -> Decimal:
    return x.quantize(q, rounding=ROUND_HALF_UP)


def even(x: Decimal, q: Decimal = CENT) -> Decimal:
    return x.quantize(q, rounding=ROUND_HALF_EVEN)


# One function per procedure, from the rule in its description: money to cents, each line
# rounded as the business rounds it, later lines computed from the rounded earlier ones.

def invoice(quantity: D, unit_price: D, vat_rate: D) -> dict[str, Any]:
    subtotal = quantity * unit_price
    tier = D("0.10") if subtotal >= 1000 else D("0.05") if subtotal >= 500 else D(0)
    discount = up(subtotal * tier)
    net = subtotal - discount
    vat = up(net * vat_rate)
    return {"subtotal": subtotal, "discount_rate": tier, "discount": discount, "net": net, "vat": vat, "total": net + vat}


def payroll(hours: D, hourly_rate: D, withholding_rate: D) -> dict[str, Any]:
    regular = hours if hours < 40 else D(40)
    overtime = hours - 40 if hours > 40 else D(0)
    regular_pay = even(regular * hourly_rate)
    overtime_pay = even(overtime * hourly_rate * 3 / 2)  # time and a half
    gross = regular_pay + overtime_pay
    withheld = even(gross * withholding_rate)
    return {"regular_hours": regular, "overtime_hours": overtime, "regular_pay": regular_pay, "overtime_pay": overtime_pay,
            "gross": gross, "withholding": withheld, "net_pay": gross - withheld}


def loan_amortisation(principal: D, annual_rate: D, payment: D) -> dict[str, Any]:
    out: dict[str, Any] = {}
    balance = principal
    for month in (1, 2, 3):
        interest = up(balance * annual_rate / 12)
        balance = balance - (payment - interest)
        out |= {f"interest_{month}": interest, f"repaid_{month}": payment - interest, f"balance_{month}": balance}
    return out


def progressive_tax(income: D, allowance: D) -> dict[str, Any]:
    taxable = max(income - allowance, D(0))
    bands = [(D(0), D(10000), D("0.10")), (D(10000), D(40000), D("0.20")), (D(40000), None, D("0.40"))]
    out: dict[str, Any] = {"taxable": taxable}
    for k, (low, high, rate) in enumerate(bands, 1):
        in_band = max(min(taxable, high) - low, D(0)) if high is not None else max(taxable - low, D(0))
        out[f"band_{k}"] = up(in_band * rate)
    tax = out["band_1"] + out["band_2"] + out["band_3"]
    rate = even(tax / income, BP) if income > 0 else D(0)
    return out | {"tax": tax, "effective_rate": rate, "net_income": income - tax}


def dose(weight_kg: D, mg_per_kg: D, max_single_mg: D, doses_per_day: D, max_daily_mg: D, mg_per_ml: D) -> dict[str, Any]:
    by_weight = up(weight_kg * mg_per_kg, TENTH)
    single = min(by_weight, max_single_mg)
    daily = single * doses_per_day
    allowed = min(daily, max_daily_mg)
    final = up(allowed / doses_per_day, TENTH)
    return {"weight_dose": by_weight, "single_dose": single, "daily_dose": daily, "allowed_daily": allowed,
            "final_dose": final, "volume_ml": even(final / mg_per_ml)}


def metric_conversion(feet: D, inches: D, pounds: D) -> dict[str, Any]:
    total_inches = feet * 12 + inches
    cm = even(total_inches * D("2.54"), UNIT)  # 1 in = 2.54 cm exactly
    kg = up(pounds * D("0.45359237"), TENTH)  # 1 lb = 0.45359237 kg exactly
    metres = cm / 100
    return {"total_inches": total_inches, "height_cm": cm, "weight_kg": kg, "height_m": metres, "bmi": up(kg / metres**2, TENTH)}


def currency_conversion(amount: D, rate: D, fee_percent: D, min_fee: D) -> dict[str, Any]:
    converted = even(amount * rate)
    percent_fee = up(converted * fee_percent / 100)
    fee = max(percent_fee, min_fee)
    return {"converted": converted, "percent_fee": percent_fee, "fee": fee, "received": converted - fee}


def shipping(weight_kg: D, length_cm: D, width_cm: D, height_cm: D, zone: D) -> dict[str, Any]:
    volumetric = up(length_cm * width_cm * height_cm / 5000)
    billable = max(weight_kg, volumetric)
    if billable <= 1:
        base = D("5.00")
    elif billable <= 5:
        base = D("8.50")
    else:
        base = up(D("8.50") + (billable - 5) * D("1.20"))
    surcharge = up(base * {1: D(0), 2: D("0.15"), 3: D("0.30")}[int(zone)])
    fuel = up((base + surcharge) * D("0.075"))
    return {"volumetric_kg": volumetric, "billable_kg": billable, "base_price": base, "surcharge": surcharge,
            "fuel_levy": fuel, "price": base + surcharge + fuel}


def commission(sales: D, quota: D) -> dict[str, Any]:
    attainment = even(sales / quota, BP)
    top = attainment >= D("1.25")
    rate = D("0.07") if top else D("0.05") if attainment >= 1 else D("0.03")
    paid = up(sales * rate)
    bonus = D(500) if top else D(0)
    return {"attainment": attainment, "rate": rate, "commission": paid, "bonus": bonus, "payout": min(paid + bonus, D(10000))}


def prorata_refund(term_fee: D, term_days: D, days_used: D, cancellation_fee: D) -> dict[str, Any]:
    daily = even(term_fee / term_days, BP)
    unused = max(term_days - days_used, D(0))
    value = up(unused * daily)
    return {"daily_rate": daily, "unused_days": unused, "unused_value": value, "refund": max(value - cancellation_fee, D(0))}


def compound_interest(principal: D, annual_rate: D) -> dict[str, Any]:
    out: dict[str, Any] = {}
    balance = principal
    for quarter in (1, 2, 3, 4):
        interest = even(balance * annual_rate / 4)
        balance += interest
        out |= {f"interest_{quarter}": interest, f"balance_{quarter}": balance}
    return out | {"total_interest": balance - principal}


def weighted_grade(homework: D, midterm: D, final_exam: D, participation: D, curve: D) -> dict[str, Any]:
    parts = {"homework_part": homework * D("0.2"), "midterm_part": midterm * D("0.3"),
             "final_part": final_exam * D("0.4"), "participation_part": participation * D("0.1")}
    weighted = up(sum(parts.values(), D(0)), TENTH)
    curved = min(weighted + curve, D(100))
    point = next((p for floor, p in ((90, 4), (80, 3), (70, 2), (60, 1)) if curved >= floor), 0)
    return parts | {"weighted": weighted, "curved": curved, "grade_point": point}


def electricity_bill(kwh: D, days: D, standing_charge: D) -> dict[str, Any]:
    tier_1 = min(kwh, D(100))
    tier_2 = min(max(kwh - 100, D(0)), D(200))
    tier_3 = max(kwh - 300, D(0))
    energy = even(tier_1 * D("0.12") + tier_2 * D("0.15") + tier_3 * D("0.20"))
    standing = even(days * standing_charge)
    tax = up((energy + standing) * D("0.05"))
    return {"tier_1_kwh": tier_1, "tier_2_kwh": tier_2, "tier_3_kwh": tier_3, "energy_cost": energy,
            "standing_cost": standing, "tax": tax, "bill": energy + standing + tax}


INDEPENDENT: dict[str, Callable[..., dict[str, Any]]] = {f.__name__: f for f in (
    invoice, payroll, loan_amortisation, progressive_tax, dose, metric_conversion, currency_conversion,
    shipping, commission, prorata_refund, compound_interest, weighted_grade, electricity_bill)}

CASES = load_suite(SUITE)
NAMES = sorted({c.id.split("/")[0] for c in CASES})


def independent(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The independent values of procedure ``name`` for an input set (inputs as written in the file)."""
    return INDEPENDENT[name](**{k: D(str(v)) for k, v in inputs.items()})


def input_sets(name: str) -> list[tuple[str, dict[str, Any]]]:
    import yaml

    data = yaml.safe_load((SUITE / f"{name}.inputs.yaml").read_text(encoding="utf-8"))
    return [(str(s["id"]), s["inputs"]) for s in data]


def flipped(procedure: Procedure, modes: tuple[str, ...] = ("ROUND_HALF_UP", "ROUND_HALF_EVEN")) -> Procedure:
    """The procedure with each rounded step of a mode in ``modes`` switched to the other mode."""
    other = {"ROUND_HALF_UP": "ROUND_HALF_EVEN", "ROUND_HALF_EVEN": "ROUND_HALF_UP"}
    data = procedure.model_dump(exclude_unset=True)
    for step in data["steps"]:
        mode = step.get("rounding", "ROUND_HALF_EVEN")
        if step.get("scale") is not None and mode in modes:
            step["rounding"] = other[mode]
    return Procedure.model_validate(data)


def test_suite_shape() -> None:
    pairs = suite_files(SUITE)
    assert len(pairs) >= 12
    assert sorted(p.stem for p, _ in pairs) == sorted(INDEPENDENT), "one independent function per procedure file"
    roundings = set()
    for proc_file, _ in pairs:
        proc = load_procedure(proc_file)
        assert 4 <= len(proc.steps) <= 10, proc_file.name
        assert proc.description and len(proc.description) > 40, proc_file.name
        assert proc.answer_var == proc.steps[-1].var, f"{proc_file.name}: raw mode asks for the final answer after the last step"
        assert len(input_sets(proc.name)) >= 3, proc_file.name
        roundings |= {s.rounding for s in proc.steps if s.scale is not None}
    assert roundings == {"ROUND_HALF_UP", "ROUND_HALF_EVEN"}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_expected_values_equal_the_independent_ones(name: str) -> None:
    proc = load_procedure(SUITE / f"{name}.yaml")
    for set_id, inputs in input_sets(name):
        want = independent(name, inputs)
        got = proc.expected_values(inputs)
        assert set(got) == set(want) == set(proc.variables), (name, set_id)
        for var in proc.variables:
            assert got[var] == want[var], f"{name}/{set_id}: {var} = {got[var]} by the evaluator, {want[var]} by the rule"


@pytest.mark.parametrize("name", NAMES)
def test_input_sets_sit_on_a_rounding_edge(name: str) -> None:
    """Some input set lands on a half (x.xx5): switching the procedure's rounding modes changes a value."""
    proc = load_procedure(SUITE / f"{name}.yaml")
    other = flipped(proc)
    assert any(proc.expected_values(i) != other.expected_values(i) for _, i in input_sets(name)), name


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ROUND_HALF_UP", "ROUND_HALF_EVEN"])
def test_each_rounding_mode_decides_some_value(mode: str) -> None:
    """Half-up and half-even each matter: switching only the steps of one mode changes a value somewhere."""
    changed = []
    for name in NAMES:
        proc = load_procedure(SUITE / f"{name}.yaml")
        other = flipped(proc, (mode,))
        changed += [f"{name}/{sid}" for sid, i in input_sets(name) if proc.expected_values(i) != other.expected_values(i)]
    assert len(changed) >= 3, changed


def test_a_half_cent_discount_rounds_half_up() -> None:
    """1302.45 x 10% = 130.245: half up gives 130.25 where half to even would give 130.24."""
    proc = load_procedure(SUITE / "invoice.yaml")
    inputs = dict(input_sets("invoice"))["ten-percent-tier-half-cent"]
    assert proc.expected_values(inputs)["discount"] == D("130.25")  # 1302.45 x 10% = 130.245, half up
    assert even(D("1302.45") * D("0.10")) == D("130.24")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_guard_verifies_every_case_on_sim_perfect(name: str) -> None:
    proc = load_procedure(SUITE / f"{name}.yaml")
    guard = Guard(load_model("sim:perfect", procedure=proc))
    for set_id, inputs in input_sets(name):
        want = independent(name, inputs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`durability` has no effect")
            result = guard.run(proc, inputs)
        assert result.status == "verified", (name, set_id, result.status)
        for step in proc.steps:
            value = result.values[step.var]
            assert value == want[step.var], f"{name}/{set_id}: {step.var} = {value}, the rule gives {want[step.var]}"
            if step.type == "decimal":
                assert isinstance(value, Decimal) and value.as_tuple().exponent == -step.scale, (name, step.var, value)
            elif step.type == "integer":
                assert type(value) is int, (name, step.var, value)
        assert result.answer == want[proc.answer_var]


def test_suite_cases_carry_typed_expected_values() -> None:
    case = next(c for c in CASES if c.id == "invoice/ten-percent-tier-half-cent")
    assert case.n_steps == 6 and case.lookback is None
    assert case.expected["discount"] == D("130.25") and str(case.expected["discount_rate"]) == "0.10"
    assert str(case.answer) == str(invoice(D(15), D("86.83"), D("0.20"))["total"].quantize(CENT))
    assert len(CASES) == sum(len(input_sets(n)) for n in NAMES)
