"""The Python examples of the README and the quickstart run as written (issue 32), and the
simulator executes instruction steps from Python without being handed the procedure."""

from __future__ import annotations

import re
from pathlib import Path

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.cli.authoring import STARTER
from stepguard.procedure import parse_procedure
from tests._paths import ROOT


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


def _invoice() -> object:
    from stepguard import load_procedure

    return load_procedure(ROOT / "examples/invoice.yaml")


def test_the_documented_python_examples_keep_the_procedures_settings(capsys) -> None:
    """No example hands a money procedure a whole GuardConfig whose ladder cannot re-ask its steps."""
    import warnings

    from stepguard.guard import LadderWarning

    blocks = [(ROOT / "docs/quickstart.md", _blocks(ROOT / "docs/quickstart.md")[0]),
              (ROOT / "README.md", _blocks(ROOT / "README.md")[0].replace('load_model("local")', 'load_model("sim:perfect")')),
              (ROOT / "docs/python-api.md", _blocks(ROOT / "docs/python-api.md")[0])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", LadderWarning)
        for path, block in blocks:
            exec(compile(block, path.name, "exec"), {})
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in _blocks(path):  # a whole GuardConfig in an example replaces the defaults by procedure
            assert "GuardConfig(" not in block.replace("GuardConfig(**", ""), (path, block)


def test_a_whole_config_with_the_integer_ladder_warns_on_a_money_procedure() -> None:
    import pytest

    from stepguard import GuardConfig
    from stepguard.guard import LadderWarning

    proc = _invoice()
    inputs = {"subtotal": "100.10", "rate": "0.1"}
    with pytest.warns(LadderWarning, match=r"invoice.*bridge, decompose, commute.*for_procedure"):
        Guard(load_model("sim:perfect"), GuardConfig(chunk_size=5)).run(proc, inputs)
    with pytest.warns(LadderWarning):  # any ladder of integer-sum rungs only
        Guard(load_model("sim:perfect"), GuardConfig(ladder=("commute",))).run(proc, inputs)


def test_no_warning_where_the_ladder_can_re_ask_the_steps() -> None:
    import warnings

    from stepguard import GuardConfig
    from stepguard.guard import LadderWarning

    proc = _invoice()
    inputs = {"subtotal": "100.10", "rate": "0.1"}
    sums = parse_procedure("name: sums\ninputs: {x: integer, y: integer}\nsteps:\n  - {var: a, expr: x + y}\n  - {var: b, expr: a - y}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LadderWarning)
        assert Guard(load_model("sim:perfect")).run(proc, inputs).status == "verified"
        config = GuardConfig.for_procedure(proc, on_exhausted="flag")
        assert (config.ladder, config.chunk_size, config.inline_known, config.on_exhausted) == (
            ("split", "resample", "resample", "digits"), 1, True, "flag")
        Guard(load_model("sim:perfect"), config).run(proc, inputs)
        Guard(load_model("sim:perfect"), GuardConfig(ladder=("bridge", "resample"))).run(proc, inputs)
        Guard(load_model("sim:perfect"), GuardConfig(chunk_size=5)).run(sums, {"x": 7, "y": 3})


def test_the_benchmarks_integer_instances_with_their_measured_ladder_do_not_warn() -> None:
    import warnings

    from stepguard import GuardConfig, load_procedure
    from stepguard.guard import LadderWarning

    n23 = load_procedure(ROOT / "examples/benchmark_n23.yaml")  # integer sums and products
    with warnings.catch_warnings():
        warnings.simplefilter("error", LadderWarning)
        Guard(load_model("sim:perfect"), GuardConfig()).run(n23, {"x": 6, "y": 10})
