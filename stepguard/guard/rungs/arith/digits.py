"""The ``digits`` rung: the digit-level rung for the step's operation, every digit the model's.

It derives the failing step with the first of ``columns`` (a sum or difference), ``long_multiply``
(a product) and ``long_divide`` (a quotient) that applies; the step's value is read by position from
the model's verified sub-steps (:mod:`~stepguard.guard.rungs.arith._digits`), and the result's ``read``
event names the rung and records every sub-step and digit. It comes last in the default ladders,
after the cheaper rungs (:class:`~stepguard.guard.GuardConfig`), so it costs nothing where they
succeed.

A step of several operations (``principal * annual_rate / 12``, rounded to cents) is asked as the
``chain`` rung asks it, one operation a sub-step, and each sub-step that fails goes to ``digits``
first (:data:`DIGIT_CHAIN_LADDER`): the ``split`` rung before it tries the cheaper rungs on each
sub-step and ends there, where on the embedded model a decimal product or quotient nested in
rungs of rungs was re-asked to the same wrong value (docs/lab/production-suite-history.md, "Digit rungs"). The
sub-steps of such a chain that no digit sheet writes go through the rung made for them
(:data:`NON_DIGIT_ORDER`): the rounding it ends with, where its value is exactly halfway
(``r = 0.125``, half to even to 2 places), as ``tie`` asks it (the embedded model rounded every tie
up), and a ``min``/``max`` as ``choice`` asks it. Where none applies, the ladder says so and asks the
step alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, get_rung, register
from stepguard.guard.rungs.arith._digits import DigitRung, Sheet
from stepguard.guard.rungs.arith.chain import chain_steps
from stepguard.procedure import Procedure

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig

__all__ = ["DIGIT_CHAIN_LADDER", "DIGIT_ORDER", "NON_DIGIT_ORDER", "Digits"]

DIGIT_ORDER: tuple[str, ...] = ("columns", "long_multiply", "long_divide")
"""The digit rungs ``digits`` tries, in order."""

NON_DIGIT_ORDER: tuple[str, ...] = ("tie", "choice")
"""The rungs ``digits`` tries, in order, for one operation with no digits to write (a rounding at an
exact tie, a ``min``/``max``): a ``chain``'s sub-steps that no sheet applies to (``single``'s first two)."""

DIGIT_CHAIN_LADDER: tuple[str, ...] = ("digits", "resample", "digits")
"""The nested ladder of a step of several operations asked one operation a sub-step by ``digits``: a
failing sub-step digit by digit first, then sampled anew, then digit by digit again (another seed)."""


@register
class Digits(DigitRung):
    """``digits``: the first digit rung of :data:`DIGIT_ORDER` that applies to the step's one operation."""

    name = "digits"

    def sheet(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
        """The first sheet of :data:`DIGIT_ORDER` that applies, or ``None``."""
        for name in DIGIT_ORDER:
            rung = get_rung(name)
            sheet = rung.sheet(procedure, index, env) if isinstance(rung, DigitRung) else None
            if sheet is not None:
                return sheet
        return None

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The sheet of the step's one operation; for a step of several, the ``chain`` sub-steps
        (:func:`~stepguard.guard.rungs.arith.chain.chain_steps`, whose last sub-step is the step's value,
        so nothing is read by position); else the first derivation of :data:`NON_DIGIT_ORDER` (the
        same); ``None`` where none applies."""
        sub = super().derive(procedure, index, env) or chain_steps(procedure, index, env)
        for name in NON_DIGIT_ORDER:
            sub = sub or get_rung(name).derive(procedure, index, env)
        return sub

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """No sheet of :data:`DIGIT_ORDER` and none of :data:`NON_DIGIT_ORDER` re-asks the step's one
        operation, or ``chain``'s reason for a step of several."""
        from stepguard.guard.rungs import form_of
        from stepguard.guard.rungs.arith.chain import chain_refusal

        chain = chain_refusal(procedure, index, env)
        if chain and not chain.startswith(("fewer than two operations", "one operation", "the step is one value")):
            return f"chain: {chain}"
        sheets, others = ", ".join(DIGIT_ORDER), ", ".join(NON_DIGIT_ORDER)
        return f"no digit sheet ({sheets}) and neither of {others} re-asks {form_of(procedure, index, env)}"

    def nested_config(self, parent: GuardConfig, attempt: int, tokens_left: int | None, wall_left: float | None,
                      sub: Procedure | None = None) -> GuardConfig:
        """A sheet's as :class:`DigitRung`'s; ``chain`` sub-steps' one a call with the values they read
        written in (as ``chain`` asks them), each failing one through :data:`DIGIT_CHAIN_LADDER`;
        those of :data:`NON_DIGIT_ORDER` as their rung asks them. Which derivation ``sub`` is, its
        name's last part says (:func:`~stepguard.guard.rungs.arith._arith.derived` ends it with the
        derivation's rung, a sheet's with ``digits``), whatever the procedure and step are named."""
        form = None if sub is None else sub.name.rsplit(":", 1)[-1]
        if form in NON_DIGIT_ORDER:
            return get_rung(form).nested_config(parent, attempt, tokens_left, wall_left, sub)
        if form != "chain":  # a sheet
            return super().nested_config(parent, attempt, tokens_left, wall_left, sub)
        return replace(Rung.nested_config(self, parent, attempt, tokens_left, wall_left, sub), chunk_size=1, inline_known=True,
                       ladder=DIGIT_CHAIN_LADDER, max_reprompts_per_step=len(DIGIT_CHAIN_LADDER))
