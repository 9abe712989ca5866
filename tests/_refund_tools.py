"""The refund procedure's tools for proxy worker processes in tests: each call appends a line
(``lookup PID`` or ``refund PID``) to the file named by ``STEPGUARD_TEST_REFUND_LOG``, so a test
counts what ran across processes. Serve with ``--tools tests._refund_tools:TOOLS``."""

from __future__ import annotations

import os
from decimal import Decimal

from stepguard.tools import Tool


def _log(what: str) -> None:
    with open(os.environ["STEPGUARD_TEST_REFUND_LOG"], "a") as fh:
        fh.write(f"{what} {os.getpid()}\n")


def catalog_lookup(sku: str) -> str:
    """The order that bought ``sku`` (always ORD-7)."""
    _log("lookup")
    return "ORD-7"


def issue_refund(order_id: str, amount: Decimal) -> str:
    """Refund ``amount`` to ``order_id``; the reference names the order."""
    _log("refund")
    return f"RF-{order_id}"


TOOLS = [Tool("catalog_lookup", catalog_lookup), Tool("issue_refund", issue_refund)]
