"""The re-prompt ladder's rungs, one module each, registered by name.

A rung says how the guard re-asks a failing step: the chunk or the step alone, its sampling, and,
for derived rungs, the sub-procedure it derives and the nested budget that runs it
(:class:`Rung`). The controller reads only those attributes.

To add a rung: write ``stepguard/guard/rungs/<name>.py`` with a :class:`Rung` subclass decorated
by :func:`register`, and add its module to the import line below; ``GuardConfig(ladder=...)``,
``--ladder`` and ``stepguard --help`` then know it.
"""

from stepguard.guard.rungs._base import Rung, get_rung, register, rung_names

# The order of registration is the order `--help` and docs/cli.md list the rungs in: not sorted.
from stepguard.guard.rungs import restate, narrow, resample, bridge, decompose, commute, chain  # noqa: F401
from stepguard.guard.rungs import partial, scale, choice, divide, tie, single, split  # noqa: F401
from stepguard.guard.rungs import columns, multiply, longdiv, digits  # noqa: F401

__all__ = ["Rung", "get_rung", "register", "rung_names"]
