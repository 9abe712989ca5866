"""Messages name the cause a user can act on (issue 45), not the step that shows it.

The faults: a step whose check is false on the value its expr gives was said to "contradict itself"
when the cause was an input (``-i billed=-5``) or a value flagged earlier; a reply cut short because
``max_total_tokens`` capped the call was recorded as a missing value (``under_executed``/``truncated``)
while the CLI said "tokens budget spent". Neighbours: every way in (CLI, ``Guard.run``, the proxy's
400), a step that reads no value (it does contradict itself), an expr and check that disagree, a
cut line holding part of a number, and a reply cut short with budget left (a model's own fault).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig, ProcedureError, parse_procedure
from stepguard.adapters import load_model
from stepguard.cli import app
from stepguard.model import ChatResponse, Usage
from tests._fakes import ReplyModel

CLAIM = """
name: claim
inputs:
  billed: {type: decimal}
  paid: {type: decimal}
steps:
  - {var: owed, expr: billed - paid, type: decimal, scale: 2, check: "value >= 0"}
  - {var: insurer_share, expr: owed * 0.8, type: decimal, scale: 2}
  - {var: patient_share, expr: owed - insurer_share, type: decimal, scale: 2, check: "value >= 0"}
"""
PROC = parse_procedure(CLAIM, "claim.yaml")
BAD_INPUTS = "billed = -5, paid = 0 give step owed no value that passes its check"


def test_an_input_that_fails_a_check_is_named_not_the_step() -> None:
    with pytest.raises(ProcedureError) as info:
        Guard(ReplyModel([])).run(PROC, {"billed": "-5", "paid": "0"})
    assert BAD_INPUTS in str(info.value) and "check the inputs" in str(info.value)
    assert "contradicts itself" not in str(info.value) and info.value.location == "inputs"


def test_the_cli_names_the_input(tmp_path: Path) -> None:
    (tmp_path / "claim.yaml").write_text(CLAIM)
    out = CliRunner().invoke(app, ["run", str(tmp_path / "claim.yaml"), "-i", "billed=-5", "-i", "paid=0", "--model", "sim:perfect"])
    assert out.exit_code == 5 and BAD_INPUTS in out.output and "contradicts itself" not in out.output


def test_the_proxy_names_the_input() -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from stepguard.serve import create_app
    from stepguard.serve._upstream import Upstream

    with TestClient(create_app(Upstream("sim:perfect"), {"claim": PROC})) as proxy:
        reply = proxy.post("/v1/chat/completions", json={"model": "stepguard/claim", "messages": [],
                                                          "stepguard": {"inputs": {"billed": "-5", "paid": "0"}}})
    assert reply.status_code == 400 and BAD_INPUTS in reply.json()["error"]["message"]


def test_a_step_that_reads_no_value_still_contradicts_itself() -> None:
    proc = parse_procedure("name: p\nsteps:\n  - {var: s, expr: 2 - 5, check: 'value >= 0'}\n", "p.yaml")
    with pytest.raises(ProcedureError, match="step s contradicts itself: its check 'value >= 0' is false"):
        proc.expected_values({})


def test_an_expr_and_a_check_that_disagree_still_blame_the_step() -> None:
    proc = parse_procedure("name: p\ninputs: [a]\nsteps:\n  - {var: s, expr: a + 1, check: a + 2}\n", "p.yaml")
    with pytest.raises(ProcedureError, match="contradicts itself: its expr 'a \\+ 1' gives 2 but its check"):
        proc.expected_values({"a": 1})


def test_a_flagged_upstream_value_is_named_as_the_cause() -> None:
    model = ReplyModel(["owed = 100.00", "insurer_share = 180.00", "patient_share = -80.00"])
    result = Guard(model, GuardConfig.for_procedure(PROC, follow=False, policy="flag", chunk_size=1)).run(PROC, {"billed": "100", "paid": "0"})
    detail = next(d.detail for d in result.deviations if d.step == "patient_share")
    assert detail.startswith("patient_share rests on insurer_share, flagged earlier (the model's value, kept unverified)"), detail
    assert "insurer_share = 180" in detail


def test_a_check_that_fails_on_verified_values_names_no_flag() -> None:
    """The neighbour: nothing flagged upstream, the step's own value wrong -> no word of a flag."""
    model = ReplyModel(["owed = 100.00", "insurer_share = 80.00", "patient_share = 21.00"])
    result = Guard(model, GuardConfig.for_procedure(PROC, follow=False, policy="flag", chunk_size=1)).run(PROC, {"billed": "100", "paid": "0"})
    detail = next(d.detail for d in result.deviations if d.step == "patient_share")
    assert "flagged earlier" not in detail


class _Capped:
    """Writes each step's line whole, unless the call's max_tokens is below 20: then it stops mid-line
    (``finish_reason`` ``length``), as a server does at the cap."""

    spec = model_name = "capped"
    provider = "test"
    simulated = True

    def __init__(self, cut: str) -> None:
        self.cut = cut
        self.sim = load_model("sim:perfect")

    def complete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        full = self.sim.complete(messages, None)
        if settings is not None and settings.max_tokens is not None and settings.max_tokens < 20:
            return ChatResponse(self.cut, Usage(60, settings.max_tokens), finish_reason="length", model="capped", simulated=True)
        return ChatResponse(full.text, Usage(60, 10), model="capped", simulated=True)

    async def acomplete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        return self.complete(messages, settings)


@pytest.mark.parametrize("cut", ["patient_share = ", "patient_share = 100.00 - 8", ""])
def test_a_reply_cut_by_the_tokens_budget_is_a_spent_budget(cut: str) -> None:
    """Two calls of 70 tokens leave 10 of 150: the third call is capped at 10 and cut."""
    config = GuardConfig.for_procedure(PROC, follow=False, chunk_size=1, max_total_tokens=150, on_exhausted="flag")
    result = Guard(_Capped(cut), config).run(PROC, {"billed": "100", "paid": "0"})
    dev = next(d for d in result.deviations if d.step == "patient_share")
    assert (dev.kind, dev.detail) == ("budget_exhausted", "the tokens budget ran out while the model was writing step patient_share")


def test_a_reply_cut_with_budget_left_is_the_models() -> None:
    """The neighbour: no run budget, the call's own cap -> the reply's fault stays as it was."""
    model = ReplyModel([ChatResponse("owed = 100.00\ninsurer_share = ", Usage(10, 5), finish_reason="length")])
    result = Guard(model, GuardConfig.for_procedure(PROC, follow=False, chunk_size=3, on_exhausted="flag", max_reprompts_per_step=0)).run(
        PROC, {"billed": "100", "paid": "0"})
    assert all(d.kind != "budget_exhausted" or "tokens budget ran out" not in d.detail for d in result.deviations)
