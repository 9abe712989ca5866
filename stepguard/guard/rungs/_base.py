"""What a rung is, and the registry that names them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from stepguard.evaluator import Number
from stepguard.procedure import Procedure

if TYPE_CHECKING:
    from stepguard.guard._config import GuardConfig

SUB_STEP_LADDER: tuple[str, ...] = ("single", "resample", "resample", "resample", "digits")
"""The nested ladder of the rungs over production expressions: a failing sub-step through the rung for
its operation (``single``), then sampled anew three times, because sampling at the resample
temperature reaches values that temperature 0 repeats wrongly (the probe's figures: docs/lab/2026-11-30-production-suite.md,
"What stops the rungs"), then, last, digit by digit (``digits``; docs/lab/2026-11-30-production-suite.md, "Digit rungs").
A derived run stops at its first sub-step no try verified, so the extra tries cost calls only where
a sub-step keeps failing."""

__all__ = ["SUB_STEP_LADDER", "Read", "Rung", "get_rung", "register", "rung_names"]


@dataclass(frozen=True)
class Read:
    """A derived step's value read by position from the model's verified sub-step values (:meth:`Rung.read`).

    Attributes:
        value: the value text read (``696``, ``-77.9``), which the parent step then checks like any reply.
        record: every sub-step line the model wrote and verified, and the digits read from each in
            place order (the result's ``read`` event holds it).
    """

    value: str
    record: str


class Rung:
    """One rung of the re-prompt ladder: how the guard re-asks a failing step.

    Subclass it in one module under ``stepguard/guard/rungs/``, decorate the class with
    :func:`register`, and import the module in ``stepguard/guard/rungs/__init__.py``; the
    controller reads only these attributes and never switches on rung names.

    Attributes:
        name: the name used in ``GuardConfig.ladder``, ``--ladder``, results and spans.
        whole_chunk: re-ask the chunk from the failing step (True), or the failing step alone.
        resamples: sample at ``GuardConfig.resample_temperature`` with the seed ``seed + attempt``,
            so a repeated rung never resends the same request.
        derives: the rung re-asks the step as a derived sub-procedure (:meth:`derive`) that runs
            under a nested guard (:meth:`nested_config`).
        nested_ladder: the nested guard's ladder (derived rungs).
        nested_tries: the nested guard's re-prompts per sub-step (derived rungs).
        one_at_a_time: the nested guard asks one sub-step a call with the values it reads written
            into its line (``t3 = 0.05 if False else 0``; :attr:`GuardConfig.inline_known`). The
            rungs over production expressions (``chain``, ``choice``, and ``split`` and ``single``
            that reach them) ask so, because the embedded model reads a literal better alone than
            in a chunk (figures: docs/lab/2026-11-30-production-suite.md). The integer rungs of the benchmark keep
            whole-chunk asking.
    """

    name: str = ""
    whole_chunk: bool = False
    resamples: bool = False
    derives: bool = False
    nested_ladder: tuple[str, ...] = ("narrow", "resample")
    nested_tries: int = 2
    one_at_a_time: bool = False
    applies_to: str = ""
    """The one form a derived rung re-asks, for its refusal (``an integer sum or difference of two
    operands``); empty for a rung that composes others and says its own (:meth:`refusal`)."""

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The sub-procedure that computes step ``index`` (0-based) from the committed values ``env``.

        Returns:
            A procedure with no inputs whose last step has the failing step's variable (every
            sub-step is checked by the evaluator; names and values are the guard's own, derived
            from the expression, so no expected value is shown), or ``None`` where the rung does
            not apply; then the ladder asks the step alone (``narrow``, later ``resample``).
        """
        return None

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """Why :meth:`derive` returns ``None`` for step ``index`` over ``env``, named: the form the rung
        re-asks (:attr:`applies_to`) and the step's (``re-asks an integer sum or difference of two
        operands only, not a sum with a decimal operand``); a rung that composes others says which
        refused what.
        Only meaningful where :meth:`derive` returned ``None``."""
        if not self.derives:
            return "asks the step as it is (derives no sub-steps)"
        from stepguard.guard.rungs._arith import form_of

        return f"re-asks {self.applies_to or 'another form'} only, not {form_of(procedure, index, env)}"

    def read(self, procedure: Procedure, index: int, env: Mapping[str, Number | str], texts: Mapping[str, str | None]) -> Read | None:
        """The step's value read by position from the verified sub-step values ``texts`` (``{var: value text}``)
        of :meth:`derive`'s sub-procedure, for a rung whose sub-procedure does not end in the step's
        variable (the digit rungs: :mod:`stepguard.guard.rungs.digits`); ``None`` (the default): the
        sub-procedure's last step is the step's value, as the model wrote it.
        """
        return None

    def nested_config(self, parent: GuardConfig, attempt: int, tokens_left: int | None, wall_left: float | None,
                      sub: Procedure | None = None) -> GuardConfig:
        """The nested guard's configuration for this rung's derived sub-procedure ``sub`` (what
        :meth:`derive` returned; a rung that derives more than one form reads which from it).

        Its ``on_exhausted`` is ``raise``: a derived run stops at its first sub-step no try
        verified, since every later sub-step reads that value and the parent takes only a verified
        result: flagging and going on spends calls for nothing (figures: docs/lab/2026-11-30-production-suite.md).

        It is never streamed: a streamed parent's re-asks use the chunking of chunked mode
        (docs/policies.md, "Streamed mode"), and the sub-steps go by the rung's own chunk size, so a
        rung that asks one sub-step a call (a digit rung, ``one_at_a_time``) never shows the model
        in one window a later sub-step's literals, which are the values of the earlier ones.

        Args:
            parent: the run's configuration.
            attempt: the parent step's re-prompt number (moves the seed: no request is resent).
            tokens_left: the parent's token budget left (``None``: unbounded).
            wall_left: the parent's wall-clock seconds left (``None``: unbounded).
            sub: the derived sub-procedure (``None`` where the caller does not give it).
        """
        return replace(
            parent, chunk_size=1 if self.one_at_a_time else 64, inline_known=self.one_at_a_time,
            adaptive=False, ladder=self.nested_ladder, max_reprompts_per_step=self.nested_tries,
            policy="reprompt", on_exhausted="raise", seed=parent.seed + attempt, streamed=False, follow=False,
            max_total_tokens=None if tokens_left is None else max(1, tokens_left),
            max_wall_s=None if wall_left is None else max(1e-3, wall_left),
        )

    def __repr__(self) -> str:
        return f"<rung {self.name}>"


_REGISTRY: dict[str, Rung] = {}
R = TypeVar("R", bound=type[Rung])


def register(cls: R) -> R:
    """Class decorator: make the rung available by its ``name`` in every ladder.

    Raises:
        ValueError: the class has no name, or another rung has that name.
    """
    if not cls.name or cls.name in _REGISTRY:
        raise ValueError(f"a rung needs a unique name; {cls.name!r} is {'taken' if cls.name else 'empty'}")
    _REGISTRY[cls.name] = cls()
    return cls


def get_rung(name: str) -> Rung:
    """The registered rung called ``name``.

    Raises:
        KeyError: no rung has that name (the message lists those that exist).
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown ladder rung {name!r}: use one of {', '.join(rung_names())}") from None


def rung_names() -> tuple[str, ...]:
    """Every registered rung's name, in registration order."""
    return tuple(_REGISTRY)

