"""Raw mode's prompt and score for one case, as the benchmark runs them.

* :func:`raw_messages`: the raw prompt (:func:`stepguard.guard.render_raw_prompt`), told the truth
  where a procedure's ``answer:`` is not its last step: the template names the answer variable as
  "the last step", so such a prompt asks for the answer variable's value after the last step.
* :func:`score_raw`: :func:`stepguard.verify.score_generation` on the case's scoring target.
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

__all__ = ["answer_not_last", "raw_messages", "score_raw"]


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
