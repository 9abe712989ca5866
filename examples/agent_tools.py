"""Local, offline tools for the agent-workflow examples (refund, age_power, receipt, summary_count).

Give them to the guard explicitly: ``Guard(model, tools=TOOLS)`` in Python, or
``stepguard run examples/refund.yaml --tools examples.agent_tools:TOOLS`` on the command line (run
from the repository root). A procedure file names a tool; it never imports one.
"""

from __future__ import annotations

import math
from decimal import Decimal

from stepguard.tools import Tool

CATALOG = {"A-12": "ORD-7", "B-40": "ORD-19", "C-03": "ORD-23"}
"""SKU -> the order that bought it (a stand-in for a catalogue service)."""

AGES = {"Ada Lovelace": 36, "Alan Turing": 41, "Grace Hopper": 85}
"""Name -> age at death, in years (a stand-in for a people directory)."""

REFUNDS: list[tuple[str, Decimal]] = []
"""Every refund issued in this process, in order (so a test can count them)."""


def catalog_lookup(sku: str) -> str:
    """Look up the order ID that bought a SKU."""
    if sku not in CATALOG:
        raise KeyError(f"unknown SKU {sku!r}")
    return CATALOG[sku]


def issue_refund(order_id: str, amount: Decimal) -> str:
    """Refund an amount to an order; returns the refund's reference."""
    if order_id not in CATALOG.values():
        raise ValueError(f"no such order {order_id!r}")
    REFUNDS.append((order_id, Decimal(amount)))
    return f"RF-{order_id}-{len(REFUNDS)}"


def lookup_age(name: str) -> int:
    """A person's age, in whole years."""
    return AGES[name]


def power(base: Decimal, exponent: Decimal) -> Decimal:
    """``base ** exponent`` for a positive base, rounded to 6 decimal places (a calculator)."""
    return Decimal(repr(round(math.pow(float(base), float(exponent)), 6)))


TOOLS = [
    Tool("catalog_lookup", catalog_lookup, timeout_s=5, version="1"),
    Tool("issue_refund", issue_refund, timeout_s=5, version="1"),
    Tool("lookup_age", lookup_age, timeout_s=5, version="1"),
    Tool("power", power, timeout_s=5, version="1"),
]
"""What ``--tools examples.agent_tools:TOOLS`` gives the guard."""
