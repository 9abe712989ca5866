"""Moved: the digit rungs' shared sheet is :mod:`stepguard.guard.rungs.arith._digits` (the arithmetic
plugin); this path re-exports what imports written before the move read."""

from stepguard.guard.rungs.arith import (
    DIGIT_LADDER as DIGIT_LADDER,
    MAX_SUB_STEPS as MAX_SUB_STEPS,
    DigitRung as DigitRung,
    Sheet as Sheet,
    larger_at_first_difference as larger_at_first_difference,
)
