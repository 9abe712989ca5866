"""The step a kind is asked about: one object in place of ``(procedure, index)``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stepguard.procedure import Procedure, Step

if TYPE_CHECKING:
    from stepguard.evaluator import CompiledExpression
    from stepguard.kinds import Kind

__all__ = ["StepContext"]


@dataclass(frozen=True)
class StepContext:
    """One step of a procedure, as every :class:`~stepguard.kinds.Kind` method receives it.

    Built as ``StepContext(procedure, index)``; ``step`` is filled in from them.

    Raises:
        IndexError: ``index`` is not a step of ``procedure`` (the message gives both).
    """

    procedure: Procedure
    """The procedure the step belongs to."""
    index: int
    """The step's position in ``procedure.steps`` (0-based)."""
    step: Step = field(init=False, repr=False, compare=False)
    """The step itself: ``procedure.steps[index]``."""

    def __post_init__(self) -> None:
        n = len(self.procedure.steps)
        if not 0 <= self.index < n:
            raise IndexError(f"step index {self.index} is outside procedure {self.procedure.name!r} ({n} steps)")
        object.__setattr__(self, "step", self.procedure.steps[self.index])

    @property
    def var(self) -> str:
        """The step's variable (``total``)."""
        return self.step.var

    @property
    def kind(self) -> Kind:
        """The step's registered kind (:func:`stepguard.kinds.kind_of`)."""
        from stepguard import kinds  # the package's face: the registry's module imports this one

        return kinds.kind_of(self.step)

    @property
    def reads(self) -> tuple[str, ...]:
        """The names the step reads (inputs and earlier steps), as :meth:`Procedure.reads` gives them."""
        return self.procedure.reads(self.index)

    @property
    def compiled(self) -> CompiledExpression | None:
        """The step's compiled ``expr``, or ``None`` for a step without one."""
        return self.procedure.compiled[self.index]

    @property
    def compiled_check(self) -> CompiledExpression | None:
        """The step's compiled ``check`` (its predicate or expected value), or ``None``."""
        return self.procedure.compiled_checks[self.index]
