"""Progress of a guarded run on stderr, as it goes: a header, each step as it commits, each deviation.

``stepguard run`` prints these lines while :meth:`stepguard.guard.Guard.stream` yields, so a run on a
slow model shows where it is; stdout keeps the final result alone (the table, or ``--json``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig, GuardUpdate
    from stepguard.procedure import Procedure

__all__ = ["Progress", "asking", "model_label"]


def asking(config: GuardConfig) -> str:
    """How ``config`` asks the steps, for the header: ``follow (window 100, re-asks 1 a call)``,
    ``streamed (window 100)`` or ``chunk 5``."""
    if config.follow:
        return f"follow (window {config.window}, re-asks {config.chunk_size} a call)"
    if config.streamed:
        return f"streamed (window {config.window})"
    return f"chunk {config.chunk_size}"


def model_label(spec: str, model: Any) -> str:
    """``spec``, with the model it resolved to where the spec does not name one: ``local`` is
    shown as ``local (local:qwen2.5-coder-1.5b)``; any other spec as given."""
    name = getattr(model, "model_name", None)
    if spec == "local" and isinstance(name, str) and name:
        return f"{spec} (local:{name})"
    return spec


class Progress:
    """Prints a run's progress on stderr: :meth:`header` once, then :meth:`show` for each update.

    Lines: ``[12.3s] step 2/4 net = 95.09  model_verified (exact)`` for a committed step (value as its
    step declares it, provenance, grade, re-prompts where any) and ``[12.3s] deviation at tax: arithmetic_error
    -> reprompt (split)`` for a deviation and what the policy did (the rung taking the re-prompt).
    Seconds count from :meth:`header`. Nothing is printed when ``quiet``.
    """

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._t0 = time.perf_counter()
        self._steps = 0
        self._done = 0

    def _echo(self, line: str) -> None:
        if not self.quiet:
            typer.echo(f"[{time.perf_counter() - self._t0:.1f}s] {line}", err=True)

    def header(self, procedure: Procedure, spec: str, model: Any, config: GuardConfig) -> None:
        """Print the run's header: procedure, steps, model (resolved), how steps are asked and the ladder."""
        self._t0 = time.perf_counter()
        self._steps = len(procedure.steps)
        self._echo(f"procedure {procedure.name} ({self._steps} step{'s' if self._steps != 1 else ''})  model {model_label(spec, model)}  "
                   f"{asking(config)}  ladder {', '.join(config.ladder)}")

    def show(self, update: GuardUpdate) -> None:
        """Print one update of :meth:`~stepguard.guard.Guard.stream` (the final result prints nothing)."""
        from stepguard.guard import DeviationEvent, StepOutcome

        if isinstance(update, StepOutcome):
            self._done += 1
            again = f"  after {update.reprompts} re-prompt{'s' if update.reprompts != 1 else ''}" if update.reprompts else ""
            text = update.text if update.text is not None else "-"
            grade = f" ({update.grade})" if update.grade else ""
            self._echo(f"step {self._done}/{self._steps} {update.var} = {text}  {update.provenance}{grade}{again}")
        elif isinstance(update, DeviationEvent):
            rung = f" ({update.rung})" if update.rung else ""
            self._echo(f"deviation at {update.step or '-'}: {update.kind} -> {update.action}{rung}: {update.detail}")
