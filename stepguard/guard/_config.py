"""Guard configuration: chunking, the deviation policy, the re-prompt ladder and budgets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field, StrictStr

from stepguard.guard._fields import FieldSpec, Option, fields_of
from stepguard.guard.rungs import rung_names

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["ADDED_AFTER_STORES", "BENCHMARK_SETTINGS",
           "DIGIT_RUNGS", "INTEGER_SUM_RUNGS", "PRODUCTION_SETTINGS", "RUNGS", "ChunkBy", "ExhaustedAction",
           "GuardConfig", "LadderWarning", "Policy", "beyond_integer_sums", "check_field", "defaults_for", "ladder_mismatch"]

Policy = Literal["reprompt", "repair", "raise", "flag"]
"""What the guard does at a deviation.

- ``reprompt``: keep the verified prefix and re-ask from the first wrong step (climbing the ladder).
- ``repair``: supply the evaluator's value for the step, mark it ``repaired``, go on.
- ``raise``: raise :class:`stepguard.errors.StepDeviation` carrying the partial result.
- ``flag``: shadow mode: record the deviation, keep the model's value, never intervene.
"""

ChunkBy = Literal["size", "independent"]
"""Where a chunk ends.

- ``size``: after ``chunk_size`` steps (earlier before a step asked alone or computed by the evaluator).
- ``independent``: also before the first step that reads a step of the same chunk, by name or by the
  value its literals were written from (:meth:`stepguard.procedure.Procedure.after`), so every value a
  step reads is committed and shown as a literal, never one the model is about to write.
"""

ExhaustedAction = Literal["raise", "repair", "flag"]
"""What happens when a re-prompt or token budget is spent (see :class:`Policy`)."""

RUNGS: tuple[str, ...] = rung_names()
"""The built-in rungs' names, in registration order (:mod:`stepguard.guard.rungs`, one module each):

- ``restate``: the same chunk from the failing step, with the committed operands and the correction.
- ``narrow``: the failing step alone.
- ``resample``: the failing step alone, with a different seed and ``resample_temperature``.
- ``bridge``: a carry or borrow asked through the round number, each sub-step checked.
- ``decompose``: the failing step as place-value sub-steps, each checked.
- ``commute``: the failing step over its operand values, swapped, signs folded.
- ``digits`` (and ``columns``, ``long_multiply``, ``long_divide``): the failing step digit by digit,
  every digit the model's, its value read by position (:mod:`stepguard.guard.rungs.arith.digits`).

A rung registered later (:func:`stepguard.guard.rungs.register`) is accepted in a ladder too.
"""


PRODUCTION_SETTINGS: dict[str, Any] = {"ladder": ("split", "resample", "resample", "digits"), "chunk_size": 1, "inline_known": True}
"""The settings :func:`defaults_for` gives a procedure beyond integer sums: one step a
call with its operands written into the line, re-asked by its operations (``split``), then resampled,
then, last, digit by digit with its value read by position (``digits``, docs/production.md, "Digit rungs").
Measured on the production suite (docs/production.md); the benchmark's integer sums keep the
:class:`GuardConfig` defaults, measured on them (docs/fidelity.md)."""

_SUM_NODES = ("Expression", "Name", "Load", "Constant", "BinOp", "Add", "Sub", "UnaryOp", "USub", "UAdd")


def beyond_integer_sums(procedure: Procedure) -> bool:
    """Whether a computed step of ``procedure`` has decimal places or an operation other than ``+`` and
    ``-`` (a product, a quotient, ``min``/``max``, a comparison, a conditional): the steps the
    default ladder (``bridge``, ``decompose``, ``commute``, integer sums only) cannot re-ask."""
    return _beyond(procedure, _SUM_NODES)


def _beyond(procedure: Procedure, allowed: tuple[str, ...]) -> bool:
    """Whether a computed step of ``procedure`` has decimal places or a syntax node outside ``allowed``."""
    import ast

    for step, compiled in zip(procedure.steps, procedure.compiled, strict=True):
        if not step.computes:
            continue
        if step.scale is not None or step.type == "decimal":
            return True  # a decimal step, with an expr or a check only: the docs' "decimal type or scale"
        if compiled is None:
            continue
        if any(type(node).__name__ not in allowed for node in ast.walk(compiled.tree)):
            return True
    return False


INTEGER_SUM_RUNGS: frozenset[str] = frozenset({"bridge", "decompose", "commute"})
"""The rungs that re-ask integer sums and differences only (the :class:`GuardConfig` default ladder's
first rungs)."""

DIGIT_RUNGS: frozenset[str] = frozenset({"digits", "columns", "long_multiply", "long_divide"})
"""The digit rungs (the default ladders' last): they re-ask a step of one arithmetic operation digit by
digit (``digits`` a step of several one operation a sub-step, each failing one digit by digit, and a
``min``/``max`` or a rounding at a tie, which have no digits to write, as ``choice`` and ``tie`` ask
them), never by the rungs measured for decimals, comparisons and conditionals (``split``)."""


class LadderWarning(UserWarning):
    """A configuration given to a guard whose ladder cannot re-ask the procedure's steps (:func:`ladder_mismatch`).

    ``reason`` is the mismatch alone; the warning's text adds how to keep the procedure's defaults
    from Python (:meth:`GuardConfig.for_procedure`), which a command line replaces with its own flag."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}: a GuardConfig given whole replaces the procedure's defaults; keep them with "
                         "GuardConfig.for_procedure(procedure, **changes) (docs/python-api.md)")
        self.reason = reason


def ladder_mismatch(procedure: Procedure, config: GuardConfig) -> str | None:
    """Why ``config``'s ladder cannot re-ask ``procedure``'s steps, or ``None`` when it can.

    A ladder of :data:`INTEGER_SUM_RUNGS` and :data:`DIGIT_RUNGS` only (the :class:`GuardConfig` default)
    re-asks a procedure with decimal steps or an operation beyond ``+``, ``-`` and an integer ``*`` with
    none of the rungs measured for them (``split``; docs/policies.md, "Defaults by procedure"): its
    decimal products and quotients only digit by digit, its comparisons and conditionals sampled
    anew or split by ``digits``, its ``min``/``max`` as ``choice`` asks them. The benchmark's
    generated integer instances, whose ladder was measured on them, pass.
    """
    if not set(config.ladder) <= INTEGER_SUM_RUNGS | DIGIT_RUNGS or not _beyond(procedure, _SUM_NODES + ("Mult",)):
        return None
    return (f"procedure {procedure.name!r} has decimal or non-sum steps, and the configuration's ladder "
            f"({', '.join(config.ladder)}) has only the rungs for integer sums and digits, none of those measured "
            "for decimals, min/max and conditionals")


_INT32, _INT64 = 2**31 - 1, 2**63 - 1


def _registered(ladder: tuple[str, ...]) -> tuple[str, ...]:
    """``ladder`` names at least one rung, each a registered one (:func:`stepguard.guard.rungs.rung_names`).

    Raises:
        ValueError: an empty ladder or an unknown rung (the message lists the rungs).
    """
    if not ladder:
        raise ValueError(f"ladder must name at least one rung ({', '.join(rung_names())})")
    for rung in ladder:
        if rung not in rung_names():
            raise ValueError(f"unknown ladder rung {rung!r}: use one of {', '.join(rung_names())}")
    return ladder


@dataclass(frozen=True)
class GuardConfig:
    """How a :class:`stepguard.guard.Guard` executes a procedure: the one configuration model.

    Each field is declared once, here: its type, its constraint and its description (pydantic's
    ``Field``) and, where it has one, its command-line flag (:class:`~stepguard.guard._fields.Option`).
    The per-run options (:class:`~stepguard.guard.GuardOptions`), the CLI's flags, the proxy's keys and
    the docs' table (docs/options.md) are built from these declarations. The defaults of
    ``chunk_size``, ``ladder`` and ``max_reprompts_per_step`` were chosen from measurements on the
    embedded model: the figures are in ``docs/policies.md`` ("Why these defaults") and
    ``docs/fidelity.md``; :func:`defaults_for` gives a procedure's.

    Raises:
        ValueError: a field out of range, of the wrong type, or an unknown policy, action or rung; the
            message names the field and the value (``chunk_size must be a whole number from 1 to
            2147483647, not 0``).
    """

    chunk_size: Annotated[int, Field(strict=True, ge=1, le=_INT32, description=(
        "Steps per model call. The measured default, see docs/policies.md.")),
        Option("--chunk-size", "N")] = 5
    chunk_by: Annotated[ChunkBy, Field(description=(
        "Where a chunk ends: after ``chunk_size`` steps (``size``), or also before a step that reads one of the same "
        "chunk (``independent``). One of :data:`ChunkBy`; the digit rungs' nested runs ask their sub-steps so "
        "with ``substeps_together`` (docs/policies.md, \"Sub-steps asked together\").")),
        Option("--chunk-by", "RULE")] = "size"
    substeps_together: Annotated[bool, Field(strict=True, description=(
        "Ask a digit rung's sub-steps up to 10 a call, none with one it was written from (``chunk_by`` "
        "``independent``), instead of one a call. On in every run's defaults (RUN_SETTINGS): "
        "docs/policies.md, \"Sub-steps asked together\".")),
        Option("--substeps-together/--substeps-one-at-a-time")] = False
    adaptive: Annotated[bool, Field(strict=True, description=(
        "Shrink chunks after deviations, grow them after clean ones (halve, down to 1; +1, up to ``chunk_size``). "
        "In streamed mode the window instead: halved after a deviation (down to 4), doubled after a clean "
        "window, at most ``window`` (:func:`stepguard.guard._window.next_window`).")),
        Option("--adaptive/--no-adaptive")] = False
    policy: Annotated[Policy, Field(description="What the guard does at a deviation. One of :data:`Policy`."),
                      Option("--policy", "POLICY")] = "reprompt"
    ladder: Annotated[tuple[StrictStr, ...], AfterValidator(_registered), Field(description=(
        "Re-prompt rungs in order, by registered name. The built-in ones are :data:`RUNGS`; one attempt each (the last repeats while "
        "the budget lasts); the ladder restarts for every new failing step. The measured default, see "
        "docs/policies.md; ``digits`` last, so it costs nothing where the cheaper rungs succeed "
        "(docs/production.md, \"Digit rungs\").")),
        Option("--ladder", "RUNG,...", expects="be a sequence of rung names such as ('bridge', 'decompose')")] = (
        "bridge", "decompose", "commute", "digits")
    max_reprompts_per_step: Annotated[int, Field(strict=True, ge=0, le=_INT32, description=(
        "Re-prompts per step before ``on_exhausted``. One for each rung of the default ladder (docs/policies.md).")),
        Option("--max-reprompts", "N")] = 4
    max_reprompts_per_run: Annotated[int, Field(strict=True, ge=0, le=_INT32, description=(
        "Re-prompts for the whole run before ``on_exhausted``."))] = 200
    max_total_tokens: Annotated[int | None, Field(strict=True, ge=1, le=_INT64, description=(
        "Input plus output tokens for the whole run, re-prompts and nested rung runs included. Checked before "
        "every model call, and each call's ``max_tokens`` is capped at what is left, so a run overshoots by at "
        "most one call's input tokens.")),
        Option("--max-total-tokens", "TOKENS", none="unbounded")] = None
    max_wall_s: Annotated[float | None, Field(strict=True, gt=0, allow_inf_nan=False, description=(
        "Wall-clock seconds for the whole run (in this process), nested rung runs included. Checked before "
        "every model call, so a run overshoots by at most one call, which the model's own per-attempt "
        "deadline bounds.")),
        Option("--max-wall-s", "SECONDS", expects="be positive seconds, finite (or None)", none="unbounded")] = None
    on_exhausted: Annotated[ExhaustedAction, Field(description=(
        "What happens when a budget is spent. One of :data:`ExhaustedAction`.")),
        Option("--on-exhausted", "ACTION")] = "raise"
    temperature: Annotated[float, Field(strict=True, ge=0, le=2, allow_inf_nan=False, description=(
        "Sampling temperature of first tries and non-resample rungs."))] = 0.0
    seed: Annotated[int, Field(strict=True, ge=-(2**63), le=_INT64, description=(
        "Sampling seed of first tries; resample rungs use ``seed + attempt``. A 64-bit integer, as the OpenAI API's."))] = 0
    resample_temperature: Annotated[float, Field(strict=True, ge=0, le=2, allow_inf_nan=False, description=(
        "Temperature of the ``resample`` rung."))] = 0.7
    inline_known: Annotated[bool, Field(strict=True, description=(
        "Write the values a step reads into its line instead of listing them. As in ``t3 = 0.05 if False else 0``; "
        "the ``chain`` rung's nested runs, one sub-step a call, ask so (why, measured: "
        "docs/lab/production-suite-history.md).")),
        Option("--inline-known/--no-inline-known")] = False
    max_tokens_per_step: Annotated[int, Field(strict=True, ge=1, le=_INT32, description=(
        "Token allowance per step in a chunk; ``max_tokens`` of a call = allowance x steps + 32."))] = 48
    streamed: Annotated[bool, Field(strict=True, description=(
        "Ask a window of steps in one streamed call, cut at the first deviation (docs/policies.md). Each step is "
        "checked as its line completes (:mod:`stepguard.guard._window`); re-asks after a deviation use "
        "``chunk_size`` and the ladder as in chunked mode. Figures: docs/policies.md, \"Streamed mode\".")),
        Option("--streamed/--chunked")] = False
    window: Annotated[int, Field(strict=True, ge=1, le=100_000, description=(
        "Most steps one streamed call covers. A window ends earlier before a step asked alone.")),
        Option("--window", "N")] = 100
    follow: Annotated[bool, Field(strict=True, description=(
        "Follow the model: streamed windows, narrower only where this run measures that steps deeper in a window "
        "deviate more (docs/policies.md). Streamed whatever ``streamed`` says; the width is the one with the fewest "
        "expected calls a verified step (:func:`stepguard.guard._window.follow_window`); replaces ``adaptive``'s "
        "rule. On in every run's defaults (RUN_SETTINGS); a mode's setting given alone turns it off (MODE_SETTINGS): "
        "docs/policies.md, \"Follow the model\".")),
        Option("--follow/--no-follow")] = False
    prompt_dir: Annotated[Path | None, Field(description=(
        "A folder of template files (``system.txt``, ``chunk.txt``, ``correction.txt``) replacing the built-in ones.")),
        Option(expects="be a folder path (or None)", none="the built-in templates", per_run=False)] = None
    extra: Annotated[dict[StrictStr, StrictStr], Field(strict=True, description=(
        "Free-form labels recorded with the result (e.g. the instance id); the per-run option ``labels`` adds to them.")),
        Option(expects="map text to text (labels recorded with the result)")] = field(default_factory=dict)

    @classmethod
    def for_procedure(cls, procedure: Procedure, **fields: Any) -> GuardConfig:
        """The measured defaults for ``procedure``'s kind of steps, with ``fields`` set on top.

        A procedure beyond integer sums (:func:`beyond_integer_sums`: decimals, products, quotients,
        ``min``/``max``, conditionals) gets :data:`PRODUCTION_SETTINGS`; one of integer sums, the
        class defaults. :class:`~stepguard.guard.Guard` uses this when it is given no configuration.

        Raises:
            ValueError: a field out of range (as the constructor).
        """
        return cls(**{**defaults_for(procedure), **mode_asked(fields)})

    @property
    def streams(self) -> bool:
        """Whether a first try asks a streamed window (``streamed`` or ``follow``), not a chunk."""
        return self.streamed or self.follow

    def __post_init__(self) -> None:
        """Check every field against its declaration, in order (:meth:`~stepguard.guard._fields.FieldSpec.check`),
        keeping the value as the field holds it (a list ladder as a tuple); the first refused raises ``ValueError``."""
        for spec in fields_of(GuardConfig):
            object.__setattr__(self, spec.name, spec.check(getattr(self, spec.name)))


def check_field(name: str, value: Any) -> Any:
    """``value`` as :class:`GuardConfig`'s field ``name`` holds it, checked as the constructor checks it.

    Raises:
        KeyError: no such field.
        ValueError: the value refused (the message names the field and the value).
    """
    return _SPECS[name].check(value)


_SPECS: dict[str, FieldSpec] = {spec.name: spec for spec in fields_of(GuardConfig)}


ADDED_AFTER_STORES: dict[str, Any] = {"chunk_by": "size", "substeps_together": False}
"""Settings added after run stores recorded their whole guard configuration (run.json ``guard_config``):
at these defaults (what a run of an earlier version did) they are left out of it and of a run's identity,
so a committed store or checkpoint of the same work still resumes."""

RUN_SETTINGS: dict[str, Any] = {"follow": True, "substeps_together": True}
"""The settings :func:`defaults_for` gives every run: streamed windows that follow the model (``follow``: one
call while the model is right) and a digit rung's sub-steps asked together (``substeps_together``). Measured
against the chunked settings on the embedded model, paired: docs/policies.md, "Follow the model". Chunked
mode stays one setting away (``follow=False``; ``--chunked`` or ``--no-follow`` on the command line)."""

def settings_resume_hint(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """``"; made before these settings were every run's default: resume it with --no-follow ... (GuardConfig:
    follow=False, ...)"`` where a stored run's settings (a run store's ``guard_config``, a checkpoint identity's
    ``settings``) have one of :data:`RUN_SETTINGS` off, or unrecorded (made before it existed), that the new run
    has on; else ``""``. The flags are each the off half of the switch the field declares (``--follow/--no-follow``).
    """
    if not (isinstance(old, Mapping) and isinstance(new, Mapping)):
        return ""
    names = [name for name in RUN_SETTINGS if new.get(name) is True and not old.get(name)]
    if not names:
        return ""
    flags = " ".join((_SPECS[name].option.flag or "").partition("/")[2] for name in names)  # RUN_SETTINGS are switches
    fields = ", ".join(f"{name}=False" for name in names)
    return f"; made before these settings were every run's default: resume it with {flags} (GuardConfig: {fields})"


MODE_SETTINGS: tuple[str, ...] = ("streamed", "chunk_size")
"""The settings that ask for a mode: given without ``follow``, the run does not follow the model
(:func:`mode_asked`): ``streamed`` asks fixed streamed windows (``True``) or chunks (``False``), and
``chunk_size`` asks chunks of that many steps."""


def mode_asked(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with ``follow`` turned off where one of :data:`MODE_SETTINGS` is given and ``follow`` is not:
    a caller who sets ``chunk_size=2`` or ``streamed=False`` asks for that mode, not for following the model."""
    if "follow" not in fields and any(name in fields for name in MODE_SETTINGS):
        return {**fields, "follow": False}
    return dict(fields)


BENCHMARK_SETTINGS: dict[str, Any] = {"on_exhausted": "flag"}
"""The settings :func:`defaults_for` adds for the benchmark (``run_benchmark``, ``stepguard bench``):
``flag``, not ``raise``, when a budget is spent, so the run goes on with the model's values and every
row has a first answer to score as in raw mode, instead of ending as a failed row."""


def defaults_for(procedures: Procedure | Iterable[Procedure] | None = None, *, benchmark: bool = False) -> dict[str, Any]:
    """The defaults by procedure: the :class:`GuardConfig` fields a run of ``procedures`` sets unlike the
    class defaults. The one place they are decided (the CLI, the client, the proxy and the benchmark
    resolve through :meth:`~stepguard.guard.GuardOptions.resolve`, which calls this).

    :data:`PRODUCTION_SETTINGS` where any of ``procedures`` is beyond integer sums
    (:func:`beyond_integer_sums`); none for integer sums (the class defaults, measured on them). One
    configuration serves a run, so a run mixing both kinds (a suite) gets the production settings:
    their ``split`` rung asks an integer sum through ``bridge`` and ``decompose`` too. With
    ``benchmark``, :data:`BENCHMARK_SETTINGS` on top.

    Args:
        procedures: one procedure, several, or ``None`` (generated integer sums: no procedure to read).
        benchmark: the benchmark's run (``on_exhausted="flag"``).

    Returns:
        GuardConfig fields by name (empty for integer sums outside the benchmark); a new dict each call.
    """
    out: dict[str, Any] = dict(RUN_SETTINGS)
    if procedures is not None:
        from stepguard.procedure import Procedure

        many = [procedures] if isinstance(procedures, Procedure) else list(procedures)
        if any(beyond_integer_sums(p) for p in many):
            out.update(PRODUCTION_SETTINGS)
    if benchmark:
        out.update(BENCHMARK_SETTINGS)
    return out
