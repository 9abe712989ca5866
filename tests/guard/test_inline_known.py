"""GuardConfig.inline_known: a step's operands written into its line, as the production rungs ask."""

from __future__ import annotations

from decimal import Decimal

from stepguard import Guard, GuardConfig, load_procedure
from stepguard.adapters import load_model
from stepguard.guard import PromptSet
from stepguard.procedure import Procedure

from tests._fakes import ScriptedModel


def _proc() -> Procedure:
    return Procedure.model_validate({
        "name": "p", "inputs": [{"name": "t1", "type": "decimal"}, {"name": "t10", "type": "decimal"},
                                {"name": "tier", "type": "string"}, {"name": "flag", "type": "boolean"}],
        "steps": [{"var": "s", "expr": "t10 - t1 if flag and tier == 'gold' else -t1", "type": "decimal", "scale": 2}],
    })


def test_values_are_written_into_the_line_exactly_and_the_known_list_is_empty() -> None:
    env = {"t1": Decimal("-2.5"), "t10": Decimal("7"), "tier": "gold", "flag": False}
    user = PromptSet().chunk_messages(_proc(), [0], env, inline=True)[-1]["content"]
    assert "s = 7 - (-2.5) if False and 'gold' == 'gold' else -(-2.5)" in user  # t1 not replaced inside t10
    assert "Known values:\n(none)" in user
    listed = PromptSet().chunk_messages(_proc(), [0], env)[-1]["content"]  # the default lists them instead
    assert "t1 = -2.5" in listed and "s = t10 - t1 if flag" in listed and "flag = False" in listed


def test_a_run_with_inline_known_verifies_every_production_step_on_sim_perfect() -> None:
    proc = load_procedure("benchmarks/production/invoice.yaml")
    with load_model("sim:perfect", procedure=proc) as model:
        result = Guard(model, GuardConfig(chunk_size=1, inline_known=True)).run(
            proc, {"quantity": 15, "unit_price": "86.83", "vat_rate": "0.20"})
    assert result.status == "verified" and result.answer == Decimal("1406.64")  # 1302.45, less 130.25 (half up), plus VAT 234.44


def test_the_scripted_model_sees_operands_not_names() -> None:
    proc = load_procedure("benchmarks/production/invoice.yaml")
    model = ScriptedModel()
    Guard(model, GuardConfig(chunk_size=1, inline_known=True)).run(proc, {"quantity": 3, "unit_price": "19.99", "vat_rate": "0.20"})
    asked = [call[-1]["content"] for call in model.calls]
    assert "subtotal = 3 * 19.99" in asked[0]
    assert "discount_rate = 0.10 if 59.97 >= 1000 else (0.05 if 59.97 >= 500 else 0)" in asked[1]


def test_a_tool_steps_arguments_stay_listed_when_values_are_written_inline() -> None:
    """With inline_known the known values were dropped for every step, so a tool call's argument
    (``name: person``) had no value in the prompt and the age_power example failed on sim:perfect."""
    import sys

    from stepguard import Guard, GuardConfig, load_procedure
    from stepguard.adapters import load_model

    sys.path.insert(0, "examples")
    import agent_tools

    proc = load_procedure("examples/age_power.yaml")
    model = load_model("sim:perfect", procedure=proc)
    result = Guard(model, GuardConfig(chunk_size=1, inline_known=True), tools=agent_tools.TOOLS).run(proc, {"person": "Ada Lovelace"})
    assert result.status == "verified" and str(result.answer) == "2.28"
