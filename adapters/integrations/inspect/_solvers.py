"""The Inspect solvers: ``stepguard/raw`` (one request, the benchmark's raw mode) and ``stepguard/guarded``.

Both run the case with :func:`stepguard.bench.case.arun_case`, the function ``stepguard bench run``
runs, over :class:`~._model.InspectModel` (the ``--model`` Inspect was given), and keep the row it
returns in the sample's store under :data:`ROW_KEY` for the scorer. The guarded solver takes
:class:`~stepguard.guard.GuardOptions`' fields as its parameters (``-S chunk_size=1 -S ladder=narrow``);
one left out takes the default ``stepguard bench run`` takes (by procedure, then ``on_exhausted=flag``).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from stepguard.bench.case import arun_case
from stepguard.bench.run import RAW_TOKENS_PER_STEP, resolve_guard_config
from stepguard.guard import GuardOptions

from ._model import InspectModel
from ._samples import case_of, procedures_of

__all__ = ["ROW_KEY", "guarded", "raw"]

ROW_KEY = "stepguard:row"
"""The sample store's key for the case's run-store row (:mod:`stepguard.bench.rows`)."""


@solver
def raw(tokens_per_step: int = RAW_TOKENS_PER_STEP) -> Solver:
    """Raw mode: the procedure in one prompt, temperature 0, seed 0, one reply scored as ``bench run --mode raw`` scores it.

    Args:
        tokens_per_step: the token allowance per step (``max_tokens`` = this x steps + 64).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = InspectModel(get_model())
        row = await arun_case(case_of(state.metadata), "raw", model, raw_tokens_per_step=tokens_per_step)
        if model.last_output is not None:
            state.output = model.last_output
            state.messages.append(model.last_output.message)
        state.store.set(ROW_KEY, row)
        return state

    return solve


@solver
def guarded(
    chunk_size: int | None = None,
    adaptive: bool | None = None,
    policy: str | None = None,
    ladder: str | list[str] | None = None,
    max_reprompts_per_step: int | None = None,
    max_reprompts_per_run: int | None = None,
    max_total_tokens: int | None = None,
    max_wall_s: float | None = None,
    on_exhausted: str | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    resample_temperature: float | None = None,
    inline_known: bool | None = None,
    max_tokens_per_step: int | None = None,
    streamed: bool | None = None,
    window: int | None = None,
    follow: bool | None = None,
) -> Solver:
    """Guarded mode: stepguard's guard executes the procedure stepwise over Inspect's model, checking every value.

    Each parameter is the :class:`~stepguard.guard.GuardConfig` field of the same name; ``None``
    (left out) takes the benchmark's default for it. Every model call the guard makes goes through
    Inspect (its transcript shows each one).

    Raises:
        OptionError: a value the guard refuses (names the parameter), when the solver is built.
    """
    given: dict[str, Any] = {k: v for k, v in locals().items() if v is not None}
    options = GuardOptions.parse(given)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        case = case_of(state.metadata)
        config = resolve_guard_config(options, procedures_of(state.metadata))
        inspect_model = get_model()
        row = await arun_case(case, "guarded", InspectModel(inspect_model), guard_config=config)
        answer = row.get("first_answer")
        text = "" if answer is None else f"Final answer: {answer}"
        state.output = ModelOutput.from_content(model=str(inspect_model), content=text)
        state.messages.append(ChatMessageAssistant(content=text, model=str(inspect_model)))
        state.store.set(ROW_KEY, row)
        return state

    return solve
