"""Raw mode's prompt and score for one case, as the benchmark runs them.

* :func:`raw_messages`: the raw prompt (:func:`stepguard.guard.render_raw_prompt`), told the truth
  where a procedure's ``answer:`` is not its last step: the template names the answer variable as
  "the last step", so such a prompt asks for the answer variable's value after the last step.
* :func:`score_raw`: :func:`stepguard.verify.score_generation` on the case's scoring target.
* :func:`case_messages` and :func:`score_case`: the same for a case whose procedure has a prompt
  file (:mod:`stepguard.bench.user_prompt`): the user's messages, the answer read as declared,
  and :func:`where_raw_went_wrong`, what the report's per-case table shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stepguard.model import ChatMessage
from stepguard.procedure import Procedure
from stepguard.verify import Score, score_generation

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase

__all__ = ["case_messages", "score_case", "where_raw_went_wrong", "answer_not_last", "raw_messages", "score_raw"]


def answer_not_last(procedure: Procedure) -> bool:
    """Is the procedure's answer variable another step than its last one?"""
    return bool(procedure.steps) and procedure.answer_var != procedure.steps[-1].var


def raw_messages(procedure: Procedure, inputs: Mapping[str, Any]) -> list[ChatMessage]:
    """The raw-mode messages for ``procedure`` on ``inputs``.

    Where the answer is the last step this is :func:`~stepguard.guard.render_raw_prompt` unchanged.
    Otherwise its closing sentence, "After the last step (<answer>), write `Final answer: <value>`",
    names a step that is not the last; it becomes "After the last step (<last>), write
    `Final answer: <the value of <answer>>`".
    """
    from stepguard.guard import render_raw_prompt

    messages = render_raw_prompt(procedure, inputs)
    if not answer_not_last(procedure):
        return messages
    answer, last = procedure.answer_var, procedure.steps[-1].var
    said = f"After the last step ({answer}), write `Final answer: <value>`"
    truth = f"After the last step ({last}), write `Final answer: <the value of {answer}>`"
    text = str(messages[-1]["content"])
    if said in text:
        text = text.replace(said, truth)
    else:  # a template worded otherwise: say it after whatever it says
        text += f"\n\nThe final answer is the value of {answer}, not of the last step {last}."
    return [*messages[:-1], {**messages[-1], "content": text}]


def score_raw(inst: Instance | ProcedureCase, text: str) -> Score:
    """Score a raw-mode generation of ``inst`` (the benchmark's raw rows): :func:`~stepguard.verify.score_generation`
    on its scoring target, boolean, string and ``one_of`` values read as what they are."""
    return score_generation(inst.scoring_target(), text, id=inst.id)


def case_messages(inst: Instance | ProcedureCase) -> tuple[list[ChatMessage], int | None, str]:
    """The raw-mode request of one case: ``(messages, max_tokens or None for the per-step default, prompt)``.

    ``prompt`` is ``"user"`` where the case's procedure has a prompt file (its messages, inputs
    filled in), else ``"stepguard"`` (:func:`raw_messages`).
    """
    prompt = getattr(inst, "raw_prompt", None)
    if prompt is None:
        return raw_messages(inst.to_procedure(), inst.inputs), None, "stepguard"
    written = {**inst.inputs, **getattr(inst, "written", {})}
    return prompt.render(written, [i.name for i in inst.to_procedure().inputs]), prompt.max_tokens, "user"


def score_case(inst: Instance | ProcedureCase, text: str) -> tuple[Score, dict[str, Any]]:
    """Score a raw-mode reply of ``inst``: ``(score, extra row fields)``.

    For a generated instance this is :func:`score_raw` and ``{}``; for a case of a suite without a
    prompt file, :func:`score_raw` and ``{"raw_prompt": "stepguard", "deviated_at": ...}``. With a
    user's prompt file the first answer is what the declared format reads (exactly, or refused:
    then no answer), ``correct`` compares it with the expected answer exactly, and of the trace's
    labels only those the user's prompt can show are kept (``arithmetic_error`` and
    ``extra_steps`` from step lines the reply wrote, ``missing_answer`` when nothing was read);
    ``exact`` needs every step written right as well. The extra fields are ``raw_prompt``
    (``"user"``), ``answer_read`` (``{format, text, refused}``) and ``deviated_at``
    (:func:`where_raw_went_wrong`).
    """
    from stepguard.bench.suites import ProcedureCase

    score = score_raw(inst, text)
    if not isinstance(inst, ProcedureCase):  # a generated instance: its rows stay as they were
        return score, {}
    prompt = getattr(inst, "raw_prompt", None)
    if prompt is None:
        return score, {"raw_prompt": "stepguard", "deviated_at": where_raw_went_wrong(inst, text, score)}
    procedure = inst.to_procedure()
    from stepguard.bench.user_prompt import answer_kind

    read = prompt.read_answer(text, answer_kind(procedure))
    expected = inst.exact_expected.get(procedure.answer_var)
    correct = read.text is not None and _equal(read.value, expected)
    steps_right = score.distinct_steps == score.n_steps == score.step_values_correct
    labels: list[str] = [lb for lb in score.labels if lb in ("arithmetic_error", "extra_steps")]
    if read.text is None:
        labels.insert(0, "missing_answer")
    exact = correct and steps_right and not labels
    first = read.text if read.text is None or isinstance(read.value, str) else _json_answer(read.value)
    score = score.model_copy(update={"first_answer": first, "correct": correct, "exact": exact,
                                     "labels": ["exact"] if exact else labels})
    return score, {"raw_prompt": "user", "answer_read": {"format": prompt.answer_format, "text": read.text, "refused": read.refused},
                   "deviated_at": where_raw_went_wrong(inst, text, score)}


def _equal(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got is want
    if isinstance(want, str) or isinstance(got, str):
        return str(got).strip() == str(want).strip()
    return got is not None and got == want


def _json_answer(value: Any) -> Any:
    from stepguard.evaluator import format_number

    if isinstance(value, bool):
        return "true" if value else "false"
    return value if type(value) is int else format_number(value)


def where_raw_went_wrong(inst: ProcedureCase, text: str, score: Score) -> dict[str, Any] | None:
    """Where a raw reply first went wrong, for the report's per-case table; ``None`` when it did not.

    Returns:
        ``{"step", "how", "wrote", "expected"}``: ``how`` is ``"step line"`` (the first step line
        with a wrong value: ``wrote`` is its value), ``"not shown"`` (the reply writes no line
        for the step, and the step's right value is none of the numbers it writes: the first such
        step in the procedure's order), or ``"answer"`` (every step's value appears, yet the answer
        read is wrong or missing: ``step`` is the answer variable, ``wrote`` what was read).
    """
    from stepguard.bench.user_prompt import number_texts
    from stepguard.evaluator import format_number
    from stepguard.trace import parse_trace

    procedure, expected = inst.scoring_target()
    typed = inst.expected  # at each step's places, for display ("33.10")
    if score.correct and score.exact:
        return None

    def shown(v: Any) -> str:
        from decimal import Decimal

        if isinstance(v, Decimal):
            return str(v)
        return "true" if v is True else "false" if v is False else v if isinstance(v, str) else format_number(v)

    vars_ = [s.var for s in procedure.steps]
    if score.first_error_step is not None:
        trace = parse_trace(text, var_names=vars_)
        rec = next((r for r in trace.records if r.var == score.first_error_step), None)
        wrote = None if rec is None else (rec.text if rec.value is None else format_number(rec.value))
        want = typed.get(score.first_error_step)
        return {"step": score.first_error_step, "how": "step line", "wrote": wrote, "expected": None if want is None else shown(want)}
    if score.correct:
        return None  # right answer; steps missing or out of order, but no value wrong
    written = {r.var for r in parse_trace(text, var_names=vars_).records}
    numbers = set(number_texts(text))
    for var in vars_:
        want = expected.get(var)
        if var in written or want is None or isinstance(want, (bool, str)):
            continue
        if want not in numbers:
            return {"step": var, "how": "not shown", "wrote": None, "expected": shown(typed.get(var, want))}
    want = typed.get(procedure.answer_var)
    return {"step": procedure.answer_var, "how": "answer", "wrote": None if score.first_answer is None else str(score.first_answer),
            "expected": None if want is None else shown(want)}
