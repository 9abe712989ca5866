"""The peer a user would pick instead of the guard: Instructor's re-ask loop, as the benchmark's third mode.

``reask`` mode sends raw mode's prompt, asking for the procedure's result as structured output
(Instructor's ``MD_JSON`` mode: every step's value and the final answer as a JSON object), and lets
Instructor (the real library, ``pip install "stepguard[instructor]"``) validate the reply and ask
again with the errors, ``max_retries`` attempts in all (Instructor's count)::

    prompt ──> model ──> JSON ──> validator ──ok──> row
                 ^                    │ errors (as the ValidationError's message)
                 └── Instructor re-asks: the reply and the errors appended

The validator (:meth:`Execution.check`) checks every step line with stepguard's evaluator, as the
guard does: each value against the step's expression on the inputs and the model's **own** earlier
values, so a message names what is wrong ("S7 = S6 + S3 does not hold for your values") and never
the expected value. It also asks for every step in order and a final answer equal to the answer
step's value. Instructor drives the model through stepguard's :class:`~stepguard.model.ChatModel`
(its ``create`` hook), so the same models serve all three modes.

The row has raw mode's shape, scored as raw mode scores a reply (the last attempt's JSON written
as step lines), with ``mode: "reask"`` and ``reask``: ``{attempts, exhausted, errors, replies}`` (the
last validation errors when Instructor gave up); ``usage`` sums every attempt. When Instructor gives
up, its caller gets an exception and no value: ``correct`` and ``exact`` are then false, whatever
the last reply's answer (its labels and step values are still read from it). Generated instances only:
their values are integers (a suite's decimals, booleans and texts need a schema per step).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from stepguard.bench._rawcase import raw_case_row, raw_request
from stepguard.bench._runmeta import MAX_RETRIES
from stepguard.errors import EvaluationError, ModelError
from stepguard.evaluator import compile_expression, parse_number
from stepguard.model import ChatModel, ChatResponse, GenerationSettings, Usage

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase

__all__ = ["MAX_RETRIES", "Execution", "StepValue", "arun_reask", "reask_messages"]


_FORMAT = ("Compute each step in order, from the inputs and the values of earlier steps. Answer with every "
           "step's value, in order, and the final answer (the value of {answer}).")


class StepValue(BaseModel):
    """One step's value as the model gives it."""

    var: str = Field(description="The step's variable, e.g. S3.")
    value: Decimal = Field(description="The step's value, a number.")


class Execution(BaseModel):
    """The response model: every step's value, in order, and the final answer.

    Validated with the context ``{"procedure": Procedure, "inputs": {name: value}}`` (what
    :func:`arun_reask` passes Instructor); without it only the shape is checked.
    """

    steps: list[StepValue] = Field(description="Every step, in the procedure's order.")
    final_answer: Decimal = Field(description="The value of the procedure's answer step.")

    @model_validator(mode="after")
    def check(self, info: ValidationInfo) -> Execution:
        """Check every step with stepguard's evaluator on the model's own earlier values.

        Raises:
            ValueError: the errors, one a line: steps missing or out of order, a step whose value
                does not follow from the inputs and the model's earlier values, a final answer that
                is not the answer step's value. No message holds an expected value.
        """
        context = info.context or {}
        procedure, inputs = context.get("procedure"), context.get("inputs")
        if procedure is None or inputs is None:
            return self
        own = {s.var: s.value for s in self.steps}
        errors = _order_errors([s.var for s in procedure.steps], [s.var for s in self.steps])
        errors += _value_errors(procedure, inputs, own)
        answer = procedure.answer_var
        if answer in own and _number(self.final_answer) != _number(own[answer]):
            errors.append(f"final_answer must be the value you give for {answer}")
        if errors:
            raise ValueError("\n".join(errors))
        return self


def _order_errors(order: list[str], given: list[str]) -> list[str]:
    """What is wrong with the steps ``given`` (variables, in the model's order) against the
    procedure's ``order``: steps missing, steps the procedure has not, or the order alone."""
    if given == order:
        return []
    errors = []
    missing = [v for v in order if v not in given]
    extra = [v for v in given if v not in order]
    if missing:
        errors.append(f"missing steps: {', '.join(missing)}; give every step, {order[0]} to {order[-1]}")
    if extra:
        errors.append(f"no such steps: {', '.join(extra)}")
    if not missing and not extra:
        errors.append(f"steps out of order: give them in the procedure's order, {order[0]} first")
    return errors


def _value_errors(procedure: Any, inputs: Mapping[str, Any], own: Mapping[str, Decimal]) -> list[str]:
    """Each step of ``procedure`` (a :class:`~stepguard.procedure.Procedure` of compute steps, as the
    validation context gives it) whose value in ``own`` does not follow from the inputs and the
    model's own earlier values (never saying the expected value)."""
    errors = []
    values: dict[str, Any] = {k: parse_number(str(v)) for k, v in inputs.items()}
    for step in procedure.steps:
        if step.var not in own or step.expr is None:
            continue
        try:
            want = compile_expression(step.expr).evaluate(values)
        except EvaluationError:
            continue  # an operand the model did not give: already reported as missing
        got = _number(own[step.var])
        if got != want:
            errors.append(f"{step.var} = {step.expr} does not hold for your values: recompute {step.var} from "
                          f"{'the inputs and ' if values else ''}your earlier steps")
        values[step.var] = got
    return errors


def _number(value: Decimal) -> Any:
    """A JSON number as the evaluator's exact number (``81``, ``Fraction(33, 10)``)."""
    try:
        return parse_number(format(value, "f"))
    except (EvaluationError, InvalidOperation, ValueError):
        return value


def reask_messages(inst: Instance) -> list[dict[str, str]]:
    """Raw mode's messages for ``inst`` with its answer-format sentence replaced by :data:`_FORMAT`
    (Instructor adds the JSON schema and the code-block instruction itself)."""
    messages, _ = raw_request(inst)
    out = [dict(m) for m in messages]
    text = out[-1]["content"]
    cut = text.find("Write each step on its own line")
    answer = inst.to_procedure().answer_var
    out[-1]["content"] = (text[:cut].rstrip() if cut >= 0 else text.rstrip()) + "\n\n" + _FORMAT.format(answer=answer)
    return out


def _lines(execution: Execution | dict[str, Any] | None) -> str:
    """An execution as step lines and a final-answer line: what raw mode's scorer reads."""
    if execution is None:
        return ""
    data = execution.model_dump() if isinstance(execution, Execution) else execution
    lines = [f"{s.get('var')} = {s.get('value')}" for s in data.get("steps") or () if isinstance(s, dict)]
    if data.get("final_answer") is not None:
        lines.append(f"Final answer: {data['final_answer']}")
    return "\n".join(lines)


async def arun_reask(inst: Instance | ProcedureCase, model: ChatModel, *, max_retries: int = MAX_RETRIES) -> dict[str, Any]:
    """Execute ``inst`` through Instructor's re-ask loop on ``model`` and return its row.

    Args:
        inst: a generated instance.
        model: any stepguard model; Instructor calls it through its ``create`` hook.
        max_retries: Instructor's ``max_retries`` (attempts in all).

    Returns:
        A raw-shaped row (:func:`stepguard.bench.case.raw_case_row`) with ``mode: "reask"``,
        ``reask: {attempts, exhausted, errors}`` and the usage of every attempt. ``exhausted``: Instructor
        gave up (its attempts spent, or a reply cut at the token allowance, which it does not re-ask)
        and its caller got an exception, so nothing delivered is right.

    Raises:
        ValueError: ``inst`` is a suite's case.
        MissingExtraError: Instructor is not installed.
        ModelError: the model failed.
    """
    from stepguard.bench.instances import Instance

    if not isinstance(inst, Instance):
        raise ValueError(f"{inst.id}: reask mode runs generated instances only (integer steps); a suite's case needs a schema per step")
    from stepguard.bench._extra import import_extra

    instructor = import_extra("instructor", extra="instructor", what="reask mode (Instructor's re-ask loop)")
    from openai.types.chat import ChatCompletion

    replies: list[ChatResponse] = []
    failures: list[ModelError] = []  # the model's own errors inside the loop (the adapter's retries spent)
    max_tokens = raw_request(inst)[1].max_tokens

    async def create(**kwargs: Any) -> ChatCompletion:
        messages = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else str(m["content"])}
                    for m in kwargs["messages"]]
        settings = GenerationSettings(temperature=kwargs.get("temperature", 0.0), seed=kwargs.get("seed", 0),
                                      max_tokens=kwargs.get("max_tokens", max_tokens))
        try:
            resp = await model.acomplete(messages, settings)  # type: ignore[arg-type]  # roles checked by the adapter
        except ModelError as exc:  # Instructor would take it for an attempt and go on: kept, raised below
            failures.append(exc)
            raise
        replies.append(resp)
        finish = resp.finish_reason if resp.finish_reason in ("stop", "length", "content_filter") else "stop"
        return ChatCompletion.model_validate({
            "id": resp.response_id or f"reask-{len(replies)}", "object": "chat.completion", "created": 0,
            "model": resp.model or model.model_name,
            "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": resp.text}}],
            "usage": {"prompt_tokens": resp.usage.input_tokens, "completion_tokens": resp.usage.output_tokens,
                      "total_tokens": resp.usage.input_tokens + resp.usage.output_tokens}})

    patched = instructor.patch(create=create, mode=instructor.Mode.MD_JSON)
    procedure = inst.to_procedure()
    t0 = time.perf_counter()
    errors: list[str] = []
    result: Execution | dict[str, Any] | None = None
    exhausted = False
    try:
        result = await patched(messages=reask_messages(inst), response_model=Execution, max_retries=max_retries,
                               context={"procedure": procedure, "inputs": inst.inputs}, temperature=0.0, seed=0, max_tokens=max_tokens)
    except instructor.core.InstructorRetryException as exc:  # the attempts are spent: score the last reply as it stands
        exhausted = True
        failed = getattr(exc, "failed_attempts", None) or []
        errors = [str(f.exception)[:1000] for f in failed[-1:]]
        result = _last_json(replies[-1].text if replies else "")
    except instructor.core.IncompleteOutputException as exc:  # a reply cut at the token allowance: Instructor stops there
        exhausted = True
        errors = [str(exc)[:1000]]
        result = _last_json(replies[-1].text if replies else "")
    if failures:  # the model failed, not the loop: the bench's error row, run again on resume
        raise failures[0]
    wall = time.perf_counter() - t0
    usage = sum((r.usage for r in replies), Usage())
    reply = ChatResponse(_lines(result), usage, replies[-1].finish_reason if replies else "stop",
                         sum(r.latency_s for r in replies), model.model_name, bool(model.simulated))
    row = raw_case_row(inst, reply, wall)
    row["mode"] = "reask"
    if exhausted:  # the caller got Instructor's exception, no value: nothing delivered is right
        row["correct"] = row["exact"] = False
    row["usage"]["model_calls"] = len(replies)
    row["reask"] = {"attempts": len(replies), "exhausted": exhausted, "errors": errors,
                    "replies": [r.text[:2000] for r in replies]}
    return row


def _last_json(text: str) -> dict[str, Any] | None:
    """The JSON object of the last reply Instructor gave up on (its code block, or the text), else ``None``."""
    import json
    import re

    block = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    try:
        data = json.loads(block.group(1) if block else text)
    except (json.JSONDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None
