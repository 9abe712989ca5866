"""Paired comparison of a raw and a guarded run on the instances both finished.

For each shared instance id the two outcomes form a 2x2 table (metric ``correct`` by default:
the row field ``correct`` in both runs; ``exact``: ``exact`` in both; ``verified``: raw ``correct``
against guarded ``verified_correct``, the guard's verified completion that docs/fidelity.md
reports): both right / only guarded right / only raw right / both wrong. The exact McNemar test
(McNemar 1947; exact form: a two-sided binomial test of the discordant pairs against p = 1/2,
``scipy.stats.binomtest``) asks whether the guard changes the success rate on the same instances.
It is computed per group and overall: a generated instance's group is its configuration (steps,
look-back); a case of a user's suite (a row with no look-back: a procedure file with an input set)
is grouped by its procedure, since a suite varies procedures, not step counts. Which run is raw and
which is guarded is read from each run's run.json (``mode``), never from the order of the arguments.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from stepguard.bench._extra import import_extra
from stepguard.bench._results import numbered_results
from stepguard.bench.stats import wilson_interval
from stepguard.bench.store import read_meta

__all__ = [
    "METRIC_FIELDS", "METRIC_HEADINGS", "Comparison", "InstancesDiffer", "NoSharedInstances", "Paired", "compare_runs", "mcnemar_exact",
    "names_a_suite", "procedure_of",
]

Metric = Literal["correct", "exact", "verified"]

METRIC_FIELDS: dict[str, tuple[str, str]] = {
    "correct": ("correct", "correct"), "exact": ("exact", "exact"), "verified": ("correct", "verified_correct"),
}
"""The row field each metric reads in the (raw, guarded) run."""

METRIC_HEADINGS: dict[str, tuple[str, str]] = {
    "correct": ("raw first answer right", "guarded verified and right"),
    "exact": ("raw exact-step", "guarded exact-step"),
    "verified": ("raw first answer right", "guarded verified completion"),
}
"""What each metric counts as right in the (raw, guarded) run, in words for a table's headings."""


class NoSharedInstances(ValueError):
    """The two runs finished no instance id in common: nothing to pair (the message gives both counts)."""


class InstancesDiffer(ValueError):
    """Rows of the two runs with one id record different instance content (``instance_sha256``)."""


def mcnemar_exact(only_b: int, only_a: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    binomtest = import_extra("scipy.stats").binomtest

    n = only_a + only_b
    return 1.0 if n == 0 else float(binomtest(only_b, n, 0.5, alternative="two-sided").pvalue)


@dataclass
class Paired:
    """The 2x2 table of one group of shared instances.

    Attributes:
        n_steps, lookback: the configuration (``None`` for the overall table; ``lookback`` is also
            ``None`` for a procedure's group).
        procedure: the procedure of a user's suite this group holds (``None`` for a configuration
            of generated instances and for the overall table).
        both_right, only_guarded, only_raw, both_wrong: instance counts.
        p_value: exact McNemar p-value (two-sided).
    """

    n_steps: int | None
    lookback: int | None
    procedure: str | None = None
    both_right: int = 0
    only_guarded: int = 0
    only_raw: int = 0
    both_wrong: int = 0
    p_value: float = 1.0

    @property
    def n(self) -> int:
        """Shared instances in this group."""
        return self.both_right + self.only_guarded + self.only_raw + self.both_wrong

    def add(self, raw_ok: bool, guarded_ok: bool) -> None:
        """Count one pair."""
        if raw_ok and guarded_ok:
            self.both_right += 1
        elif guarded_ok:
            self.only_guarded += 1
        elif raw_ok:
            self.only_raw += 1
        else:
            self.both_wrong += 1

    def finish(self) -> Paired:
        """Compute the p-value; returns self."""
        self.p_value = mcnemar_exact(self.only_guarded, self.only_raw)
        return self

    @property
    def raw_right(self) -> int:
        """Pairs whose raw outcome is right."""
        return self.both_right + self.only_raw

    @property
    def guarded_right(self) -> int:
        """Pairs whose guarded outcome is right."""
        return self.both_right + self.only_guarded

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, ``n``, raw and guarded rights and rates on the shared instances with
        their 95% Wilson intervals (``[low, high]``, ``None`` without pairs), ``p_value``."""
        d = asdict(self)
        d.update(n=self.n, raw_right=self.raw_right, guarded_right=self.guarded_right,
                 raw_rate=self.raw_right / self.n if self.n else None,
                 guarded_rate=self.guarded_right / self.n if self.n else None,
                 raw_interval=list(wilson_interval(self.raw_right, self.n)) if self.n else None,
                 guarded_interval=list(wilson_interval(self.guarded_right, self.n)) if self.n else None)
        return d


@dataclass
class Comparison:
    """The result of :func:`compare_runs`.

    Attributes:
        metric: the metric compared (``correct``, ``exact`` or ``verified``; :data:`METRIC_FIELDS`).
        raw, guarded: the run folders.
        simulated: either run used the simulated executor.
        configs: one :class:`Paired` per group present in both runs: a configuration (steps,
            look-back) of generated instances, or a procedure of a user's suite (:func:`procedure_of`).
        overall: all shared instances.
        only_in_raw, only_in_guarded: ids finished in one run only (left out of every table).
    """

    metric: str
    raw: str
    guarded: str
    simulated: bool
    configs: list[Paired] = field(default_factory=list)
    overall: Paired = field(default_factory=lambda: Paired(None, None))
    only_in_raw: int = 0
    only_in_guarded: int = 0
    warnings: list[str] = field(default_factory=list)
    """What makes the pairs less than a paired comparison on one model (different models, unchecked instances)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"metric": self.metric, "raw": self.raw, "guarded": self.guarded, "simulated": self.simulated,
                "configs": [p.as_dict() for p in self.configs], "overall": self.overall.as_dict(),
                "only_in_raw": self.only_in_raw, "only_in_guarded": self.only_in_guarded, "warnings": list(self.warnings)}

    def table(self) -> str:
        """A plain-text table for a terminal (SIMULATED in the title when it applies)."""
        sim = " (SIMULATED executor: not a model's accuracy)" if self.simulated else ""
        names = ["overall" if p.n_steps is None else p.procedure or f"{p.n_steps}x{p.lookback if p.lookback else '-'}"
                 for p in [*self.configs, self.overall]]
        width = max(10, *map(len, names))
        lines = [f"warning: {w}" for w in self.warnings]
        lines += [f"paired comparison on '{self.metric}': raw {self.raw} vs guarded {self.guarded}{sim}",
                  f"{'procedure' if any(p.procedure for p in self.configs) else 'config':<{width}} {'n':>5} {'both':>6} {'guard+':>7} "
                  f"{'raw+':>6} {'neither':>8} {'raw %':>7} {'guard %':>8} {'McNemar p':>10}"]
        for name, p in zip(names, [*self.configs, self.overall], strict=True):
            d = p.as_dict()
            rr = "-" if d["raw_rate"] is None else f"{100 * d['raw_rate']:.1f}"
            gr = "-" if d["guarded_rate"] is None else f"{100 * d['guarded_rate']:.1f}"
            lines.append(f"{name:<{width}} {p.n:>5} {p.both_right:>6} {p.only_guarded:>7} {p.only_raw:>6} {p.both_wrong:>8} "
                         f"{rr:>7} {gr:>8} {p.p_value:>10.4g}")
        if self.only_in_raw or self.only_in_guarded:
            lines.append(f"unpaired (left out): {self.only_in_raw} only in raw, {self.only_in_guarded} only in guarded")
        return "\n".join(lines)


def compare_runs(run_a: str | Path, run_b: str | Path, metric: Metric = "correct") -> Comparison:
    """Pair a raw and a guarded run on their shared instance ids and test the difference (exact McNemar).

    Args:
        run_a, run_b: the two run folders, in either order: the raw one and the guarded one are
            told apart by the ``mode`` in each run.json.
        metric: ``"correct"`` (first answer right; guarded: verified and right), ``"exact"``
            (exact-step execution; guarded: every step model-verified), or ``"verified"`` (raw:
            first answer right; guarded: verified completion, ``verified_correct``: every value
            model-verified and right, nothing repaired).

    Returns:
        A :class:`Comparison`. Memory: one boolean per raw id (the raw run is indexed, the
        guarded run streamed).

    Raises:
        RunStoreError: a folder is not a run store, or a row is corrupt, repeats an id or lacks a
            usable ``n_steps`` / ``lookback`` (names file and line).
        NoSharedInstances: no id finished in both runs (a ValueError; gives both row counts).
        InstancesDiffer: an id finished in both runs names different instance content (rows'
            ``instance_sha256``; a ValueError naming the first such id and both lines).
        ValueError: an unknown metric, or the two runs are not one raw and one guarded run (the
            modes found are named).

    Runs of different models, or of different instances files whose rows record no instance hash,
    are compared with a line in :attr:`Comparison.warnings` saying so.
    """
    if metric not in METRIC_FIELDS:
        raise ValueError(f"metric must be one of {', '.join(map(repr, METRIC_FIELDS))}, not {metric!r}")
    raw_field, guarded_field = METRIC_FIELDS[metric]
    meta = {Path(run_a): read_meta(run_a), Path(run_b): read_meta(run_b)}
    # a reask run (Instructor's re-ask loop) stands on the raw side: its rows have raw mode's fields
    by_mode = {"raw" if m.get("mode") == "reask" else m.get("mode"): d for d, m in meta.items()}
    if set(by_mode) != {"raw", "guarded"}:
        found = ", ".join(f"{d} is {m.get('mode')!r}" for d, m in meta.items())
        raise ValueError(f"compare needs one raw and one guarded run ({found}; a reask run counts as the raw one)")
    raw_dir, guarded_dir = by_mode["raw"], by_mode["guarded"]
    raw: dict[str, tuple[bool, str | None, str]] = {}
    for path, lineno, row in numbered_results(raw_dir):
        raw[row["id"]] = (bool(row.get(raw_field)), row.get("instance_sha256"), f"{path}:{lineno}")
    simulated = any(bool(m.get("simulated")) for m in meta.values())
    cmp = Comparison(metric, str(raw_dir), str(guarded_dir), simulated, warnings=_model_warnings(meta[raw_dir], meta[guarded_dir]))
    groups: dict[tuple[str, int, int], Paired] = {}
    seen, guarded_rows, unchecked = 0, 0, 0
    differ: list[str] = []
    for path, lineno, row in numbered_results(guarded_dir):
        guarded_rows += 1
        got = raw.get(row["id"])
        if got is None:
            cmp.only_in_guarded += 1
            continue
        seen += 1
        raw_ok, raw_sha, raw_at = got
        sha = row.get("instance_sha256")
        if raw_sha is None or sha is None:
            unchecked += 1
        elif raw_sha != sha:
            differ.append(f"{row['id']!r} ({raw_at} vs {path}:{lineno})")
            continue
        ok = bool(row.get(guarded_field))
        n_steps, lookback, procedure = row["n_steps"], row.get("lookback"), procedure_of(row, meta[guarded_dir])
        key = (procedure or "", n_steps, lookback or 0)
        groups.setdefault(key, Paired(n_steps, lookback, procedure)).add(raw_ok, ok)
        cmp.overall.add(raw_ok, ok)
    if differ:
        raise InstancesDiffer(
            f"{len(differ)} of the {seen} ids both runs finished name different instances (another input or expected "
            f"value under the same id; first: {differ[0]}): {raw_dir} and {guarded_dir} were not run on the same "
            "instances, so their rows do not pair; compare runs of one instances file")
    if not seen:
        raise NoSharedInstances(
            f"no instance ids in common: raw {raw_dir} has {len(raw)} finished rows, guarded {guarded_dir} has "
            f"{guarded_rows}; a paired comparison needs the same instances run in both modes")
    same_file = meta[raw_dir].get("instances_sha256") == meta[guarded_dir].get("instances_sha256")
    if unchecked and not same_file:
        cmp.warnings.append(f"the runs' instances files differ and {unchecked} pairs have rows that record no instance "
                            "hash (written before rows did): those pairs are matched by id only, unchecked")
    cmp.only_in_raw = len(raw) - seen
    cmp.configs = [groups[k].finish() for k in sorted(groups)]
    cmp.overall.finish()
    return cmp


def procedure_of(row: dict[str, Any], meta: dict[str, Any] | None = None) -> str | None:
    """The procedure a result row is a case of, or ``None`` for an instance of an instances file.

    A case of a user's suite records its procedure in the row (``procedure``). A row written before
    rows did is a case when it has no look-back, its id is ``<file stem>/<set id>`` (up to the first
    ``/``: a file name holds no ``/``, an input set's id may; ``shipping/light-zone-1`` is a case of
    ``shipping``) and its run, given ``meta`` (its run.json), ran a suite (:func:`names_a_suite`). An
    instance of an instances file, generated or with a null look-back, is none: its configuration
    groups it.
    """
    if row.get("procedure"):
        return str(row["procedure"])
    if row.get("lookback") or "/" not in str(row["id"]) or meta is not None and not names_a_suite(meta):
        return None
    return str(row["id"]).split("/", 1)[0]


def names_a_suite(meta: dict[str, Any]) -> bool:
    """Did the run of this run.json read a suite (a folder or a procedure file), not an instances file?"""
    from stepguard.bench.suites import PROCEDURE_SUFFIXES

    where = meta.get("instances")
    return isinstance(where, str) and _names_a_suite(where, PROCEDURE_SUFFIXES)


@functools.lru_cache(maxsize=64)
def _names_a_suite(where: str, suffixes: tuple[str, ...]) -> bool:
    """:func:`names_a_suite` for one path, asked once a report (a row of a legacy run asks it per row)."""
    path = Path(where)
    return path.suffix.lower() in suffixes or not path.suffix or path.is_dir()


def _model_warnings(raw: dict[str, Any], guarded: dict[str, Any]) -> list[str]:
    """A warning when the two runs' models differ (spec, name or runtime): not the paired comparison on one model."""
    def who(meta: dict[str, Any]) -> dict[str, Any]:
        model = meta.get("model") or {}
        return {k: model.get(k) for k in ("spec", "name", "runtime") if model.get(k) is not None}

    a, b = who(raw), who(guarded)
    if a == b:
        return []
    diff = "; ".join(f"{k}: raw {a.get(k)!r}, guarded {b.get(k)!r}" for k in ("spec", "name", "runtime") if a.get(k) != b.get(k))
    return [f"the runs used different models ({diff}): raw vs guarded on different models is not the paired "
            "comparison of the guard on one model"]
