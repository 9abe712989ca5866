"""The three parts of a step kind, each with defaults: how its steps are prompted, checked and acted on.

A kind (:class:`stepguard.kinds.Kind`) inherits all three and overrides only what differs from the
defaults, which fit a kind whose steps are asked alone, written ``var = <value>`` and checked by
the step's own predicate. Every method receives the step as a :class:`~stepguard.kinds.StepContext`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, parse_number
from stepguard.procedure import Step, ValueShape

if TYPE_CHECKING:
    from stepguard.kinds._context import StepContext
    from stepguard.kinds._reading import KindVerdict
    from stepguard.tools import ToolCall, ToolSet
    from stepguard.verify import Deviation

__all__ = ["Acting", "Checking", "Prompting", "Value", "parse_committed"]

Value = Any
"""A committed value as the evaluator reads it: a number (``int``, ``Fraction``), a ``bool``, a
``str``, or for a structured text value a ``tuple`` (a list) or a mapping (JSON)."""


class Prompting:
    """How a kind's steps are written into a prompt, and what ``stepguard check`` says of them.

    Attributes:
        asked_alone: whether its steps are asked one to a model call (``False``: several steps of
            this kind go into one chunk).
        names_type: whether its prompt line says the value's type (``a boolean``, ``a whole number``).
    """

    name: ClassVar[str]
    asked_alone: ClassVar[bool] = True
    names_type: ClassVar[bool] = False
    """Whether the step's line names a boolean, string or integer type (``a whole number``)."""

    def notes(self, ctx: StepContext) -> list[str]:
        """What the step's prompt line says about its value beyond its instruction (source, format, rules)."""
        return []

    def line(self, ctx: StepContext, values: Mapping[str, Value], note: str) -> str:
        """The step's line in a prompt (``total = ?    (read it from receipt)``); ``note`` is the
        parenthesised notes already joined (``""`` for none); ``values``: names to write as values."""
        return f"{ctx.var} = ?{note or '    (as the procedure says)'}"

    def example(self, ctx: StepContext, values: Mapping[str, Value]) -> str:
        """The shape of the answer line, for a chunk that starts with this step."""
        return f"{ctx.var} = <result>"

    def chunk_example(self, chunk: Sequence[StepContext], values: Mapping[str, Value]) -> str:
        """The answer-line shape shown for a chunk (its steps, in order) that starts with a step of
        this kind: by default :meth:`example` of the first step."""
        return self.example(chunk[0], values)

    def count_line(self, chunk: Sequence[StepContext]) -> str | None:
        """What to write, for a chunk (its steps, in order) that starts with this kind's step;
        ``None``: the default count line."""
        return None

    def offered_tools(self, step: Step, tools: ToolSet) -> tuple[dict[str, Any], ...]:
        """The tool schemas offered with the model call (OpenAI ``tools``); ``()`` for none."""
        return ()

    def describe(self, ctx: StepContext) -> list[str]:
        """Lines ``stepguard check`` prints about what the step verifies beyond its type and predicate."""
        return [f"{self.name}: a step of a registered kind"]


class Checking:
    """How a reply for a kind's step is read and checked, re-asked, graded and committed."""

    def check(self, ctx: StepContext, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()) -> KindVerdict:
        """Read and check the reply for the step, asked alone (never evaluating the reply).

        By default the reply's ``var = <value>`` line, read as a value of the step's type
        (:meth:`value_of`) and checked by the step's ``check``: a ``type_error`` for a value of another
        type, ``check_failed`` for one the predicate refuses, ``under_executed`` for no line.

        Returns:
            A :class:`stepguard.kinds.KindVerdict`: the value to commit, or the first deviation.
        """
        from stepguard.kinds._reading import check_predicate, step_line
        from stepguard.verify import Deviation

        out, raw = step_line(reply, ctx.var)
        if raw is None:
            return out
        try:
            value = self.value_of(ctx.step, raw)
        except (ValueError, TypeError, EvaluationError):
            out.deviation = Deviation(kind="type_error", step=ctx.var, got=raw,
                                      detail=f"{ctx.var} = {raw[:80]!r} is not a value of type {ctx.step.type}")
            return out
        return check_predicate(ctx.procedure, ctx.index, env, value, out, raw)

    def correction_note(self, ctx: StepContext, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """The note that opens a re-prompt for the step after ``deviation`` (names no expected value)."""
        got = (deviation.got or "").strip()[:120]
        detail = deviation.detail.split(" [", 1)[0]
        yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
        return f"{yours}: {detail}. Write {ctx.var} again, following every rule on its line."

    def check_result(self, ctx: StepContext, env: Mapping[str, Value], value: str) -> Deviation | None:
        """Check an executed action's value text by the step's predicate; ``None`` when it passes."""
        return None

    def provenance(self, ctx: StepContext) -> str:
        """The provenance of a verified value of the step (:data:`stepguard.guard.Provenance`)."""
        return "model_verified"

    def grade(self, ctx: StepContext) -> str:
        """The grade of a verified value of the step (:data:`stepguard.guard.Grade`): how strong the
        check it passed is. By default ``bounded``: a kind's own check held, which proves no one value
        (a kind whose check does give one says so: ``exact``, ``matched``, ``tool``)."""
        return "bounded"

    def value_of(self, step: Step, text: str) -> Value:
        """The committed value text of ``step`` as the evaluator reads it (``"7/2"`` -> ``Fraction(7, 2)``).

        Raises:
            ValueError: the text is not a value of the step's type (a checkpoint that does not fit).
        """
        return parse_committed(text, step.type)

    def result_shape(self, step: Step) -> ValueShape:
        """How a run's result holds ``step``'s committed value (:data:`stepguard.procedure.ValueShape`):
        ``scalar`` (typed by the step's ``type``) unless the kind commits a list or a JSON value."""
        return "scalar"


class Acting:
    """For a kind whose checked step is an action (a tool call): recording, carrying out and resuming it.

    The defaults fit a kind that does not act: nothing to record, execute or refuse.
    """

    name: ClassVar[str]

    def intent(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, key: str) -> dict[str, Any] | None:
        """The JSON record of the action ``verdict`` is about to carry out, made durable (checkpointed)
        before :meth:`execute` runs; ``None``: nothing to record. An action whose step already holds a
        recorded result for an equal intent is not carried out again: that result is committed.

        Raises:
            ToolError: the action cannot be carried out; the run stops at this step.
        """
        return None

    def execute(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Carry out the checked action of ``verdict`` (a tool call) and return the value text to commit.

        Args:
            key: the action's idempotency key (the step's identity in the run: the same on every
                resume of its thread), for an action that can be deduplicated by it.

        Raises:
            ToolError: the action failed; the run stops at this step.
        """
        raise NotImplementedError(f"step kind {self.name!r} has nothing to execute")

    async def aexecute(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Async twin of :meth:`execute`."""
        return self.execute(ctx, verdict, tools, observer, key)

    def resume_refusal(self, ctx: StepContext, record: Mapping[str, Any], tools: ToolSet) -> str | None:
        """Why a thread whose step holds the action ``record`` (``{"intent"[, "result"][, "error"]}``)
        cannot be resumed (the phrase names the step), or ``None`` when it can."""
        return None


def parse_committed(text: str, type_: str | None) -> Value:
    """A committed value text read back by its declared type (``True``, ``-12``, ``7/2``, a string).

    Raises:
        ValueError: a boolean that reads other than True or False.
    """
    if type_ in ("string", "one_of"):
        return text
    if type_ == "boolean":  # committed as the prompts write it (``True``); ``true`` in older state
        if text.lower() not in ("true", "false"):
            raise ValueError(f"a committed boolean reads {text!r}, not True or False")
        return text.lower() == "true"
    if "/" in text:
        from fractions import Fraction

        num, den = text.split("/", 1)
        return Fraction(int(num), int(den))
    value: Number = parse_number(text)
    return value
