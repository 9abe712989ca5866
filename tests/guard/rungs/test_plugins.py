"""Rungs are plugins (issue 42, part 5): a rung is found by an entry point of the group
``stepguard.rungs``, stepguard's own arithmetic rungs as a third party's.

The third-party plugins here are distributions written into a temporary folder (a module and a
``*.dist-info`` with ``entry_points.txt``) and put on the path of a fresh interpreter, so the
registry looks for plugins there as it would in an installed environment.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from stepguard.guard.rungs import ENTRY_POINT_GROUP, rung_names, rung_origin
from tests._paths import ROOT

pytestmark = pytest.mark.slow

_MYRUNG = '''
from stepguard import Procedure
from stepguard.guard.rungs import Rung, register


@register
class MyRung(Rung):
    """The failing step asked as a one-step procedure over its operands' values (``S4 = 10 - 3``)."""

    name = "myrung"
    derives = True
    nested_ladder = ("narrow",)
    nested_tries = 1

    def derive(self, procedure, index, env):
        step = procedure.steps[index]
        expr = step.expr or ""
        for name in procedure.reads(index):
            expr = expr.replace(name, str(env[name]))
        return Procedure.model_validate({"name": f"{procedure.name}:{step.var}:mine", "steps": [{"var": step.var, "expr": expr}]})
'''


def _distribution(where: Path, name: str, entry_points_txt: str, modules: dict[str, str]) -> None:
    """A distribution as an installer leaves it: its modules and a ``<name>-0.1.dist-info`` folder."""
    info = where / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points_txt, encoding="utf-8")
    for module, text in modules.items():
        (where / f"{module}.py").write_text(text, encoding="utf-8")


def _stepguards() -> list[str]:
    """The names of stepguard's own rungs, in order (a test module in this process may have registered more)."""
    return [n for n in rung_names() if rung_origin(n).startswith(("stepguard.", "entry point arith = stepguard."))]


def _run(where: Path, script: str) -> tuple[dict[str, object], str]:
    """``script`` in a fresh interpreter with ``where`` and the repository on its path; the JSON it prints last, and stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(where), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_a_rung_from_another_distribution_is_found_by_its_entry_point_and_used_in_a_ladder(tmp_path: Path) -> None:
    _distribution(tmp_path, "myrung-plugin", "[stepguard.rungs]\nmyrung = myrung_plugin\n", {"myrung_plugin": _MYRUNG})
    script = """
import json
from stepguard import Guard, GuardConfig
from stepguard.guard import rung_names
from stepguard.guard.rungs import rung_origin
from tests._fakes import ScriptedModel
from tests._fakes import CHAIN_INPUTS as INPUTS, chain_procedure as _procedure

model = ScriptedModel(faults={"S4": ["wrong", "wrong"]})
result = Guard(model, GuardConfig(ladder=("narrow", "myrung"), chunk_size=3)).run(_procedure(8), INPUTS)
print(json.dumps({"names": list(rung_names()), "origin": rung_origin("myrung"), "status": result.status,
                  "rungs": [d.rung for d in result.deviations if d.action == "reprompt"],
                  "asked": model.calls[3][-1]["content"]}))
"""
    out, _ = _run(tmp_path, script)
    names = out["names"]
    assert isinstance(names, list) and names[-1] == "myrung" and names[:-1] == _stepguards()
    assert out["origin"] == "entry point myrung = myrung_plugin (distribution myrung-plugin)"
    assert out["status"] == "verified" and out["rungs"] == ["narrow", "myrung"]
    assert "S4 = " in str(out["asked"]) and "S3" not in str(out["asked"]).split("Steps:")[-1]  # the plugin's sub-procedure was asked


def test_a_broken_plugin_is_named_in_a_warning_and_every_other_rung_stays(tmp_path: Path) -> None:
    taken = "from stepguard.guard.rungs import Rung, register\n\n@register\nclass Again(Rung):\n    name = 'bridge'\n"
    _distribution(tmp_path, "broken-plugin", "[stepguard.rungs]\nbroken = no_such_module_anywhere\n", {})
    _distribution(tmp_path, "taken-plugin", "[stepguard.rungs]\nagain = taken_plugin\n", {"taken_plugin": taken})
    script = """
import json, warnings
import stepguard  # loads no plugin
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    from stepguard.guard.rungs import get_rung, rung_names  # the guard's configuration lists the rungs: plugins load here
    names = rung_names()
try:
    get_rung("nope")
except KeyError as exc:
    unknown = str(exc)
print(json.dumps({"names": list(names), "warnings": [f"{w.category.__name__}: {w.message}" for w in seen], "unknown": unknown}))
"""
    out, _ = _run(tmp_path, script)
    said = out["warnings"]
    assert isinstance(said, list) and len(said) == 2
    assert said[0].startswith("RungPluginWarning: the rung plugin broken = no_such_module_anywhere (distribution broken-plugin)")
    assert "ModuleNotFoundError" in said[0]
    assert "again = taken_plugin (distribution taken-plugin)" in said[1] and "'bridge' is taken (by entry point arith" in said[1]
    assert out["names"] == _stepguards()  # every rung of the core and of stepguard's plugin, in order
    assert "the rung plugin broken = no_such_module_anywhere (distribution broken-plugin) failed to load" in str(out["unknown"])


def test_the_arithmetic_rungs_are_registered_by_stepguards_own_entry_point() -> None:
    ours = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.dist is not None and ep.dist.name == "stepguard"]
    assert [(ep.name, ep.value) for ep in ours] == [("arith", "stepguard.guard.rungs.arith")]
    core = ("restate", "narrow", "resample")
    assert rung_names()[:3] == core and all(rung_origin(n) == f"stepguard.guard.rungs.{n}" for n in core)
    plugin = [n for n in rung_names() if rung_origin(n) == "entry point arith = stepguard.guard.rungs.arith (distribution stepguard)"]
    assert plugin == ["bridge", "decompose", "commute", "chain", "partial", "scale", "choice", "divide", "tie", "single", "split",
                      "columns", "long_multiply", "long_divide", "digits"]  # the order --help and docs/cli.md show
    assert rung_names()[3:3 + len(plugin)] == tuple(plugin)


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports from (``from X import`` and ``import X``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_the_arithmetic_rungs_import_only_the_public_rung_api_and_the_core_not_them() -> None:
    arith = ROOT / "stepguard" / "guard" / "rungs" / "arith"
    for path in sorted(arith.glob("*.py")):
        for module in _imports(path):
            if module.startswith("stepguard.guard"):
                assert module in ("stepguard.guard", "stepguard.guard.rungs") or module.startswith("stepguard.guard.rungs.arith"), (
                    f"{path.name} imports {module}: a rung plugin imports the guard's public rung API only")
    moved = {"_digits.py", "digits.py", "_base.py"}  # the old paths of moved names, read for imports written before
    for path in sorted((ROOT / "stepguard" / "guard").rglob("*.py")):
        if arith in path.parents or (path.parent.name == "rungs" and path.name in moved):
            continue
        assert not [m for m in _imports(path) if m.startswith("stepguard.guard.rungs.arith")], f"{path} imports the arithmetic plugin"


def test_stepguards_own_plugin_loads_where_its_entry_point_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source tree run with no installed metadata, or an editable install made before the entry
    point existed, still has the arithmetic rungs the default ladders name, loaded first."""
    from importlib.metadata import EntryPoint

    from stepguard.guard.rungs import _base

    other = EntryPoint("mine", "myrung_plugin", ENTRY_POINT_GROUP)
    monkeypatch.setattr(_base, "entry_points", lambda group: [other] if group == ENTRY_POINT_GROUP else [])
    assert [(ep.name, ep.value) for ep in _base._plugins()] == [("arith", "stepguard.guard.rungs.arith"), ("mine", "myrung_plugin")]
