"""The guard's options, declared once for every command that runs the guard, and one builder.

``stepguard run``, ``stepguard bench run`` and ``stepguard bench demo`` take the same options with
the same names and metavars; each option's default is :class:`~stepguard.guard.GuardConfig`'s own,
read when the command is used (:mod:`stepguard.cli._deferred`), so the command line cannot drift
from the library. The one exception is the benchmark's ``--on-exhausted``, whose default is
:data:`stepguard.bench.run.GUARDED_DEFAULTS`, the same one ``run_benchmark`` uses.

A command declares ``chunk_size: ChunkSize = None`` and so on, and calls :func:`guard_options` (or
:func:`build_guard_config`) with them; ``None`` means "the default". The values are read and checked
by :class:`stepguard.guard._options.GuardOptions`, as the drop-in client's and the proxy's are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from stepguard.cli._deferred import Deferred
from stepguard.cli._exit import ExitCode, fail

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig, GuardOptions

__all__ = [
    "Adaptive",
    "ChunkSize",
    "GUARD_FIELDS",
    "Ladder",
    "MaxReprompts",
    "MaxTotalTokens",
    "MaxWallS",
    "InlineKnown",
    "Streamed",
    "Window",
    "Follow",
    "OnExhausted",
    "PolicyOption",
    "build_guard_config",
    "guard_option_defaults",
    "guard_options",
]


ChunkSize = Annotated[Optional[int], typer.Option("--chunk-size", metavar="N", help="Steps per model call.")]
Adaptive = Annotated[Optional[bool], typer.Option("--adaptive/--no-adaptive",
                                                  help="Shrink chunks after deviations, grow them after clean ones.")]
PolicyOption = Annotated[Optional[str], typer.Option("--policy", metavar="POLICY", help="What the guard does at a deviation:")]
OnExhausted = Annotated[Optional[str], typer.Option("--on-exhausted", metavar="ACTION", help="What happens when a budget is spent:")]
MaxReprompts = Annotated[Optional[int], typer.Option("--max-reprompts", metavar="N", help="Re-prompts per step.")]
Ladder = Annotated[Optional[str], typer.Option("--ladder", metavar="RUNG,...", help="Re-prompt rungs in order, comma-separated.")]
MaxTotalTokens = Annotated[Optional[int], typer.Option(
    "--max-total-tokens", metavar="TOKENS", help="Input plus output tokens for the whole run, re-prompts included (default: unbounded).")]
MaxWallS = Annotated[Optional[float], typer.Option(
    "--max-wall-s", metavar="SECONDS", help="Wall-clock seconds for the whole run (default: unbounded).")]
InlineKnown = Annotated[Optional[bool], typer.Option(
    "--inline-known/--no-inline-known", help="Write the values a step reads into its line instead of listing them.")]

Streamed = Annotated[Optional[bool], typer.Option(
    "--streamed/--chunked", help="Ask a window of steps in one streamed call, cut at the first deviation (docs/policies.md).")]
Window = Annotated[Optional[int], typer.Option("--window", metavar="N", help="Most steps one streamed call covers.")]
Follow = Annotated[Optional[bool], typer.Option(
    "--follow/--no-follow", help="Follow the model: one streamed window while it is right; after a deviation, windows "
                                 "sized by the accuracy measured in this run (docs/policies.md).")]

GUARD_FIELDS: dict[str, str] = {
    "chunk_size": "chunk_size",
    "adaptive": "adaptive",
    "policy": "policy",
    "on_exhausted": "on_exhausted",
    "max_reprompts": "max_reprompts_per_step",
    "ladder": "ladder",
    "max_total_tokens": "max_total_tokens",
    "max_wall_s": "max_wall_s",
    "inline_known": "inline_known",
    "streamed": "streamed",
    "window": "window",
    "follow": "follow",
}
"""Each guard option's parameter name and the :class:`~stepguard.guard.GuardConfig` field it sets."""


def guard_options(*, chunk_size: int | None = None, adaptive: bool | None = None, policy: str | None = None,
                  on_exhausted: str | None = None, max_reprompts: int | None = None, ladder: str | None = None,
                  max_total_tokens: int | None = None, max_wall_s: float | None = None,
                  inline_known: bool | None = None, streamed: bool | None = None, window: int | None = None,
                  follow: bool | None = None) -> GuardOptions:
    """The :class:`~stepguard.guard._options.GuardOptions` the guard flags ask for (``None``: not given).

    The flags are the options' names with dashes (``--max-reprompts`` sets ``max_reprompts_per_step``);
    ``ladder`` is comma-separated rung names, read as every way in reads it.

    Raises:
        typer.Exit: a value the options refuse (an unknown policy or rung, a chunk size of 0): the
            message, naming the option, is printed and the exit code is 2, a usage error.
    """
    from stepguard.guard import GuardOptions, OptionError

    given = {"chunk_size": chunk_size, "adaptive": adaptive, "policy": policy, "on_exhausted": on_exhausted,
             "max_reprompts": max_reprompts, "ladder": ladder, "max_total_tokens": max_total_tokens, "max_wall_s": max_wall_s,
             "inline_known": inline_known, "streamed": streamed, "window": window, "follow": follow}
    try:
        return GuardOptions.parse({GUARD_FIELDS[name]: value for name, value in given.items()})
    except OptionError as exc:  # an option's value: a usage error, like typer's own
        raise fail(exc, ExitCode.USAGE) from None


def build_guard_config(*, chunk_size: int | None = None, adaptive: bool | None = None, policy: str | None = None,
                       on_exhausted: str | None = None, max_reprompts: int | None = None, ladder: str | None = None,
                       max_total_tokens: int | None = None, max_wall_s: float | None = None,
                       inline_known: bool | None = None, streamed: bool | None = None, window: int | None = None,
                       follow: bool | None = None, defaults: Mapping[str, Any] | None = None,
                       procedures: Any = None) -> GuardConfig:
    """The :class:`~stepguard.guard.GuardConfig` the guard flags ask for, resolved as every way in
    resolves options (:meth:`~stepguard.guard._options.GuardOptions.resolve`).

    Args:
        chunk_size, adaptive, policy, on_exhausted, max_reprompts, ladder, max_total_tokens, max_wall_s, inline_known,
            streamed, window, follow:
            the flags' values (:func:`guard_options`).
        defaults: GuardConfig fields a command sets differently (the benchmark's ``on_exhausted``).
        procedures: the procedure(s) run, for the defaults by procedure (``None``: none).

    Raises:
        typer.Exit: a value refused: the message is printed and the exit code is 2, a usage error.
    """
    options = guard_options(chunk_size=chunk_size, adaptive=adaptive, policy=policy, on_exhausted=on_exhausted,
                            max_reprompts=max_reprompts, ladder=ladder, max_total_tokens=max_total_tokens,
                            max_wall_s=max_wall_s, inline_known=inline_known, streamed=streamed, window=window,
                            follow=follow)
    try:
        return options.resolve(procedures, defaults=defaults)
    except ValueError as exc:
        raise fail(exc, ExitCode.USAGE) from None


def guard_option_defaults(defaults: Mapping[str, Any] | None = None) -> Deferred:
    """The guard options' defaults, from GuardConfig (``defaults`` overriding), and their help notes.

    The notes list what the options accept: the policies, the exhausted actions and the registered
    rungs (:func:`stepguard.guard.rung_names`, so a rung registered by a plugin shows too).
    """
    import dataclasses
    from typing import get_args

    from stepguard.guard import ExhaustedAction, GuardConfig, Policy, rung_names

    base = {f.name: f.default for f in dataclasses.fields(GuardConfig) if f.default is not dataclasses.MISSING}
    base.update(defaults or {})
    values = {option: base[field] for option, field in GUARD_FIELDS.items()}
    values["ladder"] = ",".join(values["ladder"])
    notes = {
        "policy": " | ".join(get_args(Policy)) + ".",
        "on_exhausted": " | ".join(get_args(ExhaustedAction)) + ".",
        "ladder": f"Registered rungs: {', '.join(rung_names())}.",
    }
    return Deferred(values, notes)


BY_PROCEDURE = ("chunk_size", "ladder", "inline_known")
"""Options whose default depends on the procedure (the guard's ``BY_PROCEDURE``, in the flags' order)."""


def by_procedure_notes(notes: Mapping[str, str], where: str = "") -> dict[str, str]:
    """``notes`` with each :data:`BY_PROCEDURE` option's help saying how the procedure picks its
    default (``where`` prefixes the sentence: ``"For procedure files: "``)."""
    from stepguard.guard import PRODUCTION_SETTINGS, GuardConfig

    def shown(value: Any) -> str:
        return ",".join(value) if isinstance(value, tuple) else str(value)

    out = dict(notes)
    for option in BY_PROCEDURE:
        sums, beyond = shown(getattr(GuardConfig(), option)), shown(PRODUCTION_SETTINGS[option])
        out[option] = (f"{out.get(option, '')} {where}Default by procedure: {sums} for integer sums, {beyond} for decimals, "
                       "products, quotients, min/max and conditionals (docs/policies.md).").strip()
    return out
