"""A report over runs of several models: the decline curve of each model on one figure (it leads the
report), a paired table per model (raw against guarded of the same model only), a simulation still
marked SIMULATED and a model that is not, not."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stepguard.adapters import load_model
from stepguard.bench import plots
from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import write_instances
from stepguard.bench.report import build_report
from stepguard.bench.run import arun_benchmark
from tests._stub_server import StubServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Raw and guarded runs of three models on the same instances: sim:paper (simulated) and two
    endpoints of the stub server (models, as far as stepguard can tell)."""
    root = tmp_path_factory.mktemp("models")
    instances = root / "inst.jsonl"
    write_instances(generate_grid([5, 23], [1, 7], 4, seed=0), instances)
    out: list[Path] = []
    with StubServer() as stub:
        for name, spec in (("paper", "sim:paper"), ("stub-paper", f"{stub.base_url}#simpaper"), ("stub-perfect", f"{stub.base_url}#sim")):
            model = load_model(spec)

            async def both(model: Any = model, name: str = name) -> None:  # one loop: the http client is bound to it
                for mode in ("raw", "guarded"):
                    await arun_benchmark(instances, mode, model, root / name / mode, progress=False)  # type: ignore[arg-type]

            asyncio.run(both())
            out += [root / name / "raw", root / name / "guarded"]
    return out


def test_several_models_share_one_decline_figure_and_get_a_paired_table_each(model_runs: list[Path], tmp_path: Path) -> None:
    legends: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    save = plots._save

    def capture(fig: Any, path: Path) -> Path:
        titles[path.name] = fig.get_suptitle()
        legends[path.name] = [t.get_text() for a in fig.axes if a.get_legend() for t in a.get_legend().get_texts()]
        return save(fig, path)

    plots._save = capture  # type: ignore[assignment]
    try:
        rep = build_report(model_runs, tmp_path / "report")
    finally:
        plots._save = save  # type: ignore[assignment]
    assert rep.plots[0].name == "models.png" and not (tmp_path / "report" / "overlay.png").exists()
    md = rep.report_md.read_text()
    assert re.findall(r"!\[[^]]*\]\(([^)]+\.png)\)", md)[0] == "models.png" and md.index("models.png") < md.index("### ")
    legend = legends["models.png"]
    curves = [t for t in legend if "paper's reported" not in t]
    assert len(curves) == 6  # a raw and a guarded curve per model, on one figure
    sim = [t for t in curves if t.startswith("sim:paper")]
    assert len(sim) == 2 and all("SIMULATED" in t for t in sim)
    assert all("SIMULATED" not in t for t in curves if not t.startswith("sim:paper"))
    assert "SIMULATED" in titles["models.png"] and "3 models" in titles["models.png"]
    # one paired table per model, each raw run against the guarded run of its own model
    assert len(rep.paired) == 3
    for cmp in rep.paired:
        assert Path(cmp.raw).parent == Path(cmp.guarded).parent and not cmp.warnings
    paired_titles = [line for line in md.splitlines() if line.startswith("### Paired")]
    assert len(paired_titles) == 3
    assert sum("SIMULATED" in t for t in paired_titles) == 1  # only sim:paper's
    summary = json.loads(rep.summary_json.read_text())
    assert summary["simulated"] is True and len(summary["models"]) == 3
    assert [m for m in summary["models"] if "SIMULATED" in m] == ["sim:paper · SIMULATED"]


def test_one_raw_and_one_guarded_run_of_two_models_are_still_paired_with_the_warning(model_runs: list[Path], tmp_path: Path) -> None:
    raw_paper, guarded_perfect = model_runs[0], model_runs[5]
    rep = build_report([raw_paper, guarded_perfect], tmp_path / "r")
    assert len(rep.paired) == 1 and rep.paired[0].warnings and "different models" in rep.paired[0].warnings[0]
    assert rep.plots[0].name == "models.png"


def test_one_model_keeps_the_overlay_figure(model_runs: list[Path], tmp_path: Path) -> None:
    rep = build_report(model_runs[2:4], tmp_path / "r")
    assert rep.plots[0].name == "overlay.png" and len(rep.paired) == 1
