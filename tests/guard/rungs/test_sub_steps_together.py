"""Issue 43.3: a digit rung's independent sub-steps asked together (``GuardConfig.substeps_together``,
``chunk_by="independent"``), opt-in; by default one sub-step a call, as before.

A long multiplication's single-digit products read only the step's operands, so one call may ask
consecutive ones; each carry column is written from earlier sub-steps' values, so it waits until they
are verified and is asked in a call that holds none of them. No call shows a value a sub-step of it is
to write.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import format_number
from stepguard.guard.rungs import Rung, get_rung
from stepguard.guard.rungs.arith._digits import DIGIT_CHUNK
from tests._fakes import DIGIT_PRODUCT, ScriptedModel, asked_steps

_INPUTS = {"a": 4789, "b": 356}
_CONFIG = GuardConfig(ladder=("digits",), max_reprompts_per_step=1, substeps_together=True)
_SUB = get_rung("digits").derive(DIGIT_PRODUCT, 2, {"x": 4789, "y": 356})


def _nested(model: ScriptedModel) -> list[list[str]]:
    """The sub-steps each call of the digit rung's nested run asked, in order."""
    return [a for a in map(asked_steps, model.calls) if a and all(v.startswith("d") for v in a)]


def _chunks() -> list[list[str]]:
    """The calls the option's nested run of ``4789 * 356`` makes, each the sub-steps it asks."""
    assert _SUB is not None
    out, i = [], 0
    while i < len(_SUB.steps):
        k = _SUB.independent(i, DIGIT_CHUNK)
        out.append([s.var for s in _SUB.steps[i:i + k]])
        i += k
    return out


def test_by_default_a_digit_rung_asks_one_sub_step_a_call_as_before() -> None:
    """The default path is the one before the option: the nested configuration is
    :meth:`Rung.nested_config`'s with one sub-step a call, ``chunk_by="size"``, and each call asks one
    sub-step, in the sheet's order (the sheets themselves are pinned by tests/guard/test_prompt_forms.py)."""
    rung = get_rung("digits")
    base = GuardConfig(ladder=("digits",), max_reprompts_per_step=1)
    for parent in (base, GuardConfig(chunk_size=5, chunk_by="independent")):
        cfg = rung.nested_config(parent, 0, None, None, _SUB)
        assert cfg == replace(Rung.nested_config(rung, parent, 0, None, None, _SUB), chunk_size=1, inline_known=False, chunk_by="size")
    model = ScriptedModel(always_wrong={"r"})
    result = Guard(model, base).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    assert _SUB is not None and _nested(model) == [[s.var] for s in _SUB.steps]


def test_the_option_asks_independent_sub_steps_together_and_verifies() -> None:
    model = ScriptedModel(always_wrong={"r"})
    result = Guard(model, _CONFIG).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    calls = _nested(model)
    assert calls[0] == ["d1", "d2"]  # 9 * 6, 8 * 6: the carry 8 + 5 is written from both, so it waits
    assert ["d3"] in calls and calls == _chunks()
    prompt = str(next(m for m in model.calls if asked_steps(m) == calls[0])[-1]["content"])
    for line in ("d1 = 9 * 6", "d2 = 8 * 6"):
        assert f"\n{line}\n" in prompt  # each sub-step's line as the one-a-call prompt wrote it
    assert _SUB is not None and len(calls) < len(_SUB.steps)
    assert [v for c in calls for v in c] == [s.var for s in _SUB.steps]  # each asked once, in order


@pytest.mark.parametrize("fault", ["wrong", "skip"])
def test_a_wrong_digit_asked_with_another_is_re_asked_alone_and_never_verified_wrong(fault: str) -> None:
    model = ScriptedModel(faults={"d2": [fault]}, always_wrong={"r"})
    result = Guard(model, _CONFIG).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    calls = _nested(model)
    assert calls[0] == ["d1", "d2"]
    assert calls[1] == ["d2"]  # alone, on the nested ladder's resample; d1 verified and kept
    assert calls[2][0] == "d3" and "d1" not in {v for c in calls[1:] for v in c}
    read = next(e for e in result.deviations if e.action == "read")
    assert "d2 = 8 * 6 = 48" in read.detail  # the value read from is the re-asked one, right


def test_a_digit_wrong_on_every_try_is_never_verified() -> None:
    model = ScriptedModel(always_wrong={"r", "d3"})
    cfg = GuardConfig(ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag", substeps_together=True)
    result = Guard(model, cfg).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status != "verified" and result.steps[-1].provenance == "flagged"
    assert not any(e.action == "read" for e in result.deviations)


def test_a_streamed_runs_digit_rung_with_the_option_asks_as_chunked_mode() -> None:
    model = ScriptedModel(always_wrong={"r"})
    cfg = GuardConfig(ladder=("digits",), max_reprompts_per_step=1, streamed=True, substeps_together=True)
    result = Guard(model, cfg).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    assert _nested(model) == _chunks()


def test_a_carry_is_never_asked_with_what_it_was_written_from() -> None:
    """``d3 = 8 + 5`` is written from ``d1 = 9 * 6`` (carry 5) and ``d2 = 8 * 6`` (units 8)."""
    assert _SUB is not None
    assert _SUB.steps[2].expression == "8 + 5" and {"d1", "d2"} <= set(_SUB.after(2))
    assert _SUB.independent(0, 10) == 2 and _SUB.independent(2, 10) == 1 and _SUB.independent(3, 10) == 2


@pytest.mark.parametrize(("op", "a", "b", "scale"), [("*", 4789, 356, None), ("+", 4789, 356, None), ("-", 356, 4789, None),
                                                  ("/", 4789, 7, 2)])
def test_no_call_shows_a_value_the_model_is_about_to_write(op: str, a: int, b: int, scale: int | None) -> None:
    """With the option a call asks consecutive sub-steps none written from another of the same call, and
    no prompt holds the value of a sub-step it asks, or of a later one, as a literal before the model
    wrote it (beside that sub-step's own line)."""
    step: dict[str, object] = {"var": "r", "expr": f"a {op} b"}
    if scale is not None:
        step.update(type="decimal", scale=scale)
    proc = Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [step]})
    rung = get_rung({"+": "columns", "-": "columns", "*": "long_multiply", "/": "long_divide"}[op])
    sub = rung.derive(proc, 0, {"a": Fraction(a), "b": Fraction(b)})
    assert sub is not None
    values = {var: format_number(v) for var, v in sub.expected_values({}).items()}
    model = ScriptedModel()
    result = Guard(model, rung.nested_config(GuardConfig(substeps_together=True), 0, None, None, sub)).run(sub, {})
    assert result.status == "verified" and len(model.calls) < len(sub.steps)
    asked_in_order: list[str] = []
    for messages in model.calls:
        block = str(messages[-1]["content"]).split("Steps:\n", 1)[-1].split("\n\n", 1)[0].splitlines()
        lines = {line.split(" = ", 1)[0]: line.split() for line in block}
        asked_in_order += list(lines)
        first = sub.index_of[next(iter(lines))]
        for later in sub.steps[first:]:  # the sub-steps asked now, and every later one
            shown = {w for var, words in lines.items() if var != later.var for w in words}
            assert values[later.var] not in shown or len(values[later.var]) == 1, (later.var, block)
        for var in lines:
            assert not set(sub.after(sub.index_of[var])) & set(lines), (var, block)
    assert asked_in_order == [s.var for s in sub.steps]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(["+", "-", "*", "/"]), a=st.integers(-99999, 99999), b=st.integers(-9999, 9999).filter(bool))
def test_no_chunk_shows_a_value_a_sub_step_of_it_writes(op: str, a: int, b: int) -> None:
    step: dict[str, object] = {"var": "r", "expr": f"a {op} b"}
    if op == "/":
        step.update(type="decimal", scale=2)
    proc = Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [step]})
    rung = get_rung({"+": "columns", "-": "columns", "*": "long_multiply", "/": "long_divide"}[op])
    sub = rung.derive(proc, 0, {"a": Fraction(a), "b": Fraction(b)})
    if sub is None:
        return
    digits = {c for n in (a, b) for c in str(abs(n))}
    operands = digits | {"0", "1", str(abs(a)), str(abs(b))} | {str(10 + int(d)) for d in digits}  # 10 + d: a borrowed ten
    for i, sub_step in enumerate(sub.steps):  # a sub-step marked as written from the operands alone shows only them
        if not sub.after(i):
            shown = set(re.findall(r"\d+", sub_step.expression or ""))
            assert shown <= operands or (op == "/" and all(len(n) == 1 for n in shown)), (sub_step.var, sub_step.expression)
    model = ScriptedModel()
    result = Guard(model, rung.nested_config(GuardConfig(substeps_together=True), 0, None, None, sub)).run(sub, {})
    assert result.status == "verified" and result.values == sub.expected_values({})
    assert [v for m in model.calls for v in asked_steps(m)] == [s.var for s in sub.steps]
    for messages in model.calls:
        asked = asked_steps(messages)
        for var in asked:  # no sub-step asked with one whose value its literals were written from
            assert not set(sub.after(sub.index_of[var])) & set(asked), (var, asked)


def test_independent_chunks_end_before_a_step_reading_one_of_them_by_name() -> None:
    """The rule on a procedure from a file: ``s = x + y`` reads ``x`` and ``y``, so it is asked after them,
    their values listed as known values, never in the chunk that writes them."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a * 2"}, {"var": "y", "expr": "b * 3"}, {"var": "s", "expr": "x + y"}, {"var": "t", "expr": "a + b"}]})
    model = ScriptedModel()
    result = Guard(model, GuardConfig(chunk_size=5, chunk_by="independent")).run(proc, {"a": 4, "b": 5})
    assert result.status == "verified" and result.values["s"] == 23
    assert [asked_steps(m) for m in model.calls] == [["x", "y"], ["s", "t"]]
    assert "x = 8" in str(model.calls[1][-1]["content"]).split("Steps:", 1)[0]
    model = ScriptedModel()
    Guard(model, GuardConfig(chunk_size=5)).run(proc, {"a": 4, "b": 5})
    assert [asked_steps(m) for m in model.calls] == [["x", "y", "s", "t"]]  # "size", the default: as before


def test_chunk_by_refuses_an_unknown_rule_and_written_from_a_later_step() -> None:
    with pytest.raises(ValueError, match="chunk_by"):
        GuardConfig(chunk_by="together")  # type: ignore[arg-type]
    proc = Procedure.model_validate({"name": "p", "steps": [{"var": "x", "expr": "1 + 2"}, {"var": "y", "expr": "3 + 4"}]})
    with pytest.raises(ValueError, match="only from earlier steps"):
        proc.written_from({"x": ["y"]})
    assert proc.written_from({"y": ["x"]}).after(1) == ("x",) and proc.after(1) == ()


def test_a_default_run_records_and_keys_neither_new_setting_as_stores_made_before_them() -> None:
    """A run store or checkpoint made before ``chunk_by`` and ``substeps_together`` still resumes: at
    their defaults neither is in run.json's ``guard_config`` nor in the run's identity; set, both are."""
    from stepguard.bench._runmeta import _guard_config_dict

    base = GuardConfig(ladder=("digits",))
    assert not {"chunk_by", "substeps_together"} & set(_guard_config_dict(base))
    assert _guard_config_dict(replace(base, substeps_together=True))["substeps_together"] is True
    a = Guard(ScriptedModel(), base).run_identity(DIGIT_PRODUCT, _INPUTS)
    assert not {"chunk_by", "substeps_together"} & set(a["settings"])
    b = Guard(ScriptedModel(), replace(base, substeps_together=True)).run_identity(DIGIT_PRODUCT, _INPUTS)
    assert a != b and b["settings"]["substeps_together"] is True


@pytest.mark.parametrize(("a", "b", "scale"), [("12845.5", "8", 4), ("17816.7", "12", 2), ("723", "24", 2), ("4789", "7", 2)])
def test_a_quotient_digits_scan_is_asked_in_one_call_after_the_multiples_it_compares(a: str, b: str, scale: int) -> None:
    """Each quotient digit's comparisons (``max(4, 1)``, ``max(4, 2)``, ... for the remainder 45 by 8) are written
    from the remainder and the multiples, which are asked before them, and not from one another: with the option,
    a scan is one call. Each comparison still waits for every multiple and remainder sub-step it reads."""
    proc = Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [
        {"var": "r", "expr": "a / b", "type": "decimal", "scale": scale}]})
    env = {"a": Fraction(a), "b": Fraction(b)}
    rung = get_rung("long_divide")
    sheet, sub = rung.sheet(proc, 0, env), rung.derive(proc, 0, env)
    assert sheet is not None and sub is not None
    scans = [p.of for p in sheet.reading.places if p.part == "count" and len(p.of) > 1]
    assert scans, "a sheet with a scan of two or more comparisons"
    chunks, i = [], 0
    while i < len(sub.steps):
        k = sub.independent(i, DIGIT_CHUNK)
        chunks.append({s.var for s in sub.steps[i:i + k]})
        i += k
    for scan in scans:
        assert any(set(scan) <= chunk for chunk in chunks), scan  # one call asks the whole scan
        first = sub.index_of[scan[0]]
        assert set(sub.after(first)) == {s.var for s in sub.steps[:first]}  # every sub-step before the scan: remainder, multiples
    model = ScriptedModel()
    result = Guard(model, rung.nested_config(GuardConfig(substeps_together=True), 0, None, None, sub)).run(sub, {})
    assert result.status == "verified" and len(model.calls) == len(chunks)
