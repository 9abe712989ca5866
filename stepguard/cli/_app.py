"""The typer application: every command and sub-app is registered here (or, for ``bench``, in
:mod:`stepguard.cli.bench`), each a module-level function of its own module.

Start-up is kept light: command modules import only typer and stepguard's small modules at the
top, and the heavy ones (LangGraph, the OpenTelemetry SDK, pydantic models, matplotlib) inside the
command that needs them; defaults that live in those modules are read when the command is used
(:mod:`stepguard.cli._deferred`). ``tests/cli/test_imports.py`` checks it;
``benchmarks/bench_cli_startup.py`` measures it.
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated, TextIO

# The command line loads no pydantic plugins (their discovery scans every installed package's
# metadata: about a third of `stepguard check`'s start-up). A user who wants them sets the variable.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer

from stepguard.cli import authoring, bench, model, run, serve
from stepguard.cli._exit import EXIT_CODES_HELP

__all__ = ["app", "main", "version_callback"]

app = typer.Typer(
    name="stepguard",
    help="Guard and measure language models executing multi-step procedures.\n\n" + EXIT_CODES_HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def version_callback(value: bool) -> None:
    """Print ``stepguard <version>`` and exit, when ``--version`` is given."""
    if value:
        from stepguard import __version__

        typer.echo(f"stepguard {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """The root's options; the help text is the app's."""


run.register(app)  # `stepguard run`
authoring.register(app)  # `stepguard init`, `stepguard check`
serve.register(app)  # `stepguard serve`
app.add_typer(bench.app, name="bench")
app.add_typer(model.app, name="model")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A warning on the command line: one ``warning:`` line on stderr, never Python's file and line.
    A :class:`~stepguard.guard.LadderWarning` names the flag that chose the ladder, not the Python API."""
    reason = getattr(message, "reason", None)
    text = f"{reason}; --ladder replaces the procedure's default ladder (docs/policies.md, \"Defaults by procedure\")" if reason else str(message)
    typer.echo(f"warning: {text}", err=True)


def main() -> None:
    """Entry point of the ``stepguard`` console script. A command that needs an extra that is not
    installed (``stepguard bench report`` without matplotlib) exits with status 2 and one line
    naming the ``pip install`` that fixes it, not a traceback."""
    from stepguard.errors import MissingExtraError

    warnings.showwarning = _show_warning
    try:
        app(prog_name="stepguard")
    except MissingExtraError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None
