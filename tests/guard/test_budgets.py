"""Issue 14, items 6, 7 and 16: run-wide budgets hold before every call, nested runs included,
and the per-step re-prompt count is kept for the step a policy ends."""

from __future__ import annotations

import time

import pytest

from stepguard import BudgetExhausted, Guard, GuardConfig, Procedure
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_procedure as _procedure


def _tokens(result) -> int:
    return result.usage.input_tokens + result.usage.output_tokens


@pytest.mark.parametrize("ladder", [("bridge", "decompose", "commute"), ("narrow", "resample")])
def test_the_token_budget_is_checked_before_every_call_nested_runs_included(ladder) -> None:
    model = ScriptedModel(always_wrong={"S4"})
    cfg = GuardConfig(max_total_tokens=130, ladder=ladder, on_exhausted="flag", chunk_size=3)
    result = Guard(model, cfg).run(_procedure(12), INPUTS)
    # each scripted call costs 100 input tokens and a few output: the second starts with under 30
    # left (its max_tokens capped there), and nothing is asked after it (480 tokens before the fix)
    assert len(model.calls) == result.usage.model_calls == 2
    assert model.settings[1].max_tokens < 130 - 100
    assert any(d.kind == "budget_exhausted" or d.action == "flag" for d in result.deviations)
    assert result.status != "verified"


class _Ledger(ScriptedModel):
    """Records the tokens spent before each call, across the parent run and nested rung runs."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.spent, self.before = 0, []

    def complete(self, messages, settings=None):
        self.before.append(self.spent)
        r = super().complete(messages, settings)
        self.spent += r.usage.input_tokens + r.usage.output_tokens
        return r


@pytest.mark.parametrize("budget", [300, 450, 700])
def test_no_call_starts_once_the_budget_is_spent_inside_derived_rungs(budget: int) -> None:
    model = _Ledger(always_wrong={"S4"})
    cfg = GuardConfig(max_total_tokens=budget, ladder=("bridge", "decompose"), on_exhausted="flag", chunk_size=3,
                      max_reprompts_per_step=5)
    result = Guard(model, cfg).run(_procedure(12), INPUTS)
    assert len(model.before) > 2  # the nested runs were entered
    assert all(b < budget for b in model.before), (budget, model.before)
    assert _tokens(result) == model.spent


def test_each_call_asks_at_most_the_tokens_left() -> None:
    model = ScriptedModel()
    Guard(model, GuardConfig(max_total_tokens=150, on_exhausted="flag", chunk_size=2)).run(_procedure(12), INPUTS)
    assert model.settings[0].max_tokens == 2 * GuardConfig.max_tokens_per_step + 32
    assert len(model.settings) >= 2
    assert all(s.max_tokens <= 150 - 100 for s in model.settings[1:])  # the first call's 100 input tokens are gone


def test_a_spent_token_budget_raises_naming_it() -> None:
    with pytest.raises(BudgetExhausted) as err:
        Guard(ScriptedModel(), GuardConfig(max_total_tokens=150, chunk_size=2)).run(_procedure(12), INPUTS)
    assert err.value.budget == "tokens"
    kinds = {d.kind for d in err.value.result.deviations}
    assert "budget_exhausted" in kinds and "truncated" not in kinds


class _Slow(ScriptedModel):
    def complete(self, messages, settings=None):
        time.sleep(0.25)
        return super().complete(messages, settings)


@pytest.mark.slow
@pytest.mark.parametrize("ladder", [("narrow",), ("bridge", "decompose")])
def test_the_wall_clock_budget_stops_the_run_before_the_next_call(ladder) -> None:
    model = _Slow(always_wrong={"S3"})
    cfg = GuardConfig(max_wall_s=0.6, chunk_size=1, ladder=ladder, max_reprompts_per_step=50)
    with pytest.raises(BudgetExhausted) as err:
        Guard(model, cfg).run(_procedure(12), INPUTS)
    assert err.value.budget == "wall_time"
    # bounded work: 0.6 s of 0.25 s calls allows 3 calls (the third starts before the limit)
    assert len(model.calls) <= 3, len(model.calls)


@pytest.mark.parametrize("on_exhausted", ["flag", "raise", "repair"])
def test_the_reprompts_column_counts_the_reprompts_of_the_step_a_policy_ends(on_exhausted: str) -> None:
    model = ScriptedModel(always_wrong={"S5"})
    cfg = GuardConfig(max_reprompts_per_step=3, ladder=("narrow", "resample"), on_exhausted=on_exhausted)
    if on_exhausted == "raise":
        with pytest.raises(BudgetExhausted) as err:
            Guard(model, cfg).run(_procedure(8), INPUTS)
        result = err.value.result
    else:
        result = Guard(model, cfg).run(_procedure(8), INPUTS)
    s5 = next(s for s in result.steps if s.var == "S5")
    assert s5.reprompts == 3
    assert s5.provenance == {"flag": "flagged", "raise": "missing", "repair": "repaired"}[on_exhausted]


def test_budget_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="max_total_tokens"):
        GuardConfig(max_total_tokens=0)
    with pytest.raises(ValueError, match="max_wall_s"):
        GuardConfig(max_wall_s=-1)


def test_unbounded_runs_are_unchanged() -> None:
    model = ScriptedModel()
    result = Guard(model, GuardConfig()).run(_procedure(12), INPUTS)
    assert result.status == "verified"
    assert all(s.max_tokens == 5 * GuardConfig.max_tokens_per_step + 32 for s in model.settings[:-1])


def test_proc_fixture_is_long_enough() -> None:
    assert isinstance(_procedure(12), Procedure) and len(_procedure(12).steps) == 12
