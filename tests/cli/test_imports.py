"""Start-up stays light (issue 15, item 5): the short commands import none of the heavy modules.

Each command runs in a fresh interpreter, which then reports every module it loaded; the time
those imports cost is measured, not asserted, by ``benchmarks/bench_cli_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import ROOT

pytestmark = pytest.mark.slow

HEAVY = ("langgraph", "langchain_core", "matplotlib", "opentelemetry.sdk", "openai", "scipy")
"""Modules none of ``stepguard --help``, ``check``, ``init`` (and the other help screens) may load."""

_CHILD = """
import json, sys
from stepguard.cli import main
sys.argv = ["stepguard", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
with open(OUT, "w") as fh:
    json.dump({"code": code, "modules": sorted(sys.modules)}, fh)
"""


def _loaded(args: list[str], tmp_path: Path) -> tuple[int, set[str], str]:
    """Run ``stepguard *args`` in a fresh interpreter; its exit code, loaded modules and stdout."""
    out = tmp_path / "modules.json"
    child = _CHILD.replace("OUT", repr(str(out)))
    proc = subprocess.run([sys.executable, "-c", child, json.dumps(args)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    report = json.loads(out.read_text(encoding="utf-8"))
    return report["code"] or 0, set(report["modules"]), proc.stdout


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["--version"], ["check", "examples/invoice.yaml"],
    ["bench", "--help"], ["bench", "generate", "--help"], ["model", "--help"], ["serve", "--help"],
    ["run", "--help"], ["bench", "run", "--help"],
])
def test_short_commands_load_no_heavy_module(args: list[str], tmp_path: Path) -> None:
    code, modules, stdout = _loaded(args, tmp_path)
    assert code == 0, stdout
    assert stdout.strip()  # it did its work: a help text, the version, a checked procedure
    assert _heavy(modules) == []


def test_init_loads_no_heavy_module(tmp_path: Path) -> None:
    target = tmp_path / "p.yaml"
    code, modules, stdout = _loaded(["init", str(target)], tmp_path)
    assert code == 0 and target.is_file(), stdout
    assert _heavy(modules) == []


def test_check_reads_the_procedure_yet_not_the_guard(tmp_path: Path) -> None:
    code, modules, stdout = _loaded(["check", "examples/invoice.yaml"], tmp_path)
    assert code == 0 and "is valid" in stdout
    assert "stepguard.procedure" in modules  # the probe sees what the command imports...
    assert "stepguard.guard" not in modules and "stepguard.bench" not in modules  # ...and what it does not
    # nor the stepwise verifier and the raw-mode scorer: the kinds need only the deviation vocabulary
    assert "stepguard.verify._stepwise" not in modules and "stepguard.verify._taxonomy" not in modules


def test_run_help_lists_the_rungs_without_loading_the_controller(tmp_path: Path) -> None:
    """``run --help`` names every registered rung (the rung registry is read) yet loads no LangGraph:
    the guard package loads its modules on first use (a regression of the rung plugins cost 1 s)."""
    code, modules, stdout = _loaded(["run", "--help"], tmp_path)
    assert code == 0 and "--chunk-size N" in stdout and "long_multiply" in stdout
    assert "stepguard.guard.rungs" in modules and "stepguard.guard._graph" not in modules


def test_a_run_does_load_the_guard(tmp_path: Path) -> None:
    """The control: a command that runs the controller imports LangGraph, and the probe sees it."""
    code, modules, stdout = _loaded(["run", "examples/invoice.yaml", "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect", "--quiet"], tmp_path)
    assert code == 0, stdout
    assert "langgraph" in _heavy(modules)


def test_import_stepguard_is_light_and_complete() -> None:
    probe = ("import sys, stepguard; light = not any(m in sys.modules for m in ('langgraph', 'pydantic', 'stepguard.guard'));"
             " names = [n for n in stepguard.__all__ if getattr(stepguard, n, None) is None];"
             " print(light, names, stepguard.Guard.__name__, 'langgraph' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["True", "[]", "Guard", "True"]  # light at import; every public name loads on use
