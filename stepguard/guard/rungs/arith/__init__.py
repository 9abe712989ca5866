"""The arithmetic rungs: a plugin of the rung registry, found by its entry point like any other.

stepguard's own distribution declares it in ``pyproject.toml``::

    [project.entry-points."stepguard.rungs"]
    arith = "stepguard.guard.rungs.arith"

and the registry imports this package the first time a rung is looked up
(:func:`stepguard.guard.rungs.rung_names`). Its modules import from the guard only the public
rung API, :mod:`stepguard.guard.rungs` (``tests/guard/rungs/test_plugins.py`` checks it), as a
third-party package would.

Which rungs are here and why: every rung that derives a sub-procedure from a step's arithmetic,
and each one's order and tuning comes from what the embedded model gets right (docs/lab/production-suite-history.md):
the operation rungs (``bridge``, ``decompose``, ``commute``, ``partial``, ``scale``, ``choice``,
``divide``, ``tie``), the rungs that pick among them (``single``, ``split``) or split a step by its
operations (``chain``, whose nested ladder is :data:`SUB_STEP_LADDER`), and the digit rungs
(``columns``, ``multiply``, ``longdiv``, ``digits``). The rungs that re-ask a step as it is
(``restate``, ``narrow``, ``resample``) know no arithmetic and stay in the core.

The import order below is the order of registration, which ``--help`` and docs/cli.md show. The
names exported are what a digit rung of another package builds on: the digit sheet
(:class:`Sheet`, :class:`DigitRung`) and the nested ladders.
"""

from stepguard.guard.rungs.arith import bridge, decompose, commute, chain  # noqa: F401
from stepguard.guard.rungs.arith import partial, scale, choice, divide, tie, single, split  # noqa: F401
from stepguard.guard.rungs.arith import columns, multiply, longdiv, digits  # noqa: F401
from stepguard.guard.rungs.arith._digits import DIGIT_LADDER, MAX_SUB_STEPS, DigitRung, Sheet, larger_at_first_difference
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.guard.rungs.arith.digits import DIGIT_CHAIN_LADDER

__all__ = ["DIGIT_CHAIN_LADDER", "DIGIT_LADDER", "MAX_SUB_STEPS", "SUB_STEP_LADDER", "DigitRung", "Sheet", "larger_at_first_difference"]
