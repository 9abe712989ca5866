"""Guard configuration: chunking, the deviation policy, the re-prompt ladder and budgets."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stepguard.guard.rungs import rung_names

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["DIGIT_RUNGS", "INTEGER_SUM_RUNGS", "PRODUCTION_SETTINGS", "RUNGS", "ExhaustedAction", "GuardConfig", "LadderWarning", "Policy",
           "beyond_integer_sums", "ladder_mismatch", "procedure_defaults"]

Policy = Literal["reprompt", "repair", "raise", "flag"]
"""What the guard does at a deviation.

- ``reprompt``: keep the verified prefix and re-ask from the first wrong step (climbing the ladder).
- ``repair``: supply the evaluator's value for the step, mark it ``repaired``, go on.
- ``raise``: raise :class:`stepguard.errors.StepDeviation` carrying the partial result.
- ``flag``: shadow mode: record the deviation, keep the model's value, never intervene.
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
"""The settings :meth:`GuardConfig.for_procedure` gives a procedure beyond integer sums: one step a
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


_WHOLE = (("chunk_size", 1, 2**31 - 1), ("max_reprompts_per_step", 0, 2**31 - 1), ("max_reprompts_per_run", 0, 2**31 - 1),
          ("max_total_tokens", 1, 2**63 - 1), ("seed", -(2**63), 2**63 - 1), ("max_tokens_per_step", 1, 2**31 - 1),
          ("window", 1, 100_000))
"""The whole-number fields and their ranges (a seed is a 64-bit integer, as the OpenAI API's)."""


@dataclass(frozen=True)
class GuardConfig:
    """How a :class:`stepguard.guard.Guard` executes a procedure.

    Every number here is a parameter. The defaults of ``chunk_size``, ``ladder`` and
    ``max_reprompts_per_step`` were chosen from measurements on the embedded model: the figures are
    in ``docs/policies.md`` ("Why these defaults") and ``docs/fidelity.md``. A caller sets them per
    run through :class:`stepguard.guard._options.GuardOptions` (the CLI, the drop-in client, the proxy).

    Raises:
        ValueError: a field out of range or an unknown policy, action or rung (names the field).
    """

    chunk_size: int = 5
    """Steps per model call (at least 1); the measured default, see docs/policies.md."""
    adaptive: bool = False
    """Shrink the chunk (halve, down to 1) after a deviation; grow it (+1, up to ``chunk_size``) after a clean chunk.
    In streamed mode the window instead: halved after a deviation (down to 4), doubled after a clean
    window, at most ``window`` (:func:`stepguard.guard._window.next_window`)."""
    policy: Policy = "reprompt"
    """What to do at a deviation."""
    ladder: tuple[str, ...] = ("bridge", "decompose", "commute", "digits")
    """Re-prompt rungs by registered name (:data:`RUNGS`, :mod:`stepguard.guard.rungs`), in order, one
    attempt each (the last repeats while the budget lasts); the ladder restarts for every new failing
    step. The measured default, see docs/policies.md; ``digits`` last, so it costs nothing where the
    cheaper rungs succeed (docs/production.md, "Digit rungs")."""
    max_reprompts_per_step: int = 4
    """Re-prompts for one step before ``on_exhausted``: one for each rung of the default ladder (docs/policies.md)."""
    max_reprompts_per_run: int = 200
    """Re-prompts for the whole run before ``on_exhausted``."""
    max_total_tokens: int | None = None
    """Input plus output tokens for the whole run, nested rung runs included; ``None`` = unbounded.
    Checked before every model call, and each call's ``max_tokens`` is capped at what is left, so a
    run overshoots by at most one call's input tokens."""
    max_wall_s: float | None = None
    """Wall-clock seconds for the run (in this process), nested rung runs included; ``None`` =
    unbounded. Checked before every model call, so a run overshoots by at most one call, which the
    model's own per-attempt deadline bounds."""
    on_exhausted: ExhaustedAction = "raise"
    """What happens when a budget is spent."""
    temperature: float = 0.0
    """Sampling temperature of first tries and non-resample rungs."""
    seed: int = 0
    """Sampling seed of first tries; resample rungs use ``seed + attempt``."""
    resample_temperature: float = 0.7
    """Temperature of the ``resample`` rung."""
    inline_known: bool = False
    """Write the values a step reads into its line (``t3 = 0.05 if False else 0``) instead of
    listing them as known values: the ``chain`` rung's nested runs, one sub-step a call, ask so
    (why, measured: docs/lab/production-suite-history.md)."""
    max_tokens_per_step: int = 48
    """Token allowance per step in a chunk; ``max_tokens`` of a call = allowance x steps + 32."""
    streamed: bool = False
    """Ask a whole window of computed steps in one streamed call, checking each step as its line
    completes and cutting the stream at the first deviation (:mod:`stepguard.guard._window`);
    re-asks after a deviation use ``chunk_size`` and the ladder as in chunked mode. Figures:
    docs/policies.md, "Streamed mode"."""
    window: int = 100
    """Most steps one streamed call covers (a window ends earlier before a step asked alone)."""
    follow: bool = False
    """Follow the model: streamed windows (whatever ``streamed`` says), the whole procedure in one
    while the model is right; after a deviation each window is as wide as the per-step accuracy
    measured in this run allows (:func:`stepguard.guard._window.follow_window`), widening as the model
    holds. Replaces ``adaptive``'s rule. Not a default until measured: docs/policies.md, "Follow the model"."""
    prompt_dir: Path | None = None
    """A folder of template files (``system.txt``, ``chunk.txt``, ``correction.txt``) replacing the built-in ones."""
    extra: dict[str, str] = field(default_factory=dict)
    """Free-form labels recorded with the result (e.g. the instance id)."""

    @classmethod
    def for_procedure(cls, procedure: Procedure, **fields: Any) -> GuardConfig:
        """The measured defaults for ``procedure``'s kind of steps, with ``fields`` set on top.

        A procedure beyond integer sums (:func:`beyond_integer_sums`: decimals, products, quotients,
        ``min``/``max``, conditionals) gets :data:`PRODUCTION_SETTINGS`; one of integer sums, the
        class defaults. :class:`~stepguard.guard.Guard` uses this when it is given no configuration.

        Raises:
            ValueError: a field out of range (as the constructor).
        """
        return cls(**{**procedure_defaults(procedure), **fields})

    @property
    def streams(self) -> bool:
        """Whether a first try asks a streamed window (``streamed`` or ``follow``), not a chunk."""
        return self.streamed or self.follow

    def __post_init__(self) -> None:
        """Refuse a field out of range: the first of :data:`_FIELD_CHECKS`, in order, to find one
        raises ``ValueError`` with its message."""
        for check in _FIELD_CHECKS:
            problem = check(self)
            if problem is not None:
                raise ValueError(problem)


def _counts(c: GuardConfig) -> str | None:
    """The counts and budgets (:data:`_WHOLE`) are whole numbers in range (``max_total_tokens`` may be None)."""
    for name, low, high in _WHOLE:
        value = getattr(c, name)
        if value is None and name == "max_total_tokens":
            continue
        if type(value) is not int or not low <= value <= high:  # True is an int to Python, 5.0 is not a count
            return f"{name} must be a whole number from {low} to {high}, not {value!r}"
    return None


def _wall_type(c: GuardConfig) -> str | None:
    """``max_wall_s`` is a number of seconds, or None."""
    if c.max_wall_s is not None and (isinstance(c.max_wall_s, bool) or not isinstance(c.max_wall_s, (int, float))):
        return f"max_wall_s must be seconds, a number (or None), not {c.max_wall_s!r}"
    return None


def _ladder_type(c: GuardConfig) -> str | None:
    """``ladder`` is a sequence (a tuple or list), not one name."""
    ladder: object = c.ladder  # as given, which the annotation does not promise
    if isinstance(ladder, str) or not isinstance(ladder, (tuple, list)):
        return f"ladder must be a sequence of rung names such as ('bridge', 'decompose'), not {c.ladder!r}"
    return None


def _extra(c: GuardConfig) -> str | None:
    """``extra`` maps text to text."""
    if not isinstance(c.extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in c.extra.items()):
        return f"extra must map text to text (labels recorded with the result), not {c.extra!r}"
    return None


def _prompt_dir(c: GuardConfig) -> str | None:
    """``prompt_dir`` is a folder path, or None."""
    folder: object = c.prompt_dir  # as given, which the annotation does not promise
    if folder is not None and not isinstance(folder, (str, Path)):
        return f"prompt_dir must be a folder path (or None), not {c.prompt_dir!r}"
    return None


def _switches(c: GuardConfig) -> str | None:
    """The on/off fields are booleans."""
    for name in ("adaptive", "inline_known", "streamed", "follow"):
        if type(getattr(c, name)) is not bool:
            return f"{name} must be true or false, not {getattr(c, name)!r}"
    return None


def _temperatures(c: GuardConfig) -> str | None:
    """The temperatures are numbers from 0 to 2 (NaN is not)."""
    for name in ("temperature", "resample_temperature"):
        value = getattr(c, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:  # NaN fails too
            return f"{name} must be a number from 0 to 2, not {value!r}"
    return None


def _wall_positive(c: GuardConfig) -> str | None:
    """``max_wall_s`` (a number by now) is positive."""
    if c.max_wall_s is not None and not c.max_wall_s > 0:
        return f"max_wall_s must be positive seconds (or None), not {c.max_wall_s}"
    return None


def _policies(c: GuardConfig) -> str | None:
    """``policy`` is a :data:`Policy` and ``on_exhausted`` an :data:`ExhaustedAction`."""
    if c.policy not in ("reprompt", "repair", "raise", "flag"):
        return f"policy must be reprompt, repair, raise or flag, not {c.policy!r}"
    if c.on_exhausted not in ("raise", "repair", "flag"):
        return f"on_exhausted must be raise, repair or flag, not {c.on_exhausted!r}"
    return None


def _rungs(c: GuardConfig) -> str | None:
    """``ladder`` names at least one rung, each a registered one."""
    if not c.ladder:
        return f"ladder must name at least one rung ({', '.join(rung_names())})"
    for rung in c.ladder:
        if rung not in rung_names():
            return f"unknown ladder rung {rung!r}: use one of {', '.join(rung_names())}"
    return None


_FIELD_CHECKS: tuple[Callable[[GuardConfig], str | None], ...] = (
    _counts, _wall_type, _ladder_type, _extra, _prompt_dir, _switches, _temperatures, _wall_positive, _policies, _rungs)
""":meth:`GuardConfig.__post_init__`'s checks, in order: each the message of the field it refuses, or None."""


def procedure_defaults(procedures: Procedure | Iterable[Procedure] | None) -> dict[str, Any]:
    """The defaults by procedure: :data:`PRODUCTION_SETTINGS` where any of ``procedures`` is beyond
    integer sums (:func:`beyond_integer_sums`), else none (GuardConfig's own).

    One configuration serves a run, so a run mixing both kinds (a suite) gets the production settings:
    their ``split`` rung asks an integer sum through ``bridge`` and ``decompose`` too.

    Args:
        procedures: one procedure, several, or ``None`` (generated integer sums: no procedure to read).

    Returns:
        GuardConfig fields by name (empty for integer sums).
    """
    if procedures is None:
        return {}
    from stepguard.procedure import Procedure

    many = [procedures] if isinstance(procedures, Procedure) else list(procedures)
    return dict(PRODUCTION_SETTINGS) if any(beyond_integer_sums(p) for p in many) else {}
