"""Every request the guard sends on a fixed set of simulated runs is pinned to
:data:`stepguard.guard._prompts.PROMPT_FORMS`, which is part of the prompts' fingerprint: a run store
or a checkpointed thread keys its prompts by it. A change to the prompt text the code writes (a
kind's step line, answer shape or correction note, a rung's sub-step prompt) fails here until the
version is bumped, so a store made under the old text is refused, not resumed with the new one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import RecordingModel, load_model
from stepguard.bench.generate import generate_instance
from stepguard.bench.suites import load_suite
from stepguard.guard._prompts import PROMPT_FORMS, PromptSet
from tests._paths import ROOT

pytestmark = pytest.mark.slow

PRODUCTION = ROOT / "benchmarks" / "production"

PINNED = {4: "ddcd786742498ce0b7cfef602165ffac995ad4bb0a05731bb193706d8ecfc37d", 5: "db5e76768d4f052f129cbc176805bc1da9a9297a33d86acf7afe30415c162ddf",
          6: "4bc06038b9921c8aa7fb0bccd56c2200558b353705d2ab065d4c92d3edea60ce",
          7: "4a098511e28d135ecc7df8fa697741084abc3477b0464c7063f952974becb808",
          8: "9986ed214646c019a274e46392f13911c31b591bb6c01ace81d2b60458c105aa",
          9: "f7bfb56057b6ca42bada94808d10ce2cf8d1df9c96b352159004c58805e6c026",
          10: "5f2cf0365cf96b185f060d000e469ca6e87a0db55d507b092e4196cb175dbcd1"}
"""sha256 of the sorted request keys and rendered prompts of :func:`_requests`, by forms version."""


def _first_cases() -> list[Any]:
    """The first input set of each production procedure."""
    firsts: dict[str, Any] = {}
    for case in load_suite(PRODUCTION):
        firsts.setdefault(case.procedure_name, case)
    return list(firsts.values())


def _requests(cassette: Path) -> str:
    """Generated instances chunked and streamed, and the first case of each production procedure,
    guarded on ``sim:paper`` (its errors reach correction notes and rungs); the requests' digest."""
    model = RecordingModel(load_model("sim:paper"), cassette)
    for streamed in (False, True):
        guard = Guard(model, GuardConfig(on_exhausted="flag", streamed=streamed))
        for n, lookback, index in ((5, 2, 0), (23, 2, 0), (23, 7, 1), (47, 3, 0)):
            inst = generate_instance(n, lookback, index=index)
            guard.run(inst.to_procedure(), inst.inputs, thread_id=f"{inst.id}-{streamed}")
    for case in _first_cases():
        # chunked, one sub-step a call; and every run's default (following the model, sub-steps together:
        # the rungs' nested windows)
        for run in ({"follow": False, "substeps_together": False}, {}):
            config = GuardConfig.for_procedure(case.procedure, on_exhausted="flag", **run)
            Guard(model, config).run(case.procedure, case.inputs, thread_id=f"{case.id}-{bool(run)}")
    keys = {json.loads(line)["key"] for line in cassette.read_text(encoding="utf-8").splitlines() if line.strip()}
    keys |= _alone() | _derived()
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


def _derived() -> set[str]:
    """What every rung derives for every step of each production procedure's first case and of a
    generated instance (the sub-steps, their types, places and rounding, and the nested ladder that
    asks them): a derivation a simulated run does not reach changes requests all the same."""
    from stepguard.guard.rungs import get_rung, rung_names

    inst = generate_instance(8, 2, index=0)
    cases = [(inst.to_procedure(), inst.inputs), *((case.procedure, case.inputs) for case in _first_cases()), *_edges()]
    texts = set()
    for procedure, inputs in cases:
        values = procedure.expected_values(inputs, writable=False)  # the edges hold a step no run is given whole
        env: dict[str, Any] = {**inputs, **values}
        for i in range(len(procedure.steps)):
            for name in rung_names():
                rung = get_rung(name)
                if not type(rung).__module__.startswith("stepguard."):
                    continue  # a rung another test registered
                sub = rung.derive(procedure, i, env)
                if sub is None:
                    continue
                steps = [(s.var, s.expression, s.type, s.scale, s.rounding, sub.after(k)) for k, s in enumerate(sub.steps)]
                for parent in (GuardConfig(), GuardConfig.for_procedure(procedure)):  # the class's, every run's default
                    cfg = rung.nested_config(parent, 0, None, None, sub)
                    texts.add(json.dumps([name, i, procedure.name, steps, list(cfg.ladder), cfg.chunk_size, cfg.inline_known,
                                          cfg.chunk_by, cfg.follow, cfg.streamed], default=str))
    return {hashlib.sha256(t.encode()).hexdigest() for t in texts}


def _edges() -> list[tuple[Any, dict[str, Any]]]:
    """Steps at the edges of the derivations that the production cases do not reach: a rounding at
    an exact tie, a ``min`` in a step of several operations, a step of several operations whose last quotient has no finite value (with and
    without a scale), one operation whose rounding folds into it, and a quotient by a
    decimal divisor with no finite value."""
    from stepguard import Procedure
    from stepguard.evaluator import parse_number

    def one(expr: str, values: dict[str, str], **step: object) -> tuple[Any, dict[str, Any]]:
        proc = Procedure.model_validate({"name": "edge", "inputs": list(values), "steps": [{"var": "r", "expr": expr, **step}]})
        return proc, {k: parse_number(v) for k, v in values.items()}

    return [
        one("a * b / c", {"a": "1", "b": "0.25", "c": "2"}, type="decimal", scale=2, rounding="ROUND_HALF_EVEN"),
        one("a", {"a": "81.625"}, type="decimal", scale=2, rounding="ROUND_HALF_EVEN"),
        one("a / (b * b)", {"a": "75.8", "b": "1.9"}, type="decimal", scale=1, rounding="ROUND_HALF_UP"),
        one("(a + b) / 3", {"a": "1", "b": "1"}),
        one("a ** -1", {"a": "3"}, type="decimal", scale=2),
        one("min(a, 50000) * 0.25", {"a": "61000"}, type="decimal", scale=2, rounding="ROUND_HALF_UP"),
        one("a / b", {"a": "75.628", "b": "3.61"}, type="decimal", scale=1, rounding="ROUND_HALF_UP"),
    ]


def _alone() -> set[str]:
    """Every step of a generated instance and of each production procedure asked alone, as a first
    try and after an arithmetic error, values listed and written in: the shapes a simulated run may
    not reach (a copy step asked alone)."""
    from stepguard.kinds import StepContext, kind_of
    from stepguard.verify import Deviation

    inst = generate_instance(8, 2, index=0)
    cases = [(inst.to_procedure(), inst.inputs), *((case.procedure, case.inputs) for case in _first_cases())]
    texts = set()
    for procedure, inputs in cases:
        env: dict[str, Any] = dict(inputs)
        values = procedure.expected_values(inputs)
        for i, step in enumerate(procedure.steps):
            wrong = Deviation(kind="arithmetic_error", step=step.var, got=f"{step.var} = 1")
            for note in (None, kind_of(step).correction_note(StepContext(procedure, i), wrong, env)):
                for inline in (False, True):
                    messages = PromptSet().chunk_messages(procedure, [i], env, note, inline=inline)
                    texts.add(json.dumps(messages, sort_keys=True, default=str))
            env[step.var] = values[step.var]
    return {hashlib.sha256(t.encode()).hexdigest() for t in texts}


def test_the_guards_requests_are_those_of_this_forms_version(tmp_path: Path) -> None:
    got = _requests(tmp_path / "requests.jsonl")
    assert got == PINNED.get(PROMPT_FORMS), (
        f"the guard's requests changed (digest {got}): if the prompt text it writes changed, bump PROMPT_FORMS "
        "in stepguard/guard/_prompts.py (stores and checkpoints made before then refuse to resume) and pin this digest "
        "under the new version in tests/guard/test_prompt_forms.py")


def test_the_forms_version_is_part_of_the_fingerprint(monkeypatch: Any) -> None:
    import stepguard.guard._prompts as prompts

    before = PromptSet().fingerprint()
    monkeypatch.setattr(prompts, "PROMPT_FORMS", PROMPT_FORMS + 1)
    assert PromptSet().fingerprint() != before


def test_a_raw_runs_identity_leaves_the_forms_out(monkeypatch: Any) -> None:
    """Raw mode sends the raw template alone: a forms bump does not close a raw store."""
    import stepguard.guard._prompts as prompts

    raw, guarded = PromptSet().fingerprint(forms=False), PromptSet().fingerprint()
    monkeypatch.setattr(prompts, "PROMPT_FORMS", PROMPT_FORMS + 1)
    assert PromptSet().fingerprint(forms=False) == raw and PromptSet().fingerprint() != guarded
