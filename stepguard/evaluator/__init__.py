"""The safe evaluator: simpleeval locked down to exact, bounded arithmetic and checks.

Public face: :func:`compile_expression` (parse once), :meth:`CompiledExpression.evaluate`
(evaluate many times), :func:`evaluate`, and the exact-number helpers.
"""

from stepguard.errors import EvaluationError
from stepguard.evaluator._numbers import (
    DEFAULT_MAX_BITS,
    NUMBER_BODY,
    SIGNS,
    Number,
    check_size,
    decimal_places,
    format_number,
    normalize,
    one_script,
    parse_number,
    read_number,
)
from stepguard.evaluator._safe import DEFAULT_LIMITS, CompiledExpression, Limits, compile_expression, evaluate

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BITS",
    "NUMBER_BODY",
    "SIGNS",
    "CompiledExpression",
    "EvaluationError",
    "Limits",
    "Number",
    "check_size",
    "decimal_places",
    "compile_expression",
    "evaluate",
    "format_number",
    "normalize",
    "one_script",
    "parse_number",
    "read_number",
]
