"""The Inspect tasks: ``stepguard/procedural`` (generated instances) and ``stepguard/procedures`` (a suite).

Both default to raw mode (``stepguard/raw``) and score with ``stepguard/fidelity``; pick the guard
with ``--solver stepguard/guarded``::

    inspect eval stepguard/procedural -T steps=5,23 -T lookbacks=1,7 -T per_config=5 --model openai/gpt-4o-mini
    inspect eval stepguard/procedures -T path=benchmarks/production --solver stepguard/guarded --model ...
"""

from __future__ import annotations

from collections.abc import Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset

from stepguard.bench.generate import DEFAULT_LOOKBACKS, DEFAULT_STEPS, generate_grid
from stepguard.bench.suites import load_suite

from ._samples import instance_sample, suite_sample
from ._scorer import fidelity
from ._solvers import raw

__all__ = ["procedural", "procedures"]

_ALL_STEPS = ",".join(map(str, DEFAULT_STEPS))
_ALL_LOOKBACKS = ",".join(map(str, DEFAULT_LOOKBACKS))

DEFAULT_PER_CONFIG = 10
"""Instances per (steps, look-back) configuration of ``stepguard/procedural`` unless ``per_config`` says."""


def _whole_numbers(value: int | str | Sequence[int | str], name: str) -> tuple[int, ...]:
    """``5``, ``"5,23"`` or ``[5, 23]`` as ``(5, 23)``.

    Raises:
        ValueError: an item that is not a whole number (names the parameter and the item).
    """
    items = value.split(",") if isinstance(value, str) else [value] if isinstance(value, int) else list(value)
    out = []
    for item in items:
        text = str(item).strip()
        if isinstance(item, bool) or not text.lstrip("-").isdigit():
            raise ValueError(f"{name}: {item!r} is not a whole number (give e.g. {name}=5,23)")
        out.append(int(text))
    if not out:
        raise ValueError(f"{name}: no value given (give e.g. {name}=5,23)")
    return tuple(out)


@task
def procedural(
    steps: int | str | list[int] = _ALL_STEPS,
    lookbacks: int | str | list[int] = _ALL_LOOKBACKS,
    per_config: int = DEFAULT_PER_CONFIG,
    seed: int = 0,
) -> Task:
    """stepguard's generated step-wise arithmetic procedures (docs/benchmark.md), raw mode by default.

    Args:
        steps: procedure lengths N (``5,23`` or a list); default the benchmark's eleven, 5 to 95.
        lookbacks: look-back depths L; default 1, 2, 3, 5, 7.
        per_config: instances per (N, L) configuration.
        seed: the generator's seed (the same seed: the same instances as ``stepguard bench generate``).

    Raises:
        ValueError: a length or look-back that is not a whole number or is out of the generator's range.
    """
    grid = generate_grid(_whole_numbers(steps, "steps"), _whole_numbers(lookbacks, "lookbacks"), per_config, seed)
    samples = [instance_sample(inst) for inst in grid]
    return Task(dataset=MemoryDataset(samples, name="stepguard-procedural"), solver=raw(), scorer=fidelity(),
                metadata={"stepguard": "procedural", "seed": seed})


@task
def procedures(path: str = "benchmarks/production", limit: int | None = None) -> Task:
    """A suite: procedure files with their input sets (``NAME.yaml`` + ``NAME.inputs.yaml``, or a folder).

    Args:
        path: the procedure file or folder (docs/production.md); default the production suite.
        limit: at most this many cases per procedure (file order), or all.

    Raises:
        ProcedureError: a file of the suite is invalid or has no input sets (names the file).
    """
    cases = load_suite(path)
    if limit is not None:
        seen: dict[str, int] = {}
        kept = []
        for case in cases:
            name = case.id.rsplit("/", 1)[0]
            seen[name] = seen.get(name, 0) + 1
            if seen[name] <= limit:
                kept.append(case)
        cases = kept
    samples = [suite_sample(case, path) for case in cases]
    return Task(dataset=MemoryDataset(samples, name="stepguard-procedures"), solver=raw(), scorer=fidelity(),
                metadata={"stepguard": "procedures", "path": path})
