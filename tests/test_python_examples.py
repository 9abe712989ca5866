"""The Python examples of the README and the quickstart run as written (issue 32), and the
simulator executes instruction steps from Python without being handed the procedure."""

from __future__ import annotations

import re
from pathlib import Path

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.cli.authoring import STARTER
from stepguard.procedure import parse_procedure

ROOT = Path(__file__).resolve().parent.parent


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_the_quickstarts_first_example_runs_as_written(capsys) -> None:
    exec(compile(_blocks(ROOT / "docs/quickstart.md")[0], "quickstart.md", "exec"), {})
    assert capsys.readouterr().out.split() == ["verified", "104.60"]


def test_the_readmes_example_runs_with_the_simulator_in_place_of_the_local_model(capsys) -> None:
    block = _blocks(ROOT / "README.md")[0]
    assert 'load_model("local")' in block
    exec(compile(block.replace('load_model("local")', 'load_model("sim:perfect")'), "README.md", "exec"), {})
    status, answer, _ = capsys.readouterr().out.split()
    assert (status, answer) == ("verified", "136.80")  # 120.00 less the 5% discount, plus 20%


def test_the_simulator_reads_instruction_steps_in_python_too() -> None:
    proc = parse_procedure(STARTER.format(name="p.yaml", stem="p"))
    result = Guard(load_model("sim:perfect")).run(proc, {"subtotal": "100.10", "rate": "0.1"})
    assert result.status == "verified", result.deviations
