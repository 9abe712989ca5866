"""The guard's controller: policies, ladder, budgets, provenance, chunking, and no silent errors."""

from __future__ import annotations

import pytest

from stepguard import BudgetExhausted, Guard, GuardConfig, Procedure, StepDeviation
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_expected as _expected, chain_procedure as _procedure


def _assert_no_silent_errors(result, proc) -> None:
    """Every returned value is model-verified and right, or explicitly marked."""
    want = _expected(proc)
    for s in result.steps:
        if s.provenance == "model_verified":
            assert s.value == want[s.var], s
        else:
            assert s.provenance in ("repaired", "flagged", "missing")
            assert result.status != "verified"


def test_clean_run_verifies_every_step_in_chunks():
    proc = _procedure(12)
    model = ScriptedModel()
    result = Guard(model, GuardConfig(chunk_size=5)).run(proc, INPUTS)
    assert result.status == "verified"
    assert result.values == _expected(proc)
    assert result.answer == _expected(proc)["S12"]
    assert len(model.calls) == 3 and result.chunks == 3  # 5 + 5 + 2
    assert result.usage.model_calls == 3 and result.reprompts == 0


def test_chunk_prompt_restates_exactly_the_committed_values_it_reads():
    proc = _procedure(12)
    model = ScriptedModel()
    Guard(model, GuardConfig(chunk_size=5)).run(proc, INPUTS)
    second = model.calls[1][-1]["content"]
    known = second.split("Known values:\n")[1].split("\n\n")[0].splitlines()
    # steps S6..S10 read S5 (previous), S3..S7 (look-back 3): committed ones are S3, S4, S5
    assert sorted(k.split(" = ")[0] for k in known) == ["S3", "S4", "S5"]


def test_wrong_value_is_reprompted_from_the_first_wrong_step_without_leaking_the_answer():
    proc = _procedure(12)
    model = ScriptedModel(faults={"S7": ["wrong"]})
    result = Guard(model, GuardConfig(chunk_size=5, ladder=("restate",))).run(proc, INPUTS)
    assert result.status == "verified" and result.values == _expected(proc)
    assert result.reprompts == 1
    s7 = next(s for s in result.steps if s.var == "S7")
    assert s7.reprompts == 1 and s7.provenance == "model_verified"
    dev = result.deviations[0]
    assert (dev.kind, dev.step, dev.action, dev.rung) == ("arithmetic_error", "S7", "reprompt", "restate")
    correction = model.calls[2][-1]["content"]
    assert correction.splitlines()[0].startswith("Your line `S7 =")
    assert "Steps:\nS7 = " in correction  # re-asked from S7, S6 kept
    assert f"= {_expected(proc)['S7']}" not in correction.split("Known values")[0]


def test_wrong_operand_is_a_lookback_confusion_named_with_the_committed_value():
    proc = _procedure(12)
    model = ScriptedModel(faults={"S8": ["operand"]})
    result = Guard(model, GuardConfig(chunk_size=5)).run(proc, INPUTS)
    assert result.status == "verified"
    assert result.deviations[0].kind == "lookback_confusion"
    assert "not 999" in result.deviations[0].detail


@pytest.mark.parametrize("fault,kind", [("skip", "under_executed"), ("code", "code_instead_of_steps")])
def test_missing_steps_and_code_are_deviations(fault, kind):
    proc = _procedure(8)
    result = Guard(ScriptedModel(faults={"S4": [fault]}), GuardConfig(chunk_size=4)).run(proc, INPUTS)
    assert result.status == "verified"
    assert result.deviations[0].kind == kind and result.deviations[0].step in ("S4", "S1")


def test_ladder_narrows_then_resamples_with_a_new_seed_and_temperature():
    proc = _procedure(10)
    model = ScriptedModel(faults={"S6": ["wrong", "wrong", "wrong", None]})
    cfg = GuardConfig(chunk_size=5, ladder=("restate", "narrow", "resample"))
    result = Guard(model, cfg).run(proc, INPUTS)
    assert [d.rung for d in result.deviations] == ["restate", "narrow", "resample"]
    assert result.rung_fixes() == {"resample": 1}
    narrow_prompt = model.calls[3][-1]["content"].split("Steps:\n")[1]
    assert narrow_prompt.splitlines()[0].startswith("S6 = ") and "S7 = " not in narrow_prompt


def test_repair_policy_supplies_and_marks_the_value():
    proc = _procedure(8)
    result = Guard(ScriptedModel(faults={"S5": ["wrong"]}), GuardConfig(chunk_size=4, policy="repair")).run(proc, INPUTS)
    s5 = next(s for s in result.steps if s.var == "S5")
    assert s5.provenance == "repaired" and s5.value == _expected(proc)["S5"]
    assert result.status == "repaired" and result.repaired == 1 and result.first_unverified == "S5"
    _assert_no_silent_errors(result, proc)


def test_raise_policy_raises_with_the_partial_result():
    proc = _procedure(8)
    with pytest.raises(StepDeviation) as info:
        Guard(ScriptedModel(faults={"S6": ["wrong"]}), GuardConfig(chunk_size=4, policy="raise")).run(proc, INPUTS)
    partial = info.value.result
    assert partial.status == "failed" and partial.first_unverified == "S6"
    assert [s.provenance for s in partial.steps[:5]] == ["model_verified"] * 5
    _assert_no_silent_errors(partial, proc)


def test_flag_policy_keeps_the_models_value_marked():
    proc = _procedure(8)
    result = Guard(ScriptedModel(faults={"S6": ["wrong"]}), GuardConfig(chunk_size=4, policy="flag")).run(proc, INPUTS)
    s6 = next(s for s in result.steps if s.var == "S6")
    assert s6.provenance == "flagged" and s6.value != _expected(proc)["S6"]
    assert result.status == "flagged" and result.reprompts == 0
    _assert_no_silent_errors(result, proc)


@pytest.mark.parametrize("on_exhausted", ["raise", "repair", "flag"])
def test_per_step_budget_exhausted(on_exhausted):
    proc = _procedure(8)
    model = ScriptedModel(always_wrong={"S6"})
    cfg = GuardConfig(chunk_size=4, max_reprompts_per_step=2, on_exhausted=on_exhausted)
    if on_exhausted == "raise":
        with pytest.raises(BudgetExhausted) as info:
            Guard(model, cfg).run(proc, INPUTS)
        assert info.value.budget == "reprompts_per_step" and info.value.result.first_unverified == "S6"
        result = info.value.result
    else:
        result = Guard(model, cfg).run(proc, INPUTS)
        s6 = next(s for s in result.steps if s.var == "S6")
        assert s6.provenance == ("repaired" if on_exhausted == "repair" else "flagged")
        assert result.complete
    assert result.reprompts == 2
    _assert_no_silent_errors(result, proc)


def test_run_budget_and_token_budget():
    proc = _procedure(12)
    cfg = GuardConfig(chunk_size=3, max_reprompts_per_run=1, on_exhausted="repair")
    result = Guard(ScriptedModel(faults={"S4": ["wrong"], "S9": ["wrong"]}), cfg).run(proc, INPUTS)
    assert result.reprompts == 1 and result.repaired == 1
    tokens = GuardConfig(chunk_size=3, max_total_tokens=250, on_exhausted="repair")
    result = Guard(ScriptedModel(), tokens).run(proc, INPUTS)
    assert result.usage.model_calls == 3 and result.repaired == 12 - 9
    _assert_no_silent_errors(result, proc)


def test_adaptive_chunking_shrinks_after_a_deviation():
    proc = _procedure(20)
    model = ScriptedModel(faults={"S3": ["wrong"]})
    result = Guard(model, GuardConfig(chunk_size=6, adaptive=True, ladder=("restate",))).run(proc, INPUTS)
    assert result.status == "verified"
    sizes = [c[-1]["content"].split("Steps:\n")[1].split("\n\n")[0].count(" = ") for c in model.calls]
    assert sizes[0] == 6 and sizes[1] == 3 and max(sizes[2:]) > 3


async def test_arun_matches_run():
    proc = _procedure(12)
    a = await Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5)).arun(proc, INPUTS)
    b = Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5)).run(proc, INPUTS)
    assert a.values == b.values and a.reprompts == b.reprompts == 1


def test_result_serializes_to_json():
    from stepguard import GuardResult

    result = Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5)).run(_procedure(12), INPUTS)
    again = GuardResult.model_validate_json(result.model_dump_json())
    assert again == result


def test_decompose_rung_splits_the_step_into_checked_place_value_sub_steps():
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "S1", "expr": "a"}, {"var": "S2", "expr": "b"}, {"var": "S3", "expr": "S1 + S2"}]})
    model = ScriptedModel(faults={"S3": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("decompose",))).run(proc, {"a": 204, "b": 192})
    assert result.status == "verified" and result.answer == 396
    assert result.rung_fixes() == {"decompose": 1}
    sub_prompt = model.calls[1][-1]["content"]
    assert "t1 = 204 + 100" in sub_prompt and "S3 = t2 + 2" in sub_prompt
    assert result.usage.model_calls == len(model.calls) == 2


def test_a_right_value_is_accepted_whatever_form_its_working_took():
    """Qwen writes 'S14 = S12 - S13 = -517 - (-168) = -517 + 168 = -349': right, not a confusion."""
    from stepguard.trace import parse_trace
    from stepguard.verify import verify_chunk

    proc = Procedure.model_validate({"inputs": ["a", "b"], "steps": [{"var": "S3", "expr": "a - b"}, {"var": "S4", "expr": "S3 + b"}]})
    env = {"a": -517, "b": -168}
    ok = verify_chunk(proc, 0, 2, env, parse_trace("S3 = a - b = -517 - (-168) = -517 + 168 = -349\nS4 = S3 + b = -349 + (-168) = -349 - 168 = -517"))
    assert ok.deviation is None and [v for _, v in ok.verified] == [-349, -517]
    wrong_operand = verify_chunk(proc, 0, 2, env, parse_trace("S3 = a - b = -517 - 168 = -685"))
    assert wrong_operand.deviation.kind == "lookback_confusion"
    wrong_sum = verify_chunk(proc, 0, 2, env, parse_trace("S3 = a - b = -517 - (-168) = -339"))
    assert wrong_sum.deviation.kind == "arithmetic_error"


def test_commute_rung_asks_the_step_alone_over_swapped_operand_values():
    """171 - (-168) is asked as 168 + 171: the committed operands, never the answer (339)."""
    proc = Procedure.model_validate({"name": "c", "inputs": ["a", "b"], "steps": [
        {"var": "S1", "expr": "a"}, {"var": "S2", "expr": "b"}, {"var": "S3", "expr": "S1 - S2"}, {"var": "S4", "expr": "S3 + S1"}]})
    model = ScriptedModel(faults={"S3": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("commute",))).run(proc, {"a": 171, "b": -168})
    assert result.status == "verified" and result.values["S3"] == 339 and result.answer == 510
    assert result.rung_fixes() == {"commute": 1}
    sub_steps = model.calls[1][-1]["content"].split("Steps:\n")[1].split("\n\n")[0]
    assert sub_steps == "S3 = 168 + 171" and "339" not in model.calls[1][-1]["content"]
    assert all(s.provenance == "model_verified" for s in result.steps)


@pytest.mark.parametrize("expr,env,asked", [
    ("a - b", {"a": 171, "b": -168}, "168 + 171"),
    ("a - b", {"a": -517, "b": 168}, "-168 - 517"),
    ("a + b", {"a": -517, "b": 168}, "168 - 517"),
    ("a * b", {"a": 5, "b": -3}, "(-3) * 5"),
])
def test_commute_step_swaps_operands_and_folds_signs_without_changing_the_value(expr, env, asked):
    from stepguard.evaluator import compile_expression
    from stepguard.guard.rungs.arith.commute import commute_step

    proc = Procedure.model_validate({"inputs": ["a", "b"], "steps": [{"var": "S1", "expr": expr}]})
    sub = commute_step(proc, 0, env)
    assert sub is not None and sub.steps[0].expr == asked
    assert compile_expression(asked).evaluate({}) == compile_expression(expr).evaluate(env)


def test_commute_step_leaves_other_expressions_to_the_plain_single_step_ask():
    from stepguard.guard.rungs.arith.commute import commute_step

    proc = Procedure.model_validate({"inputs": ["a", "b"], "steps": [{"var": "S1", "expr": "max(a, b)"}]})
    assert commute_step(proc, 0, {"a": 1, "b": 2}) is None


def test_chunk_prompt_says_how_many_lines_and_names_the_first_and_last_step():
    proc = _procedure(12)
    model = ScriptedModel()
    Guard(model, GuardConfig(chunk_size=5)).run(proc, INPUTS)
    assert "Write 5 lines, one for each step from S6 to S10, in order" in model.calls[1][-1]["content"]
    assert "Write 2 lines, one for each step from S11 to S12, in order" in model.calls[2][-1]["content"]


def test_default_ladder_counts_a_derived_rung_as_narrow_where_it_cannot_apply():
    """``max(S1, 3)`` is not one +, - or * of two integers: commute and decompose ask it alone (narrow, then resample)."""
    proc = Procedure.model_validate({"inputs": ["a"], "steps": [
        {"var": "S1", "expr": "a"}, {"var": "S2", "expr": "max(S1, 3)"}]})
    result = Guard(ScriptedModel(faults={"S2": ["wrong", "wrong"]}), GuardConfig()).run(proc, {"a": 5})
    assert result.status == "verified"
    assert [d.rung for d in result.deviations] == ["narrow", "resample"]


def _sub_proc(name: str = "c", var: str = "S3") -> Procedure:
    return Procedure.model_validate({"name": name, "inputs": ["a", "b"], "steps": [
        {"var": "S1", "expr": "a"}, {"var": "S2", "expr": "b"}, {"var": var, "expr": "S1 - S2"}]})


def test_a_derived_rung_that_fails_passes_on_the_models_value_so_it_can_be_flagged():
    """The nested run's wrong value is a wrong value (not a missing step), and is flagged at exhaustion."""
    proc = _sub_proc()
    result = Guard(ScriptedModel(always_wrong={"S3"}), GuardConfig(ladder=("commute",), max_reprompts_per_step=2,
                                                                   on_exhausted="flag")).run(proc, {"a": 171, "b": -168})
    assert [d.kind for d in result.deviations][:3] == ["arithmetic_error"] * 3
    assert result.status == "flagged" and result.first_unverified == "S3"
    s3 = next(s for s in result.steps if s.var == "S3")
    assert s3.provenance == "flagged" and s3.value is not None and s3.value != 339


def test_fallback_for_a_step_no_derived_rung_fits_never_resends_the_same_request():
    proc = Procedure.model_validate({"inputs": ["a"], "steps": [{"var": "S1", "expr": "a"}, {"var": "S2", "expr": "max(S1, 3)"}]})
    model = ScriptedModel(faults={"S2": ["wrong", "wrong", "wrong", None]})
    result = Guard(model, GuardConfig()).run(proc, {"a": 5})
    assert [d.rung for d in result.deviations] == ["narrow", "resample", "resample"]
    requests = list(zip(model.calls, model.settings))
    assert all(a != b for a, b in zip(requests, requests[1:]))


@pytest.mark.parametrize("rung", ["commute", "decompose", "bridge"])
def test_derived_rungs_survive_long_names_and_sub_step_like_variable_names(rung):
    proc = _sub_proc(name="x" * 200, var="t1")
    result = Guard(ScriptedModel(faults={"t1": ["wrong"]}), GuardConfig(ladder=(rung,))).run(proc, {"a": 1234, "b": -5678})
    assert result.status == "verified" and result.values["t1"] == 6912
    assert result.rung_fixes() == {rung: 1}


def test_an_empty_ladder_is_refused():
    with pytest.raises(ValueError, match="at least one rung"):
        GuardConfig(ladder=())


@pytest.mark.parametrize(("reply", "verified"), [
    ("s = 10.005\ns = 11", False),          # the model corrected itself to a wrong value after the right one
    ("s = 10.005\ns = 10.01", True),        # the same value again, at the step's places, is a restatement
    ("s = 10.01\ns = 10.005", True),
])
def test_a_step_written_again_with_another_value_is_not_verified(reply: str, verified: bool) -> None:
    """Read numbers exactly or refuse them: two values for one step are refused, not the first taken."""
    from fractions import Fraction

    from stepguard.trace import parse_trace
    from stepguard.verify import verify_chunk

    proc = Procedure.model_validate({"inputs": ["a", "b"], "steps": [
        {"var": "s", "expr": "a + b", "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"}]})
    verdict = verify_chunk(proc, 0, 1, {"a": 4, "b": Fraction("6.005")}, parse_trace(reply, var_names=proc.variables))
    assert bool(verdict.verified) is verified
    if not verified:
        assert verdict.deviation.kind == "extra_steps" and "written again with a different value" in verdict.deviation.detail


@pytest.mark.parametrize(("reply", "verified"), [
    ("s = 10.01\ns = 10.005\nt = s + 1 = 11.01", ["s", "t"]),   # restated unrounded inside the chunk: the same value
    ("s = 10.005\ns = 10.01\nt = s + 1 = 11.01", ["s", "t"]),
    ("s = 10.01\ns = 11\nt = s + 1 = 11.01", ["s"]),            # restated with another value before the next step
])
def test_a_step_restated_inside_its_chunk_is_compared_as_the_step_rounds(reply: str, verified: list[str]) -> None:
    """A restatement inside the chunk is rounded by the step's rule before it is compared, as one after the chunk is."""
    from fractions import Fraction

    from stepguard.trace import parse_trace
    from stepguard.verify import verify_chunk

    proc = Procedure.model_validate({"inputs": ["a", "b"], "steps": [
        {"var": "s", "expr": "a + b", "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"},
        {"var": "t", "expr": "s + 1", "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"}]})
    verdict = verify_chunk(proc, 0, 2, {"a": 4, "b": Fraction("6.005")}, parse_trace(reply, var_names=proc.variables))
    assert [var for var, _ in verdict.verified] == verified
    if len(verified) < 2:
        assert verdict.deviation.kind == "extra_steps" and "written again with a different value" in verdict.deviation.detail


@pytest.mark.parametrize(("reply", "verified"), [
    ("big = true\nbig = true\nn = a + 1 = 8", ["big", "n"]),      # the same boolean again, inside the chunk
    ("big = true\nn = a + 1 = 8\nbig = false", ["big", "n"][:0]),  # contradicted after the chunk: neither is taken
    ("tier = 2\nbig = true\nn = a + 1 = 8\ntier = 2", ["tier", "big", "n"]),  # a choice named like a number, again
    ("tier = 2\ntier = 1\nbig = true\nn = a + 1 = 8", ["tier"]),
])
def test_text_steps_restated_are_read_as_their_own_line_is(reply: str, verified: list[str]) -> None:
    """A boolean or choice written again is read as the step reads it: the same value is a restatement,
    another one is refused, wherever it comes."""
    from stepguard.trace import parse_trace
    from stepguard.verify import verify_chunk

    steps = [{"var": "big", "expr": "a > 5", "type": "boolean"}, {"var": "n", "expr": "a + 1"}]
    if reply.startswith("tier"):
        steps.insert(0, {"var": "tier", "expr": "'2' if a > 5 else '1'", "type": "one_of", "choices": ["1", "2"]})
    proc = Procedure.model_validate({"inputs": ["a"], "steps": steps})
    verdict = verify_chunk(proc, 0, len(steps), {"a": 7}, parse_trace(reply, var_names=proc.variables))
    assert [var for var, _ in verdict.verified] == verified
    if len(verified) < len(steps):
        assert verdict.deviation.kind == "extra_steps" and "written again with a different value" in verdict.deviation.detail


@pytest.mark.parametrize(("reply", "verified", "refused", "noted"), [
    ("t = s + 1 = 11\nu = t * 2 = 22", ["t", "u"], False, False),
    ("t = s + 1 = 11\nu = t * 2 = 22\ns = 10", ["t", "u"], False, False),     # the committed value again
    ("t = s + 1 = 11\nu = t * 2 = 22\ns = 12", ["t", "u"], False, True),      # another value, after the chunk: noted
    ("t = s + 1 = 11\ns = 12\nu = t * 2 = 22", ["t"], True, False),           # before the chunk's end: refused
    ("t = s + 1 = 11\nu = t * 2 = 22\nt = 12", [], True, False),              # this chunk's own step after it: refused
    ("t = s + 1 = 11\nu = t * 2 = 22, t = 12", [], True, False),             # ... on the last step's own line too
    ("t = s + 1 = 11, u = t * 2 = 22; so t = 12", [], True, False),           # ... or all on one line
    ("t = s + 1 = 11\nu = t * 2 = 22, s = 12", ["t", "u"], False, True),     # an earlier step on that line: noted
])
def test_an_earlier_chunks_step_written_again_after_the_chunk_is_noted_not_taken(
        reply: str, verified: list[str], refused: bool, noted: bool) -> None:
    """Wherever a contradicting restatement comes, no value of it is taken; one of an earlier chunk's
    step after this chunk is recorded as a note (the committed value stands), one inside is refused."""
    from stepguard.trace import parse_trace
    from stepguard.verify import verify_chunk

    proc = Procedure.model_validate({"inputs": ["a"], "steps": [
        {"var": "s", "expr": "a + 5"}, {"var": "t", "expr": "s + 1"}, {"var": "u", "expr": "t * 2"}]})
    verdict = verify_chunk(proc, 1, 3, {"a": 5, "s": 10}, parse_trace(reply, var_names=proc.variables))
    assert [var for var, _ in verdict.verified] == verified
    assert (verdict.deviation is not None) is refused
    notes = [d for d in verdict.others if d.kind == "extra_steps"]
    assert bool(notes) is noted
    if noted:
        assert notes[0].step == "s" and "its committed value stands" in notes[0].detail and notes[0].got.endswith("s = 12")


def test_a_check_that_disagrees_on_flagged_values_names_them_not_the_procedure() -> None:
    """Shadow mode keeps the model's wrong net; total's expr and check then disagree on it. The
    message blamed the procedure ("contradicts itself") without saying which values it read."""
    from stepguard import load_procedure
    from tests._fakes import ReplyModel

    proc = load_procedure("examples/invoice.yaml")
    model = ReplyModel(["discount = 6.00", "net = 115.00", "tax = 23.00", "total = 138.00"] * 3)
    result = Guard(model, GuardConfig(policy="flag", chunk_size=1)).run(proc, {"subtotal": "120.00", "rate": "0.2"})
    assert result.status != "verified"
    detail = next(d.detail for d in result.deviations if d.step == "total")
    assert "on the values it reads (" in detail and "net = 115" in detail, detail


@pytest.mark.parametrize(("field", "value", "says"), [
    ("temperature", float("nan"), "temperature must be a number from 0 to 2"),
    ("resample_temperature", float("inf"), "resample_temperature must be a number from 0 to 2"),
    ("temperature", -0.1, "from 0 to 2"), ("chunk_size", True, "chunk_size must be a whole number"),
    ("seed", 1.0, "seed must be a whole number"), ("adaptive", "false", "adaptive must be true or false"),
    ("max_tokens_per_step", 0, "max_tokens_per_step must be a whole number from 1"),
    ("max_wall_s", True, r"max_wall_s must be positive seconds, finite \(or None\), not True"),
    ("extra", "x", "extra must map text to text"),
    ("prompt_dir", 5, "prompt_dir must be a folder path"), ("seed", 2**200, "seed must be a whole number"),
    ("chunk_size", None, "chunk_size must be a whole number"), ("ladder", "bridge", "ladder must be a sequence of rung names"),
])
def test_guard_config_refuses_values_of_the_wrong_kind(field: str, value: object, says: str) -> None:
    """NaN temperatures and True as a chunk size passed every caller that did not check them itself."""
    with pytest.raises(ValueError, match=says):
        GuardConfig(**{field: value})  # type: ignore[arg-type]
