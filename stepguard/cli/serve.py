"""``stepguard serve``: the guarding proxy, an OpenAI-compatible server in front of a model spec.

Exit codes: 0 stopped; 2 usage (a bad spec, ``--workers`` with the embedded model, the ``serve``
extra missing, a ``--host``/``--port`` it cannot listen on); 5 a procedure file is invalid; 6 the
upstream model could not be loaded, or the proxy did not start; 7 the checkpoint database could not
be opened. Usage errors are found before anything else is checked or started.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Annotated, Optional

import typer

from stepguard.cli._exit import ExitCode, exit_for_error, fail
from stepguard.cli._telemetry import OtelOption, TraceFileOption
from stepguard.errors import StepguardError

__all__ = ["register", "serve_command"]


def serve_command(
    upstream: Annotated[str, typer.Option(
        "--upstream", metavar="SPEC",
        help="The model behind the proxy: local, sim:perfect, http://host:port/v1#name, openai:NAME, ...")] = "local",
    procedures: Annotated[Optional[Path], typer.Option(
        "--procedures", metavar="DIR",
        help="A folder of procedure files, served as the models stepguard/<file name>.")] = None,
    host: Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", metavar="PORT", min=0, max=65535,
                                      help="TCP port (0: a free one, printed).")] = 8787,
    token: Annotated[Optional[str], typer.Option(
        "--token", metavar="TOKEN", envvar="STEPGUARD_PROXY_TOKEN", show_envvar=True,
        help="Bearer token every request must carry (default: none; prefer the environment variable).")] = None,
    checkpoint: Annotated[Optional[str], typer.Option(
        "--checkpoint", metavar="FILE|URL",
        help="Checkpoints of guarded runs, so a request with a thread_id resumes: a SQLite file (one machine) "
             "or a postgresql:// URL shared by workers (the postgres extra).")] = None,
    workers: Annotated[int, typer.Option(
        "--workers", metavar="N", min=1, help="Worker processes (more than 1: use a postgresql:// --checkpoint).")] = 1,
    max_runs: Annotated[int, typer.Option(
        "--max-runs", metavar="N", min=1, help="Guarded runs executing at once per worker; more wait.")] = 32,
    max_body_mb: Annotated[float, typer.Option(
        "--max-body-mb", metavar="MIB", min=0.001, max=1024 * 1024,
        help="Largest request body taken, in MiB; a larger one is answered 413 before it is read whole.")] = 32.0,
    timeout: Annotated[Optional[float], typer.Option(
        "--timeout", metavar="SECONDS", help="Seconds one upstream call attempt may take (default: the adapter's).")] = None,
    tools: Annotated[Optional[str], typer.Option(
        "--tools", metavar="MODULE:ATTR",
        help="The tools tool steps call, imported from MODULE:ATTR (examples.agent_tools:TOOLS, or path/file.py:TOOLS); "
             "a request for a procedure whose tools are not given is refused.")] = None,
    otel: OtelOption = False,
    trace_file: TraceFileOption = None,
) -> None:
    """Serve an OpenAI-compatible endpoint that runs named procedures under the guard.

    POST /v1/chat/completions with model "stepguard/<procedure>" (or extra_body {"stepguard": {...}})
    runs the procedure guarded; every other request passes through to the upstream unchanged.
    GET /v1/models lists the procedures and the upstream's models. See docs/proxy.md.
    --otel / --trace-file trace every guarded run as `stepguard run` does (docs/tracing.md).

    Exit codes: 0 stopped; 2 usage error (a bad option or spec, --workers with the embedded model,
    a --host/--port it cannot listen on: in use, not this machine's address); 5 invalid procedure
    file; 6 the upstream model could not be loaded or the proxy did not start; 7 unreadable checkpoint
    database.
    """
    from stepguard.adapters import parse_model_spec
    from stepguard.cli._open_model import check_timeout
    from stepguard.serve import ListenError, StartupError, listen

    try:  # usage errors first: nothing is checked, loaded or started before the command line is right
        spec = parse_model_spec(upstream)
    except StepguardError as exc:
        raise fail(exc, ExitCode.USAGE) from None
    check_timeout(timeout)
    if workers > 1 and spec.kind == "local":
        raise fail("--workers needs an upstream with an endpoint of its own: start the embedded model once with "
                   "`stepguard model serve` and pass its spec (http://127.0.0.1:PORT/v1#NAME) as --upstream",
                   ExitCode.USAGE)
    try:
        sock = listen(host, port)  # held from here, so nothing takes the port while the rest is checked
    except ListenError as exc:
        raise fail(exc, ExitCode.USAGE) from None
    try:
        _check_and_serve(spec.kind, upstream, procedures, host, sock, token, checkpoint, workers, max_runs, timeout,
                         tools, max_body_mb, otel, trace_file)
    except StartupError as exc:
        raise fail(exc, ExitCode.MODEL) from None
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def _check_and_serve(kind: str, upstream: str, procedures: Path | None, host: str, sock: socket.socket, token: str | None,
                     checkpoint: str | None, workers: int, max_runs: int, timeout: float | None, tools: str | None,
                     max_body_mb: float, otel: bool = False, trace_file: Path | None = None) -> None:
    """Check what the workers will load (each failure with its own exit code), then serve on ``sock``."""
    from stepguard.serve import load_procedure_folder, open_checkpointer, serve
    from stepguard.tools import as_toolset, load_tools, missing_tools

    if kind == "local":  # the embedded server's settings, before the app starts it (a traceback there)
        from stepguard.adapters.models.local import check_runtime

        try:
            check_runtime()
        except StepguardError as exc:
            raise fail(exc, ExitCode.MODEL) from None
    try:
        served = load_procedure_folder(procedures) if procedures is not None else {}
        saver = open_checkpointer(checkpoint)  # reached once here, so a bad URL fails before any worker starts
        toolset = load_tools(tools) if tools else as_toolset(None)  # a bad spec fails here, before any worker
    except StepguardError as exc:
        raise fail(exc, exit_for_error(exc)) from None
    lacking = {n: m for n, p in served.items() if (m := missing_tools(p, toolset))}
    close = getattr(getattr(saver, "conn", None), "close", None)
    if close is not None:  # each worker opens its own
        close()
    names = ", ".join(f"stepguard/{n}" for n in served) or "none (pass-through only)"
    shown = re.sub(r"://[^/@#]*@", "://***@", upstream)  # credentials in a URL are never printed
    typer.echo(f"stepguard serve: upstream {shown}; procedures {names}; "
               f"auth {'bearer token' if token else 'none'}; checkpoints {'on' if checkpoint else 'off'}; "
               f"traces {_traces(otel, trace_file)}", err=True)
    if not token and not _loopback(host):
        typer.echo(f"warning: listening on {host} with no token: anyone who can reach this machine can run procedures "
                   "and use the upstream model (and its key) through it; set STEPGUARD_PROXY_TOKEN (or --token), or "
                   "listen on 127.0.0.1", err=True)
    for name, missing in lacking.items():
        typer.echo(f"note: stepguard/{name} calls {', '.join(missing)}, not given (--tools): its requests are refused", err=True)
    port = sock.getsockname()[1]  # the port bound (a free one for --port 0)
    typer.echo(f"base URL: http://{f'[{host}]' if ':' in host else host}:{port}/v1", err=True)
    serve(upstream=upstream, procedures=procedures, host=host, port=port, token=token, checkpoint=checkpoint,
          workers=workers, max_runs=max_runs, timeout=timeout, tools=tools,
          max_body_bytes=max(1, int(max_body_mb * 1024 * 1024)), sock=sock, otel=otel, trace_file=trace_file)


def _loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine reaches (``127.0.0.1``, ``::1``, ``localhost``)."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any address
        return False


def _traces(otel: bool, trace_file: Path | None) -> str:
    """What the start-up line says of tracing: ``off``, ``OTLP``, ``file X`` or both."""
    said = (["OTLP"] if otel else []) + ([f"file {trace_file}"] if trace_file is not None else [])
    return " and ".join(said) or "off"


def register(app: typer.Typer) -> None:
    """Add ``serve`` (:func:`serve_command`) to ``app``."""
    app.command("serve")(serve_command)
