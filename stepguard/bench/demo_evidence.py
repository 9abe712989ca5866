"""The demo's few instances beside the committed measurement, on one figure, each labelled.

A demo on the embedded model runs a handful of instances (three of 5 steps, one of 23): alone, its
figure is a few points with intervals as wide as the plot. The committed measurement of the same
model is drawn beside them from the run stores kept in the repository (:data:`COMMITTED_STORES`,
``benchmarks/stores/curve/``; benchmarks/stores/README.md lists them, docs/fidelity.md and
docs/policies.md quote them): the
raw decline curve, and guarded verified completion under the default settings. Each committed curve
is named by what it is and the date its store records (``run.json``'s ``created_at``), the demo's
"this demo", so a reader sees what the demo's points say against the evidence. The figure is added
to the demo's ``report.md`` and ``report.html`` under its own heading.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from stepguard.bench.aggregate import RunAggregate, aggregate_run
from stepguard.bench.overlay import Curve, curves_from_runs, plot_overlay
from stepguard.bench.report import Report
from stepguard.bench.store import META

__all__ = ["COMMITTED_STORES", "FIGURE", "CommittedStore", "add_committed_evidence", "committed_curves"]


class CommittedStore(NamedTuple):
    """A committed run store drawn beside the demo."""

    name: str
    """The curve's name in the legend, before its date (``committed raw``)."""
    rundir: Path
    """The run folder (``run.json`` and ``results.jsonl``)."""
    what: str
    """What its curve is, for the caption (``raw first-answer accuracy``)."""


_ROOT = Path(__file__).resolve().parents[2]
_STORES = _ROOT / "benchmarks" / "stores" / "curve"
COMMITTED_STORES: tuple[CommittedStore, ...] = (
    CommittedStore("committed raw", _STORES / "raw", "raw first-answer accuracy"),
    CommittedStore("committed guarded (defaults)", _STORES / "follow-together",
                   "guarded verified completion under the default settings"),
)
"""The committed measurement the demo is drawn beside: the raw decline curve of the embedded model
and its guarded verified completion under the default settings (present in a source checkout; an
installed wheel has no ``benchmarks/``)."""
FIGURE = "demo_beside_committed.png"
"""The figure's file name in the report folder."""


def _pooled(curves: list[Curve]) -> list[Curve]:
    """Each run's main curve: all look-backs pooled, or its only one."""
    pooled = {c.run for c in curves if c.lookback is None}
    return [c for c in curves if c.lookback is None or c.run not in pooled]


def _measured(run: RunAggregate) -> str:
    """The day the store records for its run (``run.json``'s ``created_at``, as ``YYYY-MM-DD``)."""
    created = str(run.meta.get("created_at") or "")
    return created[:10] if len(created) >= 10 else "date not recorded"


def _committed_runs(stores: Sequence[CommittedStore]) -> list[tuple[CommittedStore, RunAggregate]]:
    """The stores that are there (a ``run.json`` in the folder), aggregated."""
    return [(s, aggregate_run(s.rundir)) for s in stores if (s.rundir / META).is_file()]


def _named(store: CommittedStore, run: RunAggregate) -> list[Curve]:
    """The pooled curve of a committed run, named ``<store name>, <YYYY-MM-DD>``."""
    return [c._replace(run=f"{store.name}, {_measured(run)}") for c in _pooled(curves_from_runs([run]))]


def committed_curves(stores: Sequence[CommittedStore] = COMMITTED_STORES) -> list[Curve]:
    """The committed stores' curves, one per store that is there: all look-backs pooled (raw:
    ``correct``; guarded: ``verified_correct``), each named ``<store name>, <YYYY-MM-DD>`` by the date
    its ``run.json`` records (``created_at``).

    Returns:
        The curves in the order of ``stores``; ``[]`` where no store is there. A store with no
        finished row gives no curve.

    Raises:
        RunStoreError: a store's ``run.json`` or ``results.jsonl`` is unreadable or corrupt
            (:func:`~stepguard.bench.aggregate.aggregate_run`).
    """
    return [c for store, run in _committed_runs(stores) for c in _named(store, run)]


def _model(run: RunAggregate) -> str:
    """The run's model by name (``qwen2.5-coder-1.5b``), else its specification."""
    return str((run.meta.get("model") or {}).get("name") or run.model)


def _describe(store: CommittedStore, run: RunAggregate) -> str:
    """A committed store in the subtitle: its name, folder, instances and date."""
    return f"{store.name}: {_shown_path(store.rundir)}, {run.overall.n} instances, measured {_measured(run)}"


def _shown_path(rundir: Path) -> str:
    """``rundir`` from the repository's root where it is under it (``benchmarks/stores/curve/raw``), else as given."""
    try:
        return rundir.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return rundir.as_posix()


def add_committed_evidence(report: Report, runs: Sequence[RunAggregate],
                           stores: Sequence[CommittedStore] = COMMITTED_STORES) -> Path | None:
    """Draw the demo's runs beside the committed measurement into ``report.outdir/FIGURE`` and add the
    figure, with a caption that says which is which, to the report's Markdown and HTML.

    Args:
        report: the demo's report (:func:`stepguard.bench.report.build_report`).
        runs: the demo's runs, aggregated.
        stores: the committed run stores to draw (:data:`COMMITTED_STORES`); a store that is not
            there is left out.

    Returns:
        The figure's path, or ``None`` where none of ``stores`` is there or none has a finished row
        (nothing is changed then).

    Raises:
        RunStoreError: a committed store is there but unreadable or corrupt (:func:`committed_curves`).
    """
    drawn = [(s, r, _named(s, r)) for s, r in _committed_runs(stores)]
    committed = [(s, r) for s, r, named in drawn if named]
    if not committed:
        return None
    demo = [c._replace(run=f"this demo {c.mode}") for c in _pooled(curves_from_runs(runs))]
    models = " and ".join(dict.fromkeys(_model(r) for _, r in committed))
    shown = ", ".join(f"{r.mode} {r.overall.n}" for r in runs)
    demo_models = " and ".join(dict.fromkeys(r.model_label for r in runs))
    subtitle = (f"{'; '.join(_describe(s, r) for s, r in committed)}; model {models}. "
                f"This demo: {shown} instances on {demo_models}")
    curves = [c for _, _, named in drawn for c in named]
    path = plot_overlay([*curves, *demo], report.outdir / FIGURE, simulated=False, subtitle=subtitle,
                        paper=True, same_instances=False)
    which = "; ".join(f"'{s.name}' is {s.what}, the run store {_shown_path(s.rundir)}, measured {_measured(r)} "
                      "(the date its run.json records)" for s, r in committed)
    caption = (f"This demo's instances beside the committed measurement of {models} (docs/fidelity.md, docs/policies.md; "
               f"the stores are listed in benchmarks/stores/README.md): {which}; "
               "the lines named 'this demo' are the instances this demo ran. A few instances give wide intervals; "
               "the committed curves are the evidence.")
    md = report.report_md.read_text(encoding="utf-8")
    report.report_md.write_text(md.rstrip("\n") + f"\n\n## This demo beside the committed measurement\n\n"
                                f"![{path.stem}]({path.name})\n\n{caption}\n", encoding="utf-8")
    from stepguard.bench.report import img_html

    page = report.report_html.read_text(encoding="utf-8")
    section = f"<h2>This demo beside the committed measurement</h2>{img_html(path)}<p>{html.escape(caption)}</p>"
    report.report_html.write_text(page.replace("</body></html>", section + "</body></html>", 1), encoding="utf-8")
    return path
