"""Moved: the ``digits`` rung is :mod:`stepguard.guard.rungs.arith.digits` (the arithmetic plugin);
this path re-exports what imports written before the move read."""

from stepguard.guard.rungs.arith import DIGIT_CHAIN_LADDER as DIGIT_CHAIN_LADDER
