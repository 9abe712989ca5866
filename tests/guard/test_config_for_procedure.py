"""Defaults chosen by the procedure's kind of steps (issue 16: "defaults re-chosen from it").

A new user who runs a production procedure with the defaults got refusals, because the default
ladder only knows integer sums; a guard given no configuration now picks the production settings
for such a procedure, and keeps the measured benchmark defaults for integer sums.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig, Procedure, load_procedure
from stepguard.guard._config import PRODUCTION_SETTINGS, RUN_SETTINGS, beyond_integer_sums
from tests._fakes import ScriptedModel
from tests._paths import ROOT

SUITE = ROOT / "benchmarks" / "production"


def _proc(expr: str, **step: object) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [{"var": "s", "expr": expr, **step}]})


@pytest.mark.parametrize(("expr", "step", "beyond"), [
    ("a + b", {}, False),
    ("a - b + 3", {}, False),
    ("-a + b", {}, False),
    ("a * b", {}, True),
    ("a / b", {"type": "decimal", "scale": 2}, True),
    ("a + b", {"type": "decimal", "scale": 2}, True),  # a decimal sum
    ("min(a, b)", {}, True),
    ("a if a > b else b", {}, True),
    ("a % b", {}, True),
])
def test_what_counts_as_beyond_integer_sums(expr: str, step: dict, beyond: bool) -> None:
    assert beyond_integer_sums(_proc(expr, **step)) is beyond


@pytest.mark.parametrize("path", sorted(p for p in SUITE.glob("*.yaml") if not p.name.endswith((".inputs.yaml", ".prompt.yaml"))), ids=lambda p: p.stem)
def test_every_production_procedure_gets_the_production_settings(path: Path) -> None:
    config = GuardConfig.for_procedure(load_procedure(path))
    assert (config.ladder, config.chunk_size, config.inline_known) == (
        PRODUCTION_SETTINGS["ladder"], PRODUCTION_SETTINGS["chunk_size"], PRODUCTION_SETTINGS["inline_known"])


def test_fields_given_win_over_the_chosen_defaults() -> None:
    config = GuardConfig.for_procedure(_proc("a * b"), chunk_size=3, on_exhausted="flag")
    assert (config.chunk_size, config.on_exhausted, config.ladder) == (3, "flag", PRODUCTION_SETTINGS["ladder"])
    assert GuardConfig.for_procedure(_proc("a + b")) == GuardConfig(**RUN_SETTINGS)
    assert GuardConfig.for_procedure(_proc("a + b"), streamed=False) == GuardConfig(substeps_together=True)  # chunked asked


def test_a_guard_without_a_configuration_asks_a_product_one_step_a_call_and_splits_it() -> None:
    proc = Procedure.model_validate({"name": "p", "inputs": [{"name": "a", "type": "decimal"}, {"name": "b", "type": "decimal"}],
                                     "steps": [{"var": "s", "expr": "a * b", "type": "decimal", "scale": 2},
                                               {"var": "u", "expr": "s + 1", "type": "decimal", "scale": 2}]})
    model = ScriptedModel(faults={"s": ["wrong"]})
    result = Guard(model).run(proc, {"a": "72.5", "b": "15"})
    assert result.status == "verified"
    assert result.deviations[0].rung == "split"  # the production ladder, not bridge
    assert all(m[-1]["content"].count(" = <result>") <= 1 for m in model.calls)  # one step a call
    assert "72.5 * 15" in model.calls[0][-1]["content"]  # operands written into the line


def test_a_guard_without_a_configuration_keeps_the_benchmark_defaults_for_integer_sums() -> None:
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [
        {"var": "s1", "expr": "a + b"}, {"var": "s2", "expr": "s1 - a"}, {"var": "s3", "expr": "s2 + s1"}]})
    guard = Guard(ScriptedModel())
    assert guard.config_for(proc) == GuardConfig(**RUN_SETTINGS)
    model = ScriptedModel()
    assert Guard(model).run(proc, {"a": 5, "b": 7}).status == "verified"
    assert len(model.calls) == 1  # all three steps in one streamed window


def test_a_configuration_given_is_used_as_it_is() -> None:
    given = GuardConfig(on_exhausted="flag")
    assert Guard(ScriptedModel(), given).config_for(_proc("a * b")) is given


def _cli_chunks(path: str, *args: str) -> tuple[int, int]:
    import json

    from typer.testing import CliRunner

    from stepguard.cli._app import app

    proc = load_procedure(path)
    inputs = [f"-i{i.name}={'7' if i.type != 'decimal' else '12.5'}" for i in proc.inputs]
    out = CliRunner().invoke(app, ["run", path, *inputs, "--model", "sim:perfect", "--json", *args])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    return result["chunks"], len(proc.steps)


@pytest.mark.slow
def test_stepguard_run_picks_the_defaults_by_procedure_and_an_option_given_wins(tmp_path: Path) -> None:
    sums = tmp_path / "sums.yaml"
    sums.write_text("name: sums\ninputs: [a, b]\nsteps:\n  - {var: s1, expr: a + b}\n  - {var: s2, expr: s1 - a}\n  - {var: s3, expr: s2 + s1}\n")
    products = tmp_path / "products.yaml"
    products.write_text("name: products\ninputs: {a: decimal, b: decimal}\nsteps:\n"
                        "  - {var: s1, expr: a * b, type: decimal, scale: 2}\n  - {var: s2, expr: s1 + a, type: decimal, scale: 2}\n"
                        "  - {var: s3, expr: \"max(s2, 100)\", type: decimal, scale: 2}\n")
    assert _cli_chunks(str(sums)) == (1, 3)  # followed: one window while the model is right
    assert _cli_chunks(str(products)) == (1, 3)
    assert _cli_chunks(str(sums), "--chunked") == (1, 3)  # the benchmark default: five steps a call
    assert _cli_chunks(str(products), "--chunked") == (3, 3)  # beyond integer sums: one step a call
    assert _cli_chunks(str(products), "--chunk-size", "2") == (2, 3)  # an option given wins


def test_the_drop_in_client_and_the_proxy_pick_the_same_defaults_by_procedure() -> None:
    """A guarded call with no configuration on the client or proxy runs as Guard(model) would."""
    from stepguard.serve._options import guarded_request
    from stepguard.wire import read_call

    products = _proc("a * b")
    sums = _proc("a + b")
    procedures = {"products": products, "sums": sums}
    for name, want in (("products", GuardConfig.for_procedure(products)), ("sums", GuardConfig())):
        body = {"model": "m", "messages": [{"role": "user", "content": "go"}],
                "extra_body": {"stepguard": {"procedure": name, "inputs": {"a": 2, "b": 3}}}}
        call = read_call(body, procedures, None)
        assert (call.config.chunk_size, call.config.ladder, call.config.inline_known) == (want.chunk_size, want.ladder, want.inline_known)
        job = guarded_request({"model": "m", "messages": body["messages"], "stepguard": body["extra_body"]["stepguard"]}, procedures)
        assert (job.config.chunk_size, job.config.ladder, job.config.inline_known) == (want.chunk_size, want.ladder, want.inline_known)
    given = GuardConfig(chunk_size=4)
    body = {"model": "m", "messages": [], "extra_body": {"stepguard": {"procedure": "products", "inputs": {"a": 2, "b": 3}}}}
    assert read_call(body, procedures, given).config.chunk_size == 4  # a configuration given is kept


def test_a_decimal_step_checked_by_a_predicate_only_gets_the_decimal_defaults() -> None:
    """New-user pass: a decimal step with a check and no expr got the integer-sum ladder, whose every
    rung then said it does not apply (docs/policies.md: a decimal type or scale gets the production settings)."""
    from stepguard import GuardConfig, Procedure

    proc = Procedure.model_validate({"name": "p", "inputs": {"gross": "decimal"}, "steps": [
        {"var": "withholding", "check": "0 <= value <= gross", "type": "decimal", "scale": 2}]})
    config = GuardConfig.for_procedure(proc)
    assert config.chunk_size == 1 and config.ladder[0] == "split", config
