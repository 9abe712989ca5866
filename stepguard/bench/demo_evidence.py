"""The demo's few instances beside the committed measurement, on one figure, each labelled.

A demo on the embedded model runs a handful of instances (three of 5 steps, one of 23): alone, its
figure is a few points with intervals as wide as the plot. The committed measurement of the same
model (``docs/data/fidelity_cells.json``, the cells behind docs/fidelity.md's figure) is drawn
beside them, its curves named "committed" and the demo's "this demo", so a reader sees what the
demo's points say against the evidence. The figure is added to the demo's ``report.md`` and
``report.html`` under its own heading.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path

from stepguard.bench.aggregate import RunAggregate
from stepguard.bench.overlay import Curve, curves_from_cells, curves_from_runs, plot_overlay
from stepguard.bench.report import Report

__all__ = ["COMMITTED_CELLS", "FIGURE", "add_committed_evidence", "committed_curves"]

COMMITTED_CELLS = Path(__file__).resolve().parents[2] / "docs" / "data" / "fidelity_cells.json"
"""The committed cell counts (present in a source checkout; an installed wheel has no ``docs/``)."""
FIGURE = "demo_beside_committed.png"
"""The figure's file name in the report folder."""


def _main(curves: list[Curve], prefix: str) -> list[Curve]:
    """Each run's main curve (all look-backs pooled, or its only one), named ``<prefix> <mode>`` (the
    figure's subtitle names the runs in full)."""
    pooled = {c.run for c in curves if c.lookback is None}
    return [c._replace(run=f"{prefix} {c.mode}") for c in curves if c.lookback is None or c.run not in pooled]


def committed_curves(data: dict[str, object]) -> list[Curve]:
    """The committed runs' pooled curves, each named ``committed <run>``."""
    return _main(curves_from_cells(data), "committed")


def add_committed_evidence(report: Report, runs: Sequence[RunAggregate], cells: Path = COMMITTED_CELLS) -> Path | None:
    """Draw the demo's runs beside the committed measurement into ``report.outdir/FIGURE`` and add the
    figure, with a caption that says which is which, to the report's Markdown and HTML.

    Args:
        report: the demo's report (:func:`stepguard.bench.report.build_report`).
        runs: the demo's runs, aggregated.
        cells: the committed cell counts (``docs/data/fidelity_cells.json``'s shape).

    Returns:
        The figure's path, or ``None`` where ``cells`` is not there (nothing is changed then).

    Raises:
        ValueError: ``cells`` holds no usable run (as :func:`~stepguard.bench.overlay.curves_from_cells`).
    """
    if not cells.is_file():
        return None
    data = json.loads(cells.read_text(encoding="utf-8"))
    demo = _main(curves_from_runs(runs), "this demo")
    model = str(data.get("model", "the committed model")).split(" (")[0]
    shown = ", ".join(f"{r.label} ({r.overall.n} instances)" for r in runs)
    subtitle = f"committed: {model}, measured {data.get('measured', '?')} ({cells.name}); this demo: {shown}"
    path = plot_overlay([*committed_curves(data), *demo], report.outdir / FIGURE, simulated=False, subtitle=subtitle,
                        paper=True, same_instances=False)
    caption = (f"This demo's instances beside the committed measurement of {model} (docs/fidelity.md; the cells in "
               f"docs/data/{cells.name}): the lines named 'committed' are that measurement, the lines named 'this demo' "
               "are the instances this demo ran. A few instances give wide intervals; the committed curve is the evidence.")
    md = report.report_md.read_text(encoding="utf-8")
    report.report_md.write_text(md.rstrip("\n") + f"\n\n## This demo beside the committed measurement\n\n"
                                f"![{path.stem}]({path.name})\n\n{caption}\n", encoding="utf-8")
    from stepguard.bench.report import img_html

    page = report.report_html.read_text(encoding="utf-8")
    section = f"<h2>This demo beside the committed measurement</h2>{img_html(path)}<p>{html.escape(caption)}</p>"
    report.report_html.write_text(page.replace("</body></html>", section + "</body></html>", 1), encoding="utf-8")
    return path
