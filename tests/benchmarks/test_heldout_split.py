"""The held-out split of the production procedures (docs/heldout.md, benchmarks/production_split.yaml).

Every new procedure loads and passes ``stepguard check``; the evaluator's value of every step of
every input set equals the one its folder's own ``_expected.py`` computes from the rule with
Python's ``decimal`` module (no stepguard import); the manifest names every procedure exactly
once, in the set its folder belongs to; the test set runs alone as a suite, and every case ends
verified under the guard on ``sim:perfect``.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.bench.suites import load_suite, suite_files
from stepguard.cli import app
from stepguard.procedure import load_procedure
from tests._paths import ROOT

MANIFEST = ROOT / "benchmarks" / "production_split.yaml"
TEST_SET = ROOT / "benchmarks" / "production" / "test"
NEW_FOLDERS = {"test": TEST_SET, "dev": ROOT / "benchmarks" / "production" / "dev"}


def _script(folder: Path) -> ModuleType:
    """The folder's ``_expected.py``, loaded from its path (it is data's script, not a package)."""
    spec = importlib.util.spec_from_file_location(f"_expected_{folder.name}", folder / "_expected.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPTS = {key: _script(folder) for key, folder in NEW_FOLDERS.items()}
NEW = [(key, name) for key, module in SCRIPTS.items() for name in sorted(module.PROCEDURES)]


def _manifest() -> dict[str, Any]:
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("key", sorted(NEW_FOLDERS))
def test_the_expected_values_scripts_do_not_use_stepguard(key: str) -> None:
    """The expectations are independent of the evaluator: the script imports no stepguard module."""
    tree = ast.parse((NEW_FOLDERS[key] / "_expected.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"stepguard", "adapters"}}, imported


@pytest.mark.parametrize("key", sorted(NEW_FOLDERS))
def test_one_independent_function_per_procedure_file(key: str) -> None:
    stems = sorted(p.stem for p, _ in suite_files(NEW_FOLDERS[key]))
    assert stems == sorted(SCRIPTS[key].PROCEDURES)


def test_at_least_fifteen_new_procedures_most_of_them_held_out() -> None:
    assert len(NEW) >= 15
    assert len(SCRIPTS["test"].PROCEDURES) >= 12
    steps = [len(load_procedure(NEW_FOLDERS[k] / f"{n}.yaml").steps) for k, n in NEW]
    assert min(steps) >= 5 and max(steps) <= 12 and max(steps) >= 10, steps


@pytest.mark.slow
@pytest.mark.parametrize(("key", "name"), NEW)
def test_a_new_procedure_loads_checks_and_has_three_input_sets(key: str, name: str) -> None:
    path = NEW_FOLDERS[key] / f"{name}.yaml"
    proc = load_procedure(path)
    assert proc.description and len(proc.description) > 80, name
    assert 5 <= len(proc.steps) <= 12, name
    assert len(SCRIPTS[key].input_sets(NEW_FOLDERS[key], name)) == 3, name
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    assert f"procedure '{name}' is valid" in out.output


@pytest.mark.parametrize(("key", "name"), NEW)
def test_the_evaluator_agrees_with_the_independent_values(key: str, name: str) -> None:
    folder, script = NEW_FOLDERS[key], SCRIPTS[key]
    proc = load_procedure(folder / f"{name}.yaml")
    for set_id, inputs in script.input_sets(folder, name):
        want = script.expected(name, inputs)
        got = proc.expected_values(inputs)
        assert set(got) == set(want) == set(proc.variables), (name, set_id)
        for var in proc.variables:
            assert got[var] == want[var], f"{name}/{set_id}: {var} = {got[var]} by the evaluator, {want[var]} by the rule"


def test_the_issues_effective_rate_is_26_69_percent() -> None:
    """Issue 44: tax 19060 on income 71400 is an effective rate of 26.69% (26.6946..., half to even)."""
    folder = NEW_FOLDERS["dev"]
    inputs = dict(SCRIPTS["dev"].input_sets(folder, "income_tax_rate"))["higher-band"]
    values = load_procedure(folder / "income_tax_rate.yaml").expected_values(inputs)
    assert values["tax"] == Decimal("19060") and values["effective_rate_pct"] == Decimal("26.69")


def test_the_manifest_names_every_procedure_exactly_once_in_its_folders_set() -> None:
    data = _manifest()
    assert set(data["folders"]) == {"development", "test"} and data["rule"].strip()
    listed = [(ROOT / e["file"]).resolve() for e in data["procedures"]]
    assert len(listed) == len(set(listed)), "a procedure is listed twice"
    want: dict[Path, str] = {}
    for set_name, folders in data["folders"].items():
        for folder in folders:
            for proc_file, _ in suite_files(ROOT / folder):
                assert proc_file.resolve() not in want, f"{proc_file} is in two sets' folders"
                want[proc_file.resolve()] = set_name
    got = {(ROOT / e["file"]).resolve(): e["set"] for e in data["procedures"]}
    assert got == want


def test_the_split_is_by_procedure_and_the_test_set_holds_none_of_the_tuned_ones() -> None:
    data = _manifest()
    test_names = {Path(e["file"]).stem for e in data["procedures"] if e["set"] == "test"}
    dev_names = {Path(e["file"]).stem for e in data["procedures"] if e["set"] == "development"}
    assert not test_names & dev_names
    tuned = {p.stem for p, _ in suite_files(ROOT / "benchmarks" / "production")}
    assert len(tuned) == 13 and tuned <= dev_names and not tuned & test_names
    assert test_names == set(SCRIPTS["test"].PROCEDURES)


def test_the_test_set_runs_alone_as_a_suite() -> None:
    """``bench run --instances benchmarks/production/test`` reads the test set and nothing else."""
    cases = load_suite(TEST_SET)
    assert {c.procedure_name for c in cases} == set(SCRIPTS["test"].PROCEDURES)
    assert len(cases) == 3 * len(SCRIPTS["test"].PROCEDURES)
    assert {c.procedure_name for c in load_suite(ROOT / "benchmarks" / "production")}.isdisjoint(SCRIPTS["test"].PROCEDURES)


@pytest.mark.slow
@pytest.mark.parametrize(("key", "name"), NEW)
def test_guard_verifies_every_new_case_on_sim_perfect(key: str, name: str) -> None:
    folder, script = NEW_FOLDERS[key], SCRIPTS[key]
    proc = load_procedure(folder / f"{name}.yaml")
    guard = Guard(load_model("sim:perfect", procedure=proc))
    for set_id, inputs in script.input_sets(folder, name):
        want = script.expected(name, inputs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`durability` has no effect")
            result = guard.run(proc, inputs)
        assert result.status == "verified", (name, set_id, result.status)
        for step in proc.steps:
            assert result.values[step.var] == want[step.var], f"{name}/{set_id}: {step.var}"
        assert result.answer == want[proc.answer_var]
