"""What a newcomer reads first says what the code does: the README's set-up order, and what an
unchecked step is (issue: a step with neither expr nor check was documented as verified)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.cli._app import app
from stepguard.procedure import parse_procedure
from tests._paths import ROOT

UNCHECKED = "name: u\ninputs: {x: integer}\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: note}\n  - {var: b, expr: a + 1}\n"


def test_the_readme_sets_up_before_it_activates() -> None:
    block = re.search(r"## Use it\n\n```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block is not None
    lines = [line.split("#")[0].strip() for line in block.group(1).splitlines()]
    assert lines.index("bash scripts/setup.sh") < lines.index(". .venv/bin/activate")


def test_a_step_with_neither_expr_nor_check_is_unverifiable_and_flags_the_run_as_the_docs_say(tmp_path: Path) -> None:
    doc = " ".join((ROOT / "docs/procedures.md").read_text(encoding="utf-8").split())
    assert "verified for presence, order and type only" not in doc
    assert "neither ``expr`` nor ``check`` is **unverifiable**" in doc and "is ``flagged``, never ``verified``" in doc
    proc = parse_procedure(UNCHECKED, "u.yaml")
    result = Guard(load_model("sim:perfect")).run(proc, {"x": 1})
    assert result.status == "flagged" and [s.provenance for s in result.steps][1] == "unverifiable"
    (tmp_path / "u.yaml").write_text(UNCHECKED)
    out = CliRunner().invoke(app, ["check", str(tmp_path / "u.yaml")])
    assert "unverifiable" in out.output
