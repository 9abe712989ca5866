"""Run the benchmark: raw or guarded mode over a stream of instances, concurrent and resumable.

::

    instances (file, streamed) ──> select (configs, limit) ──> skip finished ids
        ──> N workers (asyncio semaphore) ──> model ──> score / guard ──> one row ──> run store

Rows land in the run store (:mod:`stepguard.bench.store`) as they finish, so a killed run loses
at most the instances in flight; running again on the same RUNDIR skips finished ids and retries
error rows. Memory stays flat in the number of instances: instances are streamed from the file,
rows are written and dropped; only the set of finished ids is held.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stepguard.bench._runmeta import RAW_TOKENS_PER_STEP, describe_model, instance_source, run_meta
from stepguard.bench._select import count_lines, light, parse_configs, select
from stepguard.bench.case import arun_case, raw_max_tokens, refuse_computed
from stepguard.bench.rows import error_row
from stepguard.bench.store import RunStore, TornLine
from stepguard.bench.suites import is_suite
from stepguard.errors import ModelError
from stepguard.model import ChatModel

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase
    from stepguard.guard import GuardConfig, GuardObserver, GuardOptions
    from stepguard.procedure import Procedure

__all__ = [
    "GUARDED_DEFAULTS",  # noqa: F822 - read from the guard on first use (__getattr__ below)
    "RAW_TOKENS_PER_STEP",
    "Mode",
    "RunSummary",
    "arun_benchmark",
    "check_selection",
    "resolve_guard_config",
    "describe_model",
    "parse_configs",
    "raw_max_tokens",
    "run_benchmark",
]

Mode = Literal["raw", "guarded", "reask"]


def __getattr__(name: str) -> Any:
    """``GUARDED_DEFAULTS``: :func:`stepguard.guard.defaults_for` ``(benchmark=True)``, the GuardConfig
    fields a guarded run sets unlike GuardConfig's defaults, here and in ``stepguard bench`` (``on_exhausted``
    ``flag``: why, in :data:`stepguard.guard.BENCHMARK_SETTINGS`). Read from the guard when asked for, so
    importing this module imports no guard."""
    if name == "GUARDED_DEFAULTS":
        from stepguard.guard import defaults_for

        return defaults_for(benchmark=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SYNC_INTERVAL_S: float | None = 0.05
"""The run store's group-commit interval, seconds: rows are fsynced by a background thread at most
this often (``None``: an fsync per row, inline; see :mod:`stepguard.bench.store`)."""


@dataclass
class RunSummary:
    """What a call of :func:`run_benchmark` did.

    Attributes:
        rundir: the run store folder.
        mode: raw or guarded.
        selected: instances selected by ``configs`` / ``limit`` and reached (all of them unless interrupted).
        skipped: of those, already finished before this call.
        written: rows written by this call.
        errors: error rows written by this call (ids retried next time).
        correct: of the rows written, how many have ``correct`` true.
        skipped_correct: of the rows already done (``skipped``), how many have ``correct`` true.
        torn: torn last lines cut when the store was opened.
        wall_s: seconds this call took.
        resumed: the store existed before.
    """

    rundir: Path
    mode: str
    selected: int = 0
    skipped: int = 0
    written: int = 0
    errors: int = 0
    correct: int = 0
    skipped_correct: int = 0
    torn: list[TornLine] = field(default_factory=list)
    wall_s: float = 0.0
    resumed: bool = False


class _Runner:
    """One run's workers: holds the model, the store, the guard and the counters."""

    def __init__(self, mode: Mode, model: ChatModel, store: RunStore, guard_config: GuardConfig | None,
                 summary: RunSummary, bar: Any, max_consecutive_errors: int, raw_tokens_per_step: int,
                 observer: Any | None = None) -> None:
        self.mode, self.model, self.store, self.summary, self.bar = mode, model, store, summary, bar
        self.raw_tokens_per_step = raw_tokens_per_step
        self.max_consecutive_errors = max_consecutive_errors
        self.consecutive_errors = 0
        self.guard_config, self.observer = guard_config, observer
        self.guard = None
        if mode == "guarded":
            from stepguard.guard import Guard

            self.guard = Guard(model, guard_config, observer=observer)

    async def one(self, inst: Instance | ProcedureCase) -> None:
        """Execute one instance and write its row (or an error row); never writes a row twice."""
        t0 = time.perf_counter()
        try:
            row = await arun_case(inst, self.mode, self.model, guard_config=self.guard_config, guard=self.guard,
                                  raw_tokens_per_step=self.raw_tokens_per_step, observer=self.observer)
        except ModelError as exc:
            self.store.add_error(error_row(inst, self.mode, exc, time.perf_counter() - t0))
            self.summary.errors += 1
            self.consecutive_errors += 1
            self._tick()
            if self.consecutive_errors >= self.max_consecutive_errors:
                raise ModelError(f"stopping after {self.consecutive_errors} model errors in a row; last: {exc}") from exc
            return
        self.consecutive_errors = 0
        self.store.add_result(row)
        self.summary.written += 1
        self.summary.correct += bool(row.get("correct"))
        self._tick()

    def _tick(self) -> None:
        s = self.summary
        self.bar.set_postfix_str(f"correct {s.correct}/{s.written} errors {s.errors}", refresh=False)
        self.bar.update(1)


async def arun_benchmark(
    instances: str | Path | Iterable[Instance | ProcedureCase],
    mode: Mode,
    model: ChatModel,
    rundir: str | Path,
    *,
    limit: int | None = None,
    configs: str | Iterable[tuple[int, int]] | None = None,
    concurrency: int = 4,
    guard_config: GuardConfig | GuardOptions | None = None,
    raw_tokens_per_step: int = RAW_TOKENS_PER_STEP,
    progress: bool = True,
    max_consecutive_errors: int = 10,
    observer: GuardObserver | None = None,
) -> RunSummary:
    """Async form of :func:`run_benchmark` (same arguments, same errors)."""
    from tqdm.auto import tqdm

    if mode not in ("raw", "guarded", "reask"):
        raise ValueError(f"mode must be 'raw', 'guarded' or 'reask', not {mode!r}")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    wanted = parse_configs(configs)
    make, inst_meta = instance_source(instances)
    config: GuardConfig | None = None
    if mode == "guarded":
        procedures = _run_procedures(make, inst_meta, instances)
        refuse_computed(procedures or ())  # before the store is created
        config = resolve_guard_config(guard_config, procedures)
    _check_selection(make, inst_meta["file"] if inst_meta["file"] is not None or isinstance(instances, Sequence) else False,
                     wanted, limit)  # before the store is created or opened
    t0 = time.perf_counter()
    store = RunStore.open(rundir, run_meta(mode, model, config, inst_meta, raw_tokens_per_step),
                          sync_interval_s=SYNC_INTERVAL_S)
    summary = RunSummary(Path(rundir), mode, torn=list(store.torn), resumed=store.resumed)
    quiet = warnings.catch_warnings()
    quiet.__enter__()
    # LangGraph warns at every graph call that durability needs a checkpointer; the benchmark's
    # durability is the run store, so the warning is noise here.
    warnings.filterwarnings("ignore", message="`durability` has no effect", category=UserWarning)
    try:
        todo = _todo(make, inst_meta, instances, store, wanted, limit)
        bar = tqdm(total=todo, desc=f"{mode} {getattr(model, 'spec', '')}", unit="inst", disable=not progress, dynamic_ncols=True)
        runner = _Runner(mode, model, store, config, summary, bar, max_consecutive_errors, raw_tokens_per_step, observer)
        sem = asyncio.Semaphore(concurrency)

        async def bounded(inst: Instance | ProcedureCase) -> None:
            try:
                await runner.one(inst)
            finally:
                sem.release()

        ticker = asyncio.create_task(_tick(bar)) if progress else None
        done: set[str] = set()  # the selected ids already finished, to count their correct rows
        try:
            async with asyncio.TaskGroup() as tg:
                for inst in select(make(), wanted, limit):
                    if inst.id in store.finished:
                        summary.skipped += 1
                        done.add(inst.id)
                        continue
                    await sem.acquire()
                    tg.create_task(bounded(inst))
        except BaseExceptionGroup as group:
            raise _first(group) from None
        finally:
            if ticker is not None:
                ticker.cancel()
            bar.close()
    finally:
        quiet.__exit__(None, None, None)
        store.close()
        summary.wall_s = time.perf_counter() - t0
    summary.selected = summary.skipped + summary.written + summary.errors
    if done:
        from stepguard.bench.store import RESULTS, iter_rows

        summary.skipped_correct = sum(1 for r in iter_rows(store.rundir / RESULTS) if r.get("id") in done and r.get("correct") is True)
    return summary


def _todo(make: Any, inst_meta: dict[str, Any], instances: Any, store: RunStore, wanted: frozenset[tuple[int, int]] | None,
          limit: int | None) -> int | None:
    """The progress bar's total: the selected instances not yet finished, exact with filters, from a
    line count without; ``None`` (unknown) for a one-shot iterable (not walked)."""
    todo = None
    jsonl = inst_meta["file"] if inst_meta["file"] is not None and not is_suite(inst_meta["file"]) else None
    if jsonl is not None and wanted is None and limit is None:
        todo = max(0, count_lines(jsonl) - len(store.finished))
    elif inst_meta["file"] is not None or isinstance(instances, Sequence):  # a suite is held in memory: walk it
        ids = light(jsonl) if jsonl is not None else make()
        todo = sum((i["id"] if isinstance(i, dict) else i.id) not in store.finished for i in select(ids, wanted, limit))
    return todo


def resolve_guard_config(given: GuardConfig | GuardOptions | None, procedures: list[Procedure] | None) -> GuardConfig:
    """Guarded mode's configuration: ``given`` when a :class:`~stepguard.guard.GuardConfig`, else the
    options (none: all defaults) resolved as every way in resolves them
    (:meth:`~stepguard.guard.GuardOptions.resolve`): the defaults by procedure of
    ``procedures`` (a suite's; ``None`` for generated integer sums) and the benchmark's
    (:func:`~stepguard.guard.defaults_for` with ``benchmark``)."""
    from stepguard.guard import GuardConfig, GuardOptions

    if isinstance(given, GuardConfig):
        return given
    return (given or GuardOptions()).resolve(procedures, benchmark=True)


def _run_procedures(make: Any, inst_meta: dict[str, Any], instances: Any) -> list[Procedure] | None:
    """The procedures of a suite or of a sequence of cases (one configuration serves them all);
    ``None`` for generated instances (integer sums by construction) and one-shot iterables (not walked)."""
    from stepguard.bench.suites import ProcedureCase

    if inst_meta["file"] is not None and not is_suite(inst_meta["file"]):
        return None
    if inst_meta["file"] is None and not isinstance(instances, Sequence):
        return None
    return [case.procedure for case in make() if isinstance(case, ProcedureCase)] or None


def check_selection(instances: str | Path | Sequence[Instance | ProcedureCase], configs: str | None, limit: int | None) -> None:
    """Check a run's selection before anything runs (``stepguard bench run`` calls it before loading the model).

    Raises:
        ValueError: ``limit`` below 1, a malformed ``configs``, or ``configs`` matching no instance
            (the message names the selection and the configurations the instances hold).
        ProcedureError: a suite that cannot load.
    """
    make, inst_meta = instance_source(instances)
    _check_selection(make, inst_meta["file"], parse_configs(configs), limit)


def _check_selection(make: Any, file: str | None | Literal[False], wanted: frozenset[tuple[int, int]] | None, limit: int | None) -> None:
    """Raise ValueError naming the selection when ``limit`` is below 1 or no instance matches ``wanted``
    (``file`` False: a one-shot iterable, not walked)."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (instances per configuration), not {limit}")
    if wanted is None or file is False:
        return
    jsonl = file if file is not None and not is_suite(file) else None
    present: set[tuple[int, Any]] = set()
    for inst in (light(jsonl) if jsonl is not None else make()):
        key = (inst["n_steps"], inst["lookback"]) if isinstance(inst, dict) else (inst.n_steps, inst.lookback)
        if key in wanted:
            return
        present.add(key)
    asked = ",".join(f"{n}x{lb}" for n, lb in sorted(wanted))
    where = file or "the instances given"
    if present and all(lb is None for _, lb in present):
        raise ValueError(f"configs {asked} selects nothing in {where}: its cases are procedures with no look-back, "
                         "which configurations never select; leave configs out (limit takes N cases per step count)")
    held = ", ".join(f"{n}x{lb}" for n, lb in sorted(present, key=lambda k: (k[0], k[1] or 0))) or "no instances"
    raise ValueError(f"configs {asked} matched no instance in {where} (it holds {held})")


async def _tick(bar: Any, every_s: float = 5.0) -> None:
    """Redraw the progress bar every ``every_s`` seconds, so its elapsed time moves while one long
    instance runs (a raw 23-step reply took minutes on a busy machine, and the bar looked hung)."""
    while True:
        await asyncio.sleep(every_s)
        bar.refresh()


def _first(group: BaseExceptionGroup) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def run_benchmark(
    instances: str | Path | Iterable[Instance | ProcedureCase],
    mode: Mode,
    model: ChatModel,
    rundir: str | Path,
    *,
    limit: int | None = None,
    configs: str | Iterable[tuple[int, int]] | None = None,
    concurrency: int = 4,
    guard_config: GuardConfig | GuardOptions | None = None,
    raw_tokens_per_step: int = RAW_TOKENS_PER_STEP,
    progress: bool = True,
    max_consecutive_errors: int = 10,
    observer: GuardObserver | None = None,
) -> RunSummary:
    """Execute instances in raw or guarded mode and append one row per instance to the run store.

    Args:
        instances: an instances JSONL file (streamed; its sha256 goes into run.json), a suite
            (a procedure file with its ``NAME.inputs.yaml``, or a folder of them: one case per
            input set, :mod:`stepguard.bench.suites`; the sha256 is over every file read), or an
            iterable of :class:`~stepguard.bench.instances.Instance` or
            :class:`~stepguard.bench.suites.ProcedureCase`. Cases of a suite have no look-back:
            ``configs`` selects none of them (given one, the run is refused), and ``limit`` counts per step count.
        mode: ``"raw"`` (one prompt, temperature 0, seed 0, ``max_tokens = raw_tokens_per_step x N + 64``; a
            suite's procedure with a prompt file, ``NAME.prompt.yaml``, is sent its user's messages instead
            and its answer read as that file declares: :mod:`stepguard.bench.user_prompt`) or
            ``"guarded"`` (:class:`~stepguard.guard.Guard`) or ``"reask"`` (Instructor's re-ask loop, the
            peer a user would pick instead: :mod:`stepguard.bench.reask`; generated instances only).
        model: any :class:`~stepguard.model.ChatModel`; the caller closes it.
        rundir: the run store folder; an existing one is resumed (finished ids skipped, error
            rows retried) if its run.json matches.
        limit: at most this many instances per configuration (steps, look-back), in file order.
        configs: only these configurations: ``"95x7,23x2"`` or ``[(95, 7), (23, 2)]``.
        concurrency: instances in flight at once.
        guard_config: guarded mode's configuration, whole; or :class:`~stepguard.guard.GuardOptions`
            (none: all defaults) resolved as the CLI, the drop-in client and the proxy resolve them: the
            defaults by procedure of a suite's procedures (one configuration for the run: a suite mixing
            integer sums and others gets the production settings), then :data:`GUARDED_DEFAULTS`
            (:func:`resolve_guard_config`).
        raw_tokens_per_step: raw mode's token allowance per step (:data:`RAW_TOKENS_PER_STEP`).
        progress: show a tqdm bar (rate and ETA) on stderr.
        max_consecutive_errors: stop after this many model errors in a row (a dead endpoint).
        observer: guarded mode's observer (``stepguard.telemetry.OtelObserver``: one
            ``invoke_workflow`` trace per instance, its thread id the instance id); raw mode has none.

    Returns:
        A :class:`RunSummary`.

    Each call runs its own event loop (``asyncio.run``). A model whose async HTTP client is bound
    to the loop of its first call (the ``openai``-based adapters) then fails on a second call; to run
    raw and guarded mode on one model, await :func:`arun_benchmark` twice inside one loop (as
    :func:`stepguard.bench.demo.run_demo` does), or load the model again.

    Raises:
        RunStoreError: RUNDIR is locked by another process, holds a different run, or is corrupt.
        ModelError: ``max_consecutive_errors`` model errors in a row (rows so far are kept).
        KeyboardInterrupt: Ctrl-C; every finished row is already on disk.
        ValueError: a bad ``mode``, ``concurrency``, ``limit`` (below 1) or ``configs``, or ``configs``
            that matches no instance (named, with the configurations the instances hold); raised
            before the run directory is created or opened.
        ProcedureError: a bad instances line, or a suite file that is invalid or has no input sets
            (names the file and what to add).
    """
    return asyncio.run(arun_benchmark(
        instances, mode, model, rundir, limit=limit, configs=configs, concurrency=concurrency,
        guard_config=guard_config, raw_tokens_per_step=raw_tokens_per_step, progress=progress,
        max_consecutive_errors=max_consecutive_errors, observer=observer,
    ))
