"""``--otel`` and ``--trace-file``: declared once for every command that runs the guard, and one set-up.

``stepguard run``, ``stepguard bench run`` and ``stepguard serve`` take the same two options
(``serve``'s workers configure them in the app's lifespan: :func:`stepguard.serve.create_app`). :func:`traced` builds the
observer they ask for and flushes it when the command ends (at most 5 s). A trace or metrics
backend that cannot be reached is said once, on one line of stderr, and the command goes on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from stepguard.cli._exit import ExitCode, fail

__all__ = ["OtelOption", "TraceFileOption", "traced"]

# Optional[X], not X | None: typer reads the annotation at run time (pyproject.toml per-file-ignores)
OtelOption = Annotated[bool, typer.Option("--otel", help=(
    "Export traces over OTLP/HTTP to $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else http://127.0.0.1:4318 (docs/tracing.md)."))]
TraceFileOption = Annotated[Optional[Path], typer.Option("--trace-file", metavar="FILE", help=(
    "Append the spans to FILE as OTLP/JSON, one request per line (the Collector's otlpjsonfile format; docs/tracing.md)."))]


def _say(message: str) -> None:
    typer.echo(message, err=True)


@contextlib.contextmanager
def traced(otel: bool, trace_file: Path | None) -> Iterator[Any | None]:
    """The :class:`~stepguard.telemetry.OtelObserver` that ``--otel`` / ``--trace-file`` ask for, or None.

    Flushed (:func:`stepguard.telemetry.shutdown`) when the block ends, however it ends.

    Raises:
        typer.Exit: usage error (2) for an unsupported ``OTEL_EXPORTER_OTLP_PROTOCOL``.
    """
    if not otel and trace_file is None:
        yield None
        return
    from stepguard.telemetry import OtelObserver, configure_from_flags, shutdown

    try:
        providers = configure_from_flags(otel, trace_file, on_export_failure=_say)
    except ValueError as exc:
        raise fail(str(exc), ExitCode.USAGE) from None
    assert providers is not None  # asked for one of the two
    try:
        yield OtelObserver(*providers)
    finally:
        shutdown()
