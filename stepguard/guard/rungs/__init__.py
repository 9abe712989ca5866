"""The re-prompt ladder's rungs: the protocol, the registry, and the rungs of the core.

A rung says how the guard re-asks a failing step: the chunk or the step alone, its sampling, and,
for derived rungs, the sub-procedure it derives and the nested budget that runs it
(:class:`Rung`). The controller reads only those attributes.

This module is the public rung API a plugin imports. The core keeps the rungs that re-ask a step
as it is (``restate``, ``narrow``, ``resample``); every other rung comes from a plugin found by the
entry point group :data:`ENTRY_POINT_GROUP`, stepguard's own arithmetic rungs
(:mod:`stepguard.guard.rungs.arith`) as any other's. To add a rung: a :class:`Rung` subclass
decorated by :func:`register`, in a module named by an entry point of that group
(docs/policies.md, "Writing a rung"); ``GuardConfig(ladder=...)``, ``--ladder`` and
``stepguard --help`` then know it.
"""

from stepguard.guard.rungs._base import (
    ENTRY_POINT_GROUP,
    Read,
    Rung,
    RungPluginWarning,
    _core_registered,
    get_rung,
    load_rung_plugins,
    register,
    rung_names,
    rung_origin,
)

# The order of registration is the order `--help` and docs/cli.md list the rungs in: not sorted.
# The core's rungs first, then the plugins' (stepguard's own arithmetic rungs first of those).
from stepguard.guard.rungs._form import form_of, leaf_value
from stepguard.guard.rungs import restate, narrow, resample  # noqa: F401

_core_registered()

__all__ = ["ENTRY_POINT_GROUP", "Read", "Rung", "RungPluginWarning", "form_of", "get_rung", "leaf_value", "load_rung_plugins",
           "register", "rung_names", "rung_origin"]
