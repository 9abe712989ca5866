"""Expected values of the held-out test set, computed independently of stepguard.

Each function below is written from its procedure's business rule (the ``description`` of
``NAME.yaml`` beside this file), with Python's ``decimal`` module only: no stepguard import, no
reading of the files' expressions. Money is quantized as the rule says, and every later line
uses the rounded earlier ones, as a business line does. ``tests/benchmarks/test_heldout_split.py`` requires
stepguard's evaluator to give the same value for every step of every input set.

Run it to print every case's values: ``python benchmarks/production/test/_expected.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path
from typing import Any

D = Decimal
PLACES = {0: D("1"), 1: D("0.1"), 2: D("0.01"), 3: D("0.001"), 4: D("0.0001"), 6: D("0.000001")}


def up(x: Decimal, places: int = 2) -> Decimal:
    """``x`` rounded half up to ``places``."""
    return x.quantize(PLACES[places], rounding=ROUND_HALF_UP)


def even(x: Decimal, places: int = 2) -> Decimal:
    """``x`` rounded half to even to ``places``."""
    return x.quantize(PLACES[places], rounding=ROUND_HALF_EVEN)


def floor(x: Decimal) -> int:
    return int(x.to_integral_value(rounding=ROUND_FLOOR))


def pct(part: Decimal, whole: Decimal) -> Decimal:
    """``part`` as a percentage of ``whole`` (unrounded)."""
    return part * 100 / whole


def job_cost_estimate(quantity: D, unit_price: D, hours: D, hourly_rate: D, markup_pct: D) -> dict[str, Any]:
    materials = even(quantity * unit_price)
    labour = up(hours * hourly_rate)
    subtotal = materials + labour
    markup = up(subtotal * markup_pct / 100)
    contingency = up(subtotal * D("0.05")) if subtotal * D("0.05") > 50 else D("50.00")
    estimate = subtotal + markup + contingency
    return {"materials": materials, "labour": labour, "subtotal": subtotal, "markup": markup, "contingency": contingency,
            "estimate": estimate, "labour_share_pct": even(pct(labour, estimate), 1)}


def salary_payslip(annual_salary: D, pension_pct: D, personal_allowance: D) -> dict[str, Any]:
    gross = up(annual_salary / 12)
    pension = up(gross * pension_pct / 100)
    taxable = gross - pension
    free = even(personal_allowance / 12)
    tax = even((taxable - free) * D("0.20")) if taxable > free else D("0.00")
    ni = up((gross - 1048) * D("0.08")) if gross > 1048 else D("0.00")
    loan = even((gross - 2372) * D("0.09")) if gross > 2372 else D("0.00")
    deductions = pension + tax + ni + loan
    net = gross - deductions
    return {"monthly_gross": gross, "pension": pension, "taxable_pay": taxable, "free_pay": free, "income_tax": tax,
            "national_insurance": ni, "student_loan": loan, "deductions": deductions, "net_pay": net,
            "take_home_pct": up(pct(net, gross), 1)}


def shift_payroll(day_hours: D, night_hours: D, holiday_hours: D, base_rate: D, deferral_pct: D) -> dict[str, Any]:
    hours = day_hours + night_hours + holiday_hours
    night_rate = up(base_rate * 5 / 4)  # a 25% premium
    pay = {"day_pay": up(day_hours * base_rate), "night_pay": up(night_hours * night_rate),
           "holiday_pay": up(holiday_hours * base_rate * 2)}
    overtime = max(hours - 40, D(0))
    premium = up(overtime * base_rate / 2)  # the half on top of time already paid
    gross = sum(pay.values(), D(0)) + premium
    dues = min(even(gross * D("0.015")), D("25.00"))
    deferral = even(gross * deferral_pct / 100)
    taxable = gross - dues - deferral
    return {"total_hours": hours, "night_rate": night_rate, **pay, "overtime_hours": overtime, "overtime_premium": premium,
            "gross": gross, "union_dues": dues, "deferral": deferral, "taxable_wages": taxable,
            "effective_hourly": up(taxable / hours)}


def iv_infusion_rate(weight_kg: D, mcg_per_kg_min: D, drug_mg: D, bag_ml: D, max_rate_ml_h: D) -> dict[str, Any]:
    mcg_min = even(weight_kg * mcg_per_kg_min)
    mg_h = even(mcg_min * 60 / 1000, 3)  # 60 minutes an hour, 1000 mcg a mg
    conc = even(drug_mg / bag_ml, 3)
    rate = up(mg_h / conc, 1)
    pump = rate if rate <= max_rate_ml_h else max_rate_ml_h
    return {"mcg_per_min": mcg_min, "mg_per_hour": mg_h, "mg_per_ml": conc, "rate_ml_h": rate,
            "over_limit": rate > max_rate_ml_h, "pump_rate": even(pump, 1), "bag_hours": even(bag_ml / pump, 1)}


def pediatric_dose(weight_lb: D, mg_per_kg_day: D, max_daily_mg: D, doses_per_day: D, mg_per_5ml: D, bottle_ml: D) -> dict[str, Any]:
    kg = up(weight_lb / D("2.2046"), 1)
    daily = even(kg * mg_per_kg_day, 1)
    allowed = min(daily, max_daily_mg)
    dose = up(allowed / doses_per_day, 1)
    ml = even(dose / mg_per_5ml * 5, 1)
    doses = floor(bottle_ml / ml)
    return {"weight_kg": kg, "daily_mg": daily, "allowed_daily_mg": even(allowed, 1), "dose_mg": dose, "dose_ml": ml,
            "doses_in_bottle": doses, "days_supplied": doses // int(doses_per_day)}


def recipe_scaling(base_servings: D, target_servings: D, flour_g: D, butter_g: D, eggs: D, bake_minutes: D,
                   flour_per_kg: D, butter_per_kg: D, egg_price: D) -> dict[str, Any]:
    factor = even(target_servings / base_servings, 3)
    flour = up(flour_g * factor, 0)
    butter = even(butter_g * factor, 0)
    n_eggs = max(int(even(eggs * factor, 0)), 1)
    minutes = int(bake_minutes) + (5 if factor > D("1.5") else 0)
    cost = up(flour / 1000 * flour_per_kg + butter / 1000 * butter_per_kg + n_eggs * egg_price)
    return {"factor": factor, "scaled_flour_g": flour, "scaled_butter_g": butter, "scaled_eggs": n_eggs,
            "oven_minutes": minutes, "batch_cost": cost, "cost_per_serving": up(cost / target_servings)}


def bakers_percentage(loaves: D, loaf_g: D, hydration_pct: D, salt_pct: D, yeast_pct: D) -> dict[str, Any]:
    dough = even(loaves * loaf_g, 0)
    total = even(100 + hydration_pct + salt_pct + yeast_pct)
    flour = up(dough / total * 100, 0)  # flour is 100 of the total's parts
    return {"dough_g": dough, "total_pct": total, "flour_g": flour, "water_g": even(flour * hydration_pct / 100, 0),
            "salt_g": even(flour * salt_pct / 100, 1), "yeast_g": up(flour * yeast_pct / 100, 1)}


def volume_quote(quantity: D, unit_price: D, tax_pct: D) -> dict[str, Any]:
    list_total = even(quantity * unit_price)
    rate = next((r for floor_qty, r in ((500, 15), (100, 10), (50, 5)) if quantity >= floor_qty), 0)
    discount = up(list_total * rate / 100)
    net = list_total - discount
    freight = D("0.00") if net >= 2500 else up(max(net * D("0.04"), D(35)))
    tax = up((net + freight) * tax_pct / 100)
    total = net + freight + tax
    return {"list_total": list_total, "discount_pct": rate, "discount": discount, "net": net, "freight": freight,
            "sales_tax": tax, "quote_total": total, "unit_cost": even(total / quantity, 4)}


def event_budget(guests: D, venue_fee: D, per_head: D, extras: D, contingency_pct: D, budget: D) -> dict[str, Any]:
    catering = even(guests * per_head)
    service = up(catering / 8)  # 12.5% is an eighth
    subtotal = even(venue_fee + catering + service + extras)
    contingency = even(subtotal * contingency_pct / 100)
    total = subtotal + contingency
    variance = even(total - budget)
    return {"catering": catering, "service_charge": service, "subtotal": subtotal, "contingency": contingency,
            "total": total, "per_guest": up(total / guests), "variance": variance,
            "variance_pct": even(pct(variance, budget), 1), "within_budget": total <= budget}


def invoice_late_fee(balance: D, days_since_due: D, grace_days: D, annual_rate_pct: D, credit: D) -> dict[str, Any]:
    late = max(int(days_since_due) - int(grace_days), 0)
    interest = up(balance * annual_rate_pct * late / (100 * 365))
    fee = D(0) if late == 0 else (D(40) if balance < 1000 else D(70))
    due = even(balance + interest + fee)
    applied = even(credit) if credit < due else due
    return {"days_late": late, "interest": interest, "late_fee": even(fee), "total_due": due, "credit_applied": applied,
            "amount_payable": due - applied}


def freelance_quote(design_hours: D, design_rate: D, dev_hours: D, dev_rate: D, days_to_deadline: D,
                    returning_discount_pct: D) -> dict[str, Any]:
    design, dev = even(design_hours * design_rate), even(dev_hours * dev_rate)
    base = design + dev
    rush = up(base / 4) if days_to_deadline < 10 else D("0.00")
    discount = even(base * returning_discount_pct / 100)
    quote = base + rush - discount
    deposit = up(quote * D("0.3"))
    deposit = quote if D(500) >= quote else max(deposit, D("500.00"))  # at least 500, never more than the quote
    return {"design_cost": design, "dev_cost": dev, "base": base, "rush_surcharge": rush, "discount": discount,
            "quote": quote, "deposit": deposit, "balance_due": quote - deposit}


def tip_pool(card_tips: D, cash_tips: D, house_pct: D, hours_a: D, hours_b: D, hours_c: D) -> dict[str, Any]:
    pool = card_tips + cash_tips
    house = up(pool * house_pct / 100)
    rest = pool - house
    hours = hours_a + hours_b + hours_c
    per_hour = even(rest / hours, 4)
    a, b = up(hours_a * per_hour), up(hours_b * per_hour)
    return {"pool": even(pool), "house_share": house, "distributable": even(rest), "total_hours": even(hours),
            "per_hour": per_hour, "share_a": a, "share_b": b, "share_c": even(rest - a - b)}


def car_lease(cap_cost: D, residual: D, term_months: D, apr_pct: D, tax_pct: D, due_at_signing: D) -> dict[str, Any]:
    depreciation = up((cap_cost - residual) / term_months)
    factor = even(apr_pct / 2400, 6)
    finance = up((cap_cost + residual) * factor)
    base = depreciation + finance
    tax = up(base * tax_pct / 100)
    monthly = base + tax
    return {"depreciation": depreciation, "money_factor": factor, "finance_charge": finance, "base_payment": base,
            "payment_tax": tax, "monthly_payment": monthly, "total_cost": even(monthly * term_months + due_at_signing)}


def progress_billing(contract_value: D, pct_complete: D, retention_pct: D, previously_billed: D) -> dict[str, Any]:
    work = even(contract_value * pct_complete / 100)
    retention = up(work * retention_pct / 100)
    earned = work - retention
    return {"work_to_date": work, "retention": retention, "earned": earned, "this_claim": even(earned - previously_billed),
            "balance_to_finish": even(contract_value - earned), "certified_pct": even(pct(earned, contract_value), 1)}


def unit_price_comparison(price_a: D, grams_a: D, price_b: D, grams_b: D) -> dict[str, Any]:
    a, b = up(price_a * 100 / grams_a), up(price_b * 100 / grams_b)
    cheaper, dearer = sorted((a, b))
    saving = dearer - cheaper
    return {"per_100g_a": a, "per_100g_b": b, "better_buy": "A" if a <= b else "B", "saving_per_100g": saving,
            "saving_pct": even(pct(saving, dearer), 1)}


PROCEDURES: dict[str, Callable[..., dict[str, Any]]] = {f.__name__: f for f in (
    job_cost_estimate, salary_payslip, shift_payroll, iv_infusion_rate, pediatric_dose, recipe_scaling,
    bakers_percentage, volume_quote, event_budget, invoice_late_fee, freelance_quote, tip_pool, car_lease,
    progress_billing, unit_price_comparison)}
"""Procedure name (the file stem) -> its independent computation."""


def expected(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every step's value of procedure ``name`` for one input set (values as the file writes them).

    Decimals are computed with 60 significant digits, so no quotient is rounded before its
    step's own rounding can see a half.
    """
    with localcontext() as ctx:
        ctx.prec = 60
        return PROCEDURES[name](**{k: D(str(v)) for k, v in inputs.items()})


def input_sets(folder: Path, name: str) -> list[tuple[str, dict[str, Any]]]:
    """``(id, inputs)`` of ``NAME.inputs.yaml`` in ``folder``."""
    import yaml

    data = yaml.safe_load((folder / f"{name}.inputs.yaml").read_text(encoding="utf-8"))
    return [(str(s["id"]), s["inputs"]) for s in data]


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for proc_name in sorted(PROCEDURES):
        for set_id, given in input_sets(here, proc_name):
            print(f"{proc_name}/{set_id}: {expected(proc_name, given)}")
