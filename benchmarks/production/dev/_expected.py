"""Expected values of the new development procedures, computed independently of stepguard.

As ``benchmarks/production/test/_expected.py``: each function is written from its procedure's
rule (the ``description`` of ``NAME.yaml`` beside this file) with Python's ``decimal`` module
only, no stepguard import. ``tests/benchmarks/test_heldout_split.py`` requires the evaluator to agree.

Run it to print every case's values: ``python benchmarks/production/dev/_expected.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path
from typing import Any

D = Decimal
CENT, TENTH = D("0.01"), D("0.1")


def up(x: Decimal, q: Decimal = CENT) -> Decimal:
    """``x`` rounded half up to the places of ``q``."""
    return x.quantize(q, rounding=ROUND_HALF_UP)


def even(x: Decimal, q: Decimal = CENT) -> Decimal:
    """``x`` rounded half to even to the places of ``q``."""
    return x.quantize(q, rounding=ROUND_HALF_EVEN)


def income_tax_rate(income: D, allowance: D) -> dict[str, Any]:
    taxable = income - allowance if income > allowance else D("0.00")
    basic = up(min(taxable, D(35900)) * D("0.20"))
    higher = up((taxable - 35900) * D("0.45")) if taxable > 35900 else D("0.00")
    tax = basic + higher
    net = income - tax
    return {"taxable": even(taxable), "basic_band": basic, "higher_band": higher, "tax": tax,
            "effective_rate_pct": even(tax * 100 / income), "net_income": even(net), "monthly_net": up(net / 12)}


def markup_margin(supplier_cost: D, freight_per_unit: D, target_margin_pct: D) -> dict[str, Any]:
    landed = supplier_cost + freight_per_unit
    target = up(landed * 100 / (100 - target_margin_pct))
    shelf = target.to_integral_value(rounding=ROUND_FLOOR) + D("0.99")
    profit = shelf - landed
    return {"landed_cost": even(landed), "target_price": target, "shelf_price": shelf,
            "margin_pct": even(profit * 100 / shelf, TENTH), "markup_pct": up(profit * 100 / landed, TENTH)}


PROCEDURES: dict[str, Callable[..., dict[str, Any]]] = {f.__name__: f for f in (income_tax_rate, markup_margin)}
"""Procedure name (the file stem) -> its independent computation."""


def expected(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Every step's value of procedure ``name`` for one input set (values as the file writes them), at 60 digits."""
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
