"""Benchmark cases as Inspect samples, and back.

A sample carries its case in its metadata: a generated instance whole (``{"instance": {...}}``,
the JSONL line's fields), a suite's case by its suite and id (``{"suite": path, "case": id}``, the
suite read again, once a process, when a solver asks). Its input is raw mode's prompt, its target
the expected answer, its id the case's id.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepguard.bench.case import raw_request
from stepguard.bench.instances import Instance
from stepguard.bench.suites import ProcedureCase, load_suite

if TYPE_CHECKING:
    from inspect_ai.dataset import Sample

    from stepguard.procedure import Procedure

__all__ = ["case_of", "instance_sample", "procedures_of", "suite_sample"]


def _sample(case: Instance | ProcedureCase, where: dict[str, Any]) -> Sample:
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    messages, _ = raw_request(case)
    kinds: dict[str, Any] = {"system": ChatMessageSystem, "user": ChatMessageUser}
    answer = case.answer
    target = ("true" if answer else "false") if isinstance(answer, bool) else str(answer)
    return Sample(id=case.id, input=[kinds[m["role"]](content=m["content"]) for m in messages], target=target,
                  metadata={**where, "n_steps": case.n_steps, "lookback": case.lookback})


def instance_sample(inst: Instance) -> Sample:
    """The sample of a generated instance."""
    return _sample(inst, {"instance": inst.model_dump(mode="json")})


def suite_sample(case: ProcedureCase, suite: str | Path) -> Sample:
    """The sample of one case of the suite at ``suite``."""
    return _sample(case, {"suite": str(Path(suite).resolve()), "case": case.id})


@lru_cache(maxsize=16)
def _suite(path: str) -> dict[str, ProcedureCase]:
    return {case.id: case for case in load_suite(path)}


def case_of(metadata: dict[str, Any]) -> Instance | ProcedureCase:
    """The case a sample's metadata names.

    Raises:
        ValueError: the metadata holds neither an instance nor a suite's case (a sample not made here).
        ProcedureError: the instance is invalid, or the suite no longer loads.
        KeyError: the suite no longer has the case.
    """
    if "instance" in metadata:
        return Instance.model_validate(metadata["instance"])
    if "suite" in metadata and "case" in metadata:
        return _suite(str(metadata["suite"]))[str(metadata["case"])]
    raise ValueError("this sample is not a stepguard case: its metadata has neither 'instance' nor 'suite' and 'case' "
                     "(use the stepguard/procedural or stepguard/procedures task)")


def procedures_of(metadata: dict[str, Any]) -> list[Procedure] | None:
    """The procedures one guard configuration serves, as ``stepguard bench run`` resolves it: every
    procedure of a sample's suite, or ``None`` for a generated instance (integer sums by construction)."""
    if "suite" in metadata:
        return [case.procedure for case in _suite(str(metadata["suite"])).values()]
    return None
