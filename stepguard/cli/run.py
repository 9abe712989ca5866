"""``stepguard run``: execute one procedure under the guard and print the verified result.

The exit status tells the outcome (:class:`stepguard.cli._exit.ExitCode`): 0 verified, 1 failed,
3 flagged, 4 repaired; 2 usage, 5 invalid procedure or inputs, 6 model or server, 7 checkpoint.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from stepguard.cli._deferred import Deferred
from stepguard.cli._exit import ExitCode, exit_for_error, exit_for_status, fail
from stepguard.cli._guard_options import build_guard_config, by_procedure_notes, guard_command, guard_option_defaults
from stepguard.cli._open_model import ModelSpec, Timeout, open_model
from stepguard.cli._progress import Progress
from stepguard.cli._telemetry import OtelOption, TraceFileOption, traced
from stepguard.errors import BudgetExhausted, StepDeviation, StepguardError

if TYPE_CHECKING:
    from stepguard.guard import GuardResult

__all__ = ["print_result", "register", "run_command"]


def _parse_inputs(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint="--input")
        if name.strip() in out:
            raise typer.BadParameter(f"{name.strip()} given twice ({name.strip()}={out[name.strip()]!r}, then {pair!r}): "
                                     "give each input once", param_hint="--input")
        out[name.strip()] = value.strip()
    return out


def _inputs(pairs: list[str], inputs_file: Path | None) -> dict[str, Any]:
    """The run's inputs: ``--inputs-file``'s object, then each ``-i NAME=VALUE`` over it (a flag wins).

    The file is read strictly (:func:`stepguard.procedure.load_inputs_file`: ``.json`` as JSON, else
    YAML 1.2 core scalars; numbers exact, as written).

    Raises:
        ProcedureError: the file cannot be read, or holds something other than an object of values.
        typer.BadParameter: a flag that is not NAME=VALUE, or one name given twice in flags.
    """
    from stepguard.errors import ProcedureError
    from stepguard.procedure import load_inputs_file

    given: dict[str, Any] = {}
    if inputs_file is not None:
        loaded = load_inputs_file(inputs_file)
        if not isinstance(loaded, dict):
            kind = "a list" if isinstance(loaded, list) else type(loaded).__name__
            raise ProcedureError(f"must hold an object of input values (name: value), not {kind}"
                                 + (" (a suite's cases: run them with `stepguard bench run`)" if isinstance(loaded, list) else ""),
                                 str(inputs_file))
        given.update(loaded)
    given.update(_parse_inputs(pairs))  # a flag overrides the file's value of the same name
    return given


def print_result(result: GuardResult) -> None:
    """Print a per-step table and the outcome line for a person.

    Values print with the places their step declares (``1221.00`` for a 2-place decimal);
    ``reprompts`` is each step's :attr:`~stepguard.guard.StepOutcome.reprompts`. Calls and tokens are
    what this run spent (:attr:`GuardResult.spent`); a resumed thread's line says so and gives the
    thread's totals (:attr:`GuardResult.usage`).
    """
    sim = "  [SIMULATED model: not a model's accuracy]" if result.simulated else ""
    typer.echo(f"procedure {result.procedure}  model {result.model}{sim}")
    texts = [s.text if s.text is not None else "-" for s in result.steps]
    name_w = max([12, *(len(s.var) for s in result.steps)])  # columns as wide as the longest name and value
    value_w = max([14, *(len(t) for t in texts if "\n" not in t)])
    typer.echo(f"{'step':<{name_w}} {'value':>{value_w}}  {'provenance':<15} {'grade':<10} reprompts")
    for s, text in zip(result.steps, texts, strict=True):
        typer.echo(f"{s.var:<{name_w}} {text:>{value_w}}  {s.provenance:<15} {s.grade or '-':<10} {s.reprompts}")
    for d in result.deviations:
        typer.echo(f"  deviation at {d.step}: {d.kind} -> {d.action}{' (' + d.rung + ')' if d.rung else ''}: {d.detail}")
    u = result.spent  # this run's: a resumed finished thread made no calls now
    typer.echo(
        f"status {result.status}  answer {result.answer_var} = {result.answer_text if result.answer is not None else '-'}  "
        f"chunks {result.chunks}  "
        f"re-prompts {result.reprompts}  repaired {result.repaired}  calls {u.model_calls}  "
        f"tokens in/out {u.input_tokens}/{u.output_tokens}  wall {u.wall_s:.2f}s"
    )
    if result.status == "bounded":
        weak = ", ".join(f"{s.var} ({s.grade})" for s in result.steps if s.grade in ("bounded", "free_text"))
        typer.echo(f"bounded: {weak} passed a predicate or format check only, which proves no one value; "
                   "a procedure accepts such a step by naming it in accept_bounded")
    if result.resumed is not None:
        t = result.usage
        how = ("it had finished: given back from the checkpoint, nothing asked again" if result.resumed == "finished"
               else "gone on from its last commit")
        typer.echo(f"resumed thread {result.thread_id} ({how}); calls and tokens above are this run's. "
                   f"The thread's in all: calls {t.model_calls}  tokens in/out {t.input_tokens}/{t.output_tokens} "
                   "(chunks and re-prompts above are the thread's too)")
    if result.first_unverified:
        typer.echo(f"first unverified step: {result.first_unverified}")


class _PromptEcho:
    """An observer that prints what ``--show-prompts`` / ``--show-replies`` ask, then forwards every hook to ``inner``.

    ``prompts``: each re-prompt's correction note, the first paragraph of its user message
    (``correction.txt`` starts with ``$note``), headed by its chunk, steps, attempt and rung (a derived
    rung's sub-steps each under their own). ``replies``: each model reply as the model wrote it, headed
    likewise. Both on stderr: stdout stays the result, ``--json`` included. Nothing is captured in spans: content capture stays off unless asked for
    (docs/tracing.md). Like every observer it never raises.
    """

    def __init__(self, inner: Any | None, prompts: bool = True, replies: bool = False) -> None:
        from stepguard.guard import NullObserver

        self.inner = inner or NullObserver()
        self.prompts, self.replies = prompts, replies
        self._rung: str | None = None
        self._step = ""
        self._notes = 0
        self._where = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        """Remember the rung and the steps; forward."""
        self._rung, self._step, self._notes = rung, f"{attempt}", 0
        steps = f"step {start + 1}" if end - start == 1 else f"steps {start + 1}-{end}"
        self._where = f"chunk {chunk}, {steps}, attempt {attempt}" + (f", {rung}" if rung else "")
        self.inner.chunk_started(chunk, start, end, rung, attempt)

    @contextlib.contextmanager
    def model_call(self, messages: list[Any], settings: Any) -> Iterator[Any]:
        """Print the correction note of a re-prompt; forward; print the reply when it comes."""
        if self.prompts and self._rung is not None:
            try:
                note = str(messages[-1]["content"]).split("\n\n", 1)[0].strip()
                if not note.startswith("Known values"):  # a derived rung's first sub-prompt has no note
                    self._notes += 1
                    typer.echo(f"--- {self._heading()} ---\n{note}", err=True)
            except Exception:  # noqa: BLE001 - an observer never breaks a run
                pass
        with self.inner.model_call(messages, settings) as record:
            yield _ReplyEcho(record, self._where) if self.replies else record


    def _heading(self) -> str:
        """``re-prompt (chunk 1, step 3, attempt 1, restate)``; under a derived rung (``split``), whose
        nested run re-asks its own sub-steps, ``sub-step re-prompt 2 inside split (chunk 1, ...)``."""
        from stepguard.guard.rungs import get_rung

        try:
            derived = self._rung is not None and get_rung(self._rung).derives
        except Exception:  # noqa: BLE001 - an unknown rung: the plain heading
            derived = False
        if derived:
            return f"sub-step re-prompt {self._notes} inside {self._rung} ({self._where})"
        return f"re-prompt ({self._where})"


class _ReplyEcho:
    """A model-call record that prints the reply's text on stderr, then hands it to ``inner``."""

    def __init__(self, inner: Any, where: str) -> None:
        self.inner, self.where = inner, where

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def response(self, response: Any) -> None:
        """Print the reply as the model wrote it; forward."""
        try:
            typer.echo(f"--- reply ({self.where}; finish {response.finish_reason}) ---\n{response.text}", err=True)
        except Exception:  # noqa: BLE001 - an observer never breaks a run
            pass
        self.inner.response(response)


def run_command(
    procedure: Annotated[Path, typer.Argument(metavar="PROCEDURE", help="Procedure file (.yaml, .yml, .json).", show_default=False)],
    input: Annotated[Optional[list[str]], typer.Option(
        "--input", "-i", metavar="NAME=VALUE", help="An input value (repeat for each input); wins over --inputs-file.")] = None,
    inputs_file: Annotated[Optional[Path], typer.Option(
        "--inputs-file", metavar="FILE",
        help="The inputs as one JSON or YAML object (name: value), read strictly; -i NAME=VALUE overrides a value.")] = None,
    model: ModelSpec = "local",
    checkpoint: Annotated[Optional[Path], typer.Option(
        "--checkpoint", metavar="FILE", help="SQLite checkpoint file (resume with --thread-id).")] = None,
    thread_id: Annotated[Optional[str], typer.Option(
        "--thread-id", metavar="ID", help="Checkpoint thread id (with --checkpoint): the same id resumes the same work.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the GuardResult as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=(
        "Print no progress on stderr (by default each step as it commits and each deviation, as the run goes)."))] = False,
    otel: OtelOption = False,
    trace_file: TraceFileOption = None,
    show_prompts: Annotated[bool, typer.Option("--show-prompts", help="Print each re-prompt's correction note as it is sent, on stderr.")] = False,
    show_replies: Annotated[bool, typer.Option("--show-replies", help=(
        "Print each model reply as the model wrote it, on stderr (spans still hold no content; docs/tracing.md)."))] = False,
    tools: Annotated[Optional[str], typer.Option("--tools", metavar="MODULE:ATTR", help=(
        "The tools tool steps call, imported from MODULE:ATTR (examples.agent_tools:TOOLS, or path/file.py:TOOLS); "
        "a procedure file never imports code itself."))] = None,
    timeout: Timeout = None,
) -> None:
    """Execute PROCEDURE stepwise under the guard and print the verified result.

    The guard options (--chunk-size to --follow) are GuardConfig's fields (docs/options.md).

    Values print with the places their step declares (1221.00), in the table and with --json.
    Progress goes to stderr as the run goes (each step as it commits, each deviation); --quiet
    turns it off. Exit status: 0 verified, 1 failed, 3 flagged, 4 repaired, 8 bounded (see `stepguard --help`).
    """
    from stepguard.guard import Guard, GuardResult, sqlite_checkpointer
    from stepguard.procedure import load_procedure

    if thread_id is not None and not thread_id.strip():  # it names no thread: a retry would run every call and tool again
        raise typer.BadParameter("must not be empty or white space: it names the checkpoint thread a retry resumes",
                                 param_hint="--thread-id")
    if thread_id is not None and checkpoint is None:  # nothing would be kept: the thread could never resume
        from stepguard.guard import thread_needs_checkpointer

        raise fail(thread_needs_checkpointer("--checkpoint FILE"), ExitCode.USAGE)
    try:
        with traced(otel, trace_file) as observer:
            if show_prompts or show_replies:
                observer = _PromptEcho(observer, prompts=show_prompts, replies=show_replies)
            proc = load_procedure(procedure)
            from stepguard.procedure import check_input_names
            from stepguard.tools import load_tools

            inputs = _inputs(input or [], inputs_file)
            check_input_names([i.name for i in proc.inputs], inputs, f"procedure {proc.name!r}")  # with "did you mean"

            toolset = load_tools(tools) if tools else None
            config = build_guard_config(procedures=proc)
            saver = sqlite_checkpointer(checkpoint) if checkpoint else None
            with open_model(model, timeout, procedure=proc) as chat:
                guard = Guard(chat, config, saver, observer=observer, tools=toolset)
                progress = Progress(quiet)
                progress.header(proc, model, chat, config)
                for update in guard.stream(proc, inputs, thread_id=thread_id):
                    progress.show(update)
                assert isinstance(update, GuardResult)  # stream yields the result last
                result = update
    except (StepDeviation, BudgetExhausted) as exc:
        typer.echo(f"stopped: {exc}", err=True)
        if exc.result is not None:
            _print(exc.result, as_json)
        raise typer.Exit(exit_for_error(exc)) from None
    except KeyboardInterrupt:
        raise fail("interrupted", ExitCode.INTERRUPTED) from None
    except StepguardError as exc:
        raise fail(exc) from None
    _print(result, as_json)
    raise typer.Exit(exit_for_status(result.status))


def register(app: typer.Typer) -> None:
    """Add ``run`` (:func:`run_command`) to ``app``, its guard options' defaults read from GuardConfig."""
    app.command("run", cls=guard_command(_run_option_defaults))(run_command)


def _run_option_defaults() -> Deferred:
    """GuardConfig's defaults, except the options chosen by the procedure, which say how."""
    base = guard_option_defaults(by_procedure=True)
    return Deferred(base.defaults, by_procedure_notes(base.notes))


def _print(result: GuardResult, as_json: bool) -> None:
    """The result as a table, or as JSON (values keep their places as text: ``"1221.00"``; a list or
    JSON value is itself, its numbers exact: :meth:`GuardResult.model_dump_json`)."""
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        print_result(result)
