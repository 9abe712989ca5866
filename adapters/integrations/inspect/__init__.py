"""stepguard's benchmark in Inspect AI (``pip install "stepguard[inspect]"``).

Registered through Inspect's ``inspect_ai`` entry point (pyproject.toml), so no file path is needed::

    inspect eval stepguard/procedural -T steps=5,23 --solver stepguard/guarded --model openai/gpt-4o-mini
    inspect eval stepguard/procedures -T path=benchmarks/production --solver stepguard/raw --model ...

* tasks ``stepguard/procedural`` (generated instances: ``steps``, ``lookbacks``, ``per_config``,
  ``seed``) and ``stepguard/procedures`` (a suite of procedure files with input sets: ``path``, ``limit``);
* solvers ``stepguard/raw`` and ``stepguard/guarded`` (GuardConfig's fields as parameters), both
  calling the model through Inspect (:class:`InspectModel`), so every provider Inspect has works;
* scorer ``stepguard/fidelity``: first-answer accuracy, exact-step execution, verified completion
  and the deviation taxonomy, each sample's step verdicts, rungs and provenance in its metadata.

The scores are those ``stepguard bench run`` gives on the same cases and replies: both run
:func:`stepguard.bench.case.arun_case` (docs/inspect.md).
"""

from __future__ import annotations

from ._model import InspectModel
from ._scorer import fidelity
from ._solvers import ROW_KEY, guarded, raw
from ._tasks import procedural, procedures

__all__ = ["ROW_KEY", "InspectModel", "fidelity", "guarded", "procedural", "procedures", "raw"]
