"""Exit codes of the ``stepguard`` command, one table for every sub-command.

Only a verified run (or a command that did all its work) exits 0; a run that finished with
values the model did not verify exits with a code of its own, so a script can tell them apart.
"""

from __future__ import annotations

from enum import IntEnum

import typer

from stepguard.errors import (
    BudgetExhausted,
    CheckpointError,
    EvaluationError,
    LocalServerError,
    ModelError,
    ModelSpecError,
    ProcedureError,
    RunStoreError,
    StepDeviation,
)

__all__ = ["EXIT_CODES_HELP", "ExitCode", "exit_for_error", "exit_for_status", "fail"]


class ExitCode(IntEnum):
    """What ``stepguard``'s exit status means."""

    OK = 0
    """``run``: the result is verified (every value graded exact, computed, matched or tool, or accepted bounded); other commands: done."""
    FAILED = 1
    """``run``: the guard stopped the run (a deviation under ``--policy raise``, a spent budget) or steps are missing."""
    USAGE = 2
    """The command line is wrong: an unknown option, a bad value (click/typer's own code)."""
    FLAGGED = 3
    """``run``: finished, but some values are the model's, unverified (``flagged``)."""
    REPAIRED = 4
    """``run``: finished, with some values supplied by the guard, not the model (``repaired``)."""
    PROCEDURE = 5
    """The procedure file or its inputs are invalid (every error is printed, with its location)."""
    MODEL = 6
    """The model or its server failed (unreachable, timed out, cut off, could not start)."""
    DATA = 7
    """A checkpoint, run store or other data file is unreadable, invalid or cannot be written."""
    BOUNDED = 8
    """``run``: finished, every value checked, but some only by a predicate or format (grade ``bounded`` or
    ``free_text``) on a step the procedure does not name in ``accept_bounded`` (``bounded``)."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C)."""


EXIT_CODES_HELP = "Exit codes: " + "; ".join(
    f"{int(code)} {text}"
    for code, text in (
        (ExitCode.OK, "verified (run) or done"),
        (ExitCode.FAILED, "run failed (the guard stopped it)"),
        (ExitCode.USAGE, "usage error"),
        (ExitCode.FLAGGED, "flagged (unverified values kept)"),
        (ExitCode.REPAIRED, "repaired (guard-supplied values)"),
        (ExitCode.PROCEDURE, "invalid procedure or inputs"),
        (ExitCode.MODEL, "model or server error"),
        (ExitCode.DATA, "unreadable or unwritable checkpoint, run store or data file"),
        (ExitCode.BOUNDED, "bounded (a value only a predicate or format checked)"),
        (ExitCode.INTERRUPTED, "interrupted"),
    )
) + "."
"""One line for help texts (and so docs/cli.md)."""

_STATUS = {"verified": ExitCode.OK, "repaired": ExitCode.REPAIRED, "flagged": ExitCode.FLAGGED, "failed": ExitCode.FAILED,
           "bounded": ExitCode.BOUNDED}


def exit_for_status(status: str) -> ExitCode:
    """The exit code of a finished run with :attr:`stepguard.guard.GuardResult.status` ``status``.

    Raises:
        KeyError: ``status`` is not one of verified, bounded, repaired, flagged, failed.
    """
    return _STATUS[status]


def exit_for_error(exc: BaseException) -> ExitCode:
    """The exit code for an error a command caught (anything unlisted is a ``FAILED`` run)."""
    if isinstance(exc, (StepDeviation, BudgetExhausted)):
        return ExitCode.FAILED
    if isinstance(exc, (ProcedureError, EvaluationError)):
        return ExitCode.PROCEDURE
    if isinstance(exc, ModelSpecError):  # a spec the user wrote that names no model: their usage, not a model's failure
        return ExitCode.USAGE
    if isinstance(exc, (ModelError, LocalServerError)):
        return ExitCode.MODEL
    if isinstance(exc, (CheckpointError, RunStoreError, OSError)):
        return ExitCode.DATA
    if isinstance(exc, ValueError):
        return ExitCode.USAGE
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.FAILED


def fail(error: BaseException | str, code: int | None = None) -> typer.Exit:
    """Print ``error`` on stderr, one ``error: `` line per line of it, and return the ``typer.Exit`` to raise.

    Args:
        error: the exception caught, or a message.
        code: the exit code; default :func:`exit_for_error` of ``error`` (``DATA`` for a message).
    """
    for line in (str(error) or type(error).__name__).splitlines() or [""]:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(int(code if code is not None else ExitCode.DATA if isinstance(error, str) else exit_for_error(error)))
