"""The typer application: sub-apps are registered here and nowhere else."""

from __future__ import annotations

import importlib

import typer

from stepguard.cli._exit import EXIT_CODES_HELP

__all__ = ["app", "main"]

app = typer.Typer(
    name="stepguard",
    help="Guard and measure language models executing multi-step procedures.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each sub-app lives in its own module; a missing module (work in progress) is skipped, not fatal.
for _module, _name in (("stepguard.cli.bench", "bench"), ("stepguard.cli.model", "model")):
    try:
        app.add_typer(importlib.import_module(_module).app, name=_name)
    except ImportError as _exc:  # pragma: no cover - only while a sub-app is missing
        if _exc.name != _module:
            raise

from stepguard.cli import run as _run  # noqa: E402  (registers `stepguard run`)

_run.register(app)
importlib.import_module("stepguard.cli.authoring").register(app)  # `stepguard init`, `stepguard check`


def main() -> None:
    """Entry point of the ``stepguard`` console script. A command that needs an extra that is not
    installed (``stepguard bench report`` without matplotlib) exits with status 2 and one line
    naming the ``pip install`` that fixes it, not a traceback."""
    from stepguard.errors import MissingExtraError

    try:
        app()
    except MissingExtraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
