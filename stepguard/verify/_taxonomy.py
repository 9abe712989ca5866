"""Raw-mode scoring: one generation against one procedure -> a :class:`Score` with taxonomy labels.

The label names follow the failure modes of Panda et al., arXiv 2605.00817; the rules are *ours*
(benchmark.md, "Failure taxonomy"; the points the paper leaves open are in docs/benchmark.md):

* ``exact``: S1..SN each once, in order, every value right, first answer present and right,
  nothing extra (and, *ours*, the answer not premature: ``exact`` never co-occurs with a failure label).
* ``missing_answer``: no final answer at all.
* ``premature_answer``: the first final answer comes before the first line for S_N (or there is
  no line for S_N at all).
* ``under_executed``: fewer distinct required step lines than N.
* ``extra_steps``: lines for variables that do not exist (S_{N+1}, ...), or repeated steps.
* ``self_correction``: two or more distinct final answers, the first one wrong.
* ``arithmetic_error``: a line for a required step with a wrong (or unreadable) value; the first
  such line in generation order is the first error.

A step of a procedure file whose value is a boolean, a string or a choice (by its type, or by its
expected value's) is read as such, as the guard reads it (:func:`~stepguard.verify.read_raw_value`:
``capped = true``, ``tier = gold``), and ``True`` is not ``1``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, Field

from stepguard.errors import EvaluationError
from stepguard.evaluator import CompiledExpression, Number, compile_expression, format_number
from stepguard.procedure import Procedure
from stepguard.trace import Answer, Record, parse_trace
from stepguard.verify._values import read_raw_value

__all__ = ["FAILURE_LABELS", "SCORE_LABELS", "Score", "ScoreLabel", "ScoringTarget", "score_generation"]

ScoreLabel = Literal[
    "exact", "missing_answer", "premature_answer", "under_executed", "extra_steps", "self_correction", "arithmetic_error"
]
"""A raw-mode label: ``exact`` or one of the six raw-mode :data:`~stepguard.verify.DeviationKind` values."""

SCORE_LABELS: tuple[str, ...] = get_args(ScoreLabel)
"""Every raw-mode label, in report order: ``exact`` first, then the six failure labels."""

FAILURE_LABELS: tuple[str, ...] = SCORE_LABELS[1:]
"""The six raw-mode failure labels (every score label but ``exact``), in report order; the one
label list every report uses. Each is also a :data:`~stepguard.verify.DeviationKind`."""


class _TargetStep(Protocol):
    @property
    def var(self) -> str: ...
    @property
    def expr(self) -> str: ...


class ScoringTarget(Protocol):
    """What :func:`score_generation` reads from a generated instance (``stepguard.bench.instances.Instance``
    has this shape; verify does not import the benchmark)."""

    @property
    def id(self) -> str: ...
    @property
    def lookback(self) -> int | None: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def steps(self) -> Sequence[_TargetStep]: ...
    @property
    def expected(self) -> Mapping[str, Any]: ...
    @property
    def answer(self) -> Any: ...

_compile = lru_cache(maxsize=16_384)(compile_expression)
_MISSING = object()


class Score(BaseModel):
    """The raw-mode score of one generation (one JSONL line of a scores file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Instance id (or procedure name).")
    n_steps: int = Field(description="Required steps N (variables of the procedure).")
    lookback: int | None = Field(None, description="Look-back depth L of a generated instance, else null.")
    first_answer: int | str | None = Field(description="The first final answer: an int, a decimal string, or null if absent/unreadable.")
    correct: bool = Field(description="The first answer equals the expected answer.")
    exact: bool = Field(description="Exact-step execution (the `exact` label).")
    labels: list[ScoreLabel] = Field(description="Every label that applies, in SCORE_LABELS order.")
    steps_emitted: int = Field(description="Step lines parsed, extras and repeats included.")
    distinct_steps: int = Field(description="Distinct required variables with at least one line.")
    step_values_correct: int = Field(description="Required variables whose first line has the right value.")
    first_error_step: str | None = Field(None, description="Variable of the first line with a wrong value.")
    first_error_position: int | None = Field(None, description="1-based position k of that variable in the procedure.")
    lookback_confusion: bool = Field(False, description="The first wrong value equals a wrong-operand reading.")
    code: bool = Field(False, description="The generation contains code (fences, print(, def, >>>).")
    capped: bool = Field(False, description="The generation was longer than the parser's cap; only its head was read.")


@dataclass(frozen=True)
class _Key:
    """What scoring needs from an instance or a (procedure, expected values) pair."""

    id: str
    vars: tuple[str, ...]
    expected: Mapping[str, Any]
    answer: Any
    lookback: int | None
    compiled: Callable[[int], CompiledExpression | None]
    env: Callable[[], Mapping[str, Any]]
    kinds: Mapping[str, tuple[str, Sequence[str] | None]] = field(default_factory=dict)
    """Variables whose value is not a number: ``{var: (boolean | string | one_of, choices)}``."""
    answer_var: str | None = None


def _kinds(procedure: Procedure, expected: Mapping[str, Any]) -> dict[str, tuple[str, Sequence[str] | None]]:
    """How each non-numeric step's value is read: by its declared type, else by its expected value's."""
    out: dict[str, tuple[str, Sequence[str] | None]] = {}
    for step in procedure.steps:
        want = expected.get(step.var)
        kind = step.type if step.type in ("boolean", "string", "one_of") else (
            "boolean" if isinstance(want, bool) else "string" if isinstance(want, str) else None)
        if kind is not None:
            out[step.var] = (kind, step.choices)
    return out


def _key(target: Any, id: str | None) -> _Key:
    if isinstance(target, tuple):
        procedure, expected = target
        if not isinstance(procedure, Procedure):
            raise TypeError("a (procedure, expected values) pair needs a Procedure first")
        return _Key(
            id if id is not None else procedure.name, procedure.variables, expected,
            expected.get(procedure.answer_var, _MISSING), None, lambda i: procedure.compiled[i], lambda: expected,
            _kinds(procedure, expected), procedure.answer_var,
        )
    steps = target.steps
    return _Key(
        id if id is not None else target.id, tuple(s.var for s in steps), target.expected, target.answer,
        target.lookback, lambda i: _compile(steps[i].expr), lambda: {**target.inputs, **target.expected},
    )


def _right(value: Number | str | None, expected: Any) -> bool:
    if expected is _MISSING:  # a step without an expected value: any readable value counts
        return value is not None
    if isinstance(value, bool) or isinstance(expected, bool):  # True == 1 in Python; not here
        return isinstance(value, bool) and isinstance(expected, bool) and value is expected
    return value is not None and value == expected


def _as_json(value: Number | str | None) -> int | str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None or type(value) is int or isinstance(value, str):
        return value
    return format_number(value)


_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_AFTER_WORDS = re.compile(r"answer\W*?(?:\bis\b|[:=])(.*)", re.IGNORECASE | re.DOTALL)


def _value(rec: Record, key: _Key) -> Number | str | None:
    """A record's value as its variable's kind: the parser's number, or a boolean or text read from its clause."""
    kind = key.kinds.get(rec.var)
    return rec.value if kind is None else read_raw_value(rec, *kind)


_TEXT_MACRO = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\{([^}]*)\}")


def _answer_value(answer: Answer, key: _Key, text: str) -> Number | str | None:
    """A final answer's value as the answer variable's kind (``Final answer: true``, ``Final answer:``
    and ``gold`` on the next line, ``\\boxed{\\text{gold}}``), read from ``text`` at the answer's offset."""
    kind = key.kinds.get(key.answer_var or "")
    if kind is None:
        return answer.value
    window = text[answer.offset: answer.offset + 400]
    m = _BOXED.search(window) or _AFTER_WORDS.search(window)
    said = _TEXT_MACRO.sub(r"\1", m.group(1)) if m else ""
    first = next((line for line in said.splitlines() if line.strip()), "")  # the value, on its line or the next
    return read_raw_value(Record(var=str(key.answer_var), value=None, text=first, rhs=first), *kind)


def _lookback_confusion(key: _Key, index: int, got: Number | None) -> bool:
    """Does ``got`` equal step ``index`` evaluated with one operand replaced by a nearer variable?

    For ``S_k = S_{k-1} op S_{k-L}`` that is ``S_{k-L}`` replaced by one of ``S_{k-L+1}..S_{k-1}``;
    in general, any variable the expression reads replaced by any variable defined after it and
    before step ``index``. Operand values are the expected ones (the true environment).
    """
    compiled = key.compiled(index)
    if got is None or compiled is None:
        return False
    position = {v: i for i, v in enumerate(key.vars[:index])}
    env = key.env()
    try:
        base = {n: env[n] for n in compiled.names}
    except KeyError:
        return False
    for name in compiled.names:
        p = position.get(name)
        if p is None:
            continue
        for nearer in key.vars[p + 1 : index]:
            if nearer not in env:
                continue
            try:
                if compiled.evaluate({**base, name: env[nearer]}) == got:
                    return True
            except EvaluationError:
                continue
    return False


@dataclass
class _Steps:
    """The trace's step records, read in order against the key."""

    first: dict[str, Record] = field(default_factory=dict)
    """Each step variable's first record."""
    order: list[int] = field(default_factory=list)
    """The position in the procedure of each step record, in the trace's order."""
    extra: bool = False
    """A record of no step variable, or of one written again."""
    right: int = 0
    """Step variables whose first record has the right value."""
    wrong: Record | None = None
    """The first record with a wrong value."""
    wrong_value: Number | str | None = None
    """That record's value."""


def _read_steps(records: Sequence[Record], key: _Key, position: Mapping[str, int]) -> _Steps:
    """The step records of ``records`` (``position``: each step variable's index) tallied."""
    steps = _Steps()
    expected = key.expected
    for rec in records:
        p = position.get(rec.var)
        if p is None:
            steps.extra = True
            continue
        value = _value(rec, key)
        ok = _right(value, expected.get(rec.var, _MISSING))
        if rec.var in steps.first:
            steps.extra = True
        else:
            steps.first[rec.var] = rec
            steps.right += ok
        steps.order.append(p)
        if not ok and steps.wrong is None:
            steps.wrong, steps.wrong_value = rec, value
    return steps


def _flags(key: _Key, steps: _Steps, answer: Answer | None, values: Sequence[Number | str | None],
           correct: bool) -> dict[str, bool]:
    """Each failure label (:data:`FAILURE_LABELS`) and whether the generation earns it."""
    last = steps.first.get(key.vars[-1]) if key.vars else None
    return {
        "missing_answer": answer is None,
        "premature_answer": answer is not None and (last is None or answer.offset < last.offset),
        "under_executed": len(steps.first) < len(key.vars),
        "extra_steps": steps.extra,
        "self_correction": len({repr(v) for v in values}) >= 2 and not correct,
        "arithmetic_error": steps.wrong is not None,
    }


def _first_error(key: _Key, steps: _Steps, position: Mapping[str, int]) -> dict[str, Any]:
    """The score's fields about the first wrong step: its variable, its 1-based position, and whether
    it is a look-back confusion (all None or False when no step is wrong)."""
    wrong, wrong_value = steps.wrong, steps.wrong_value
    if wrong is None:
        return {"first_error_step": None, "first_error_position": None, "lookback_confusion": False}
    wrong_index = position[wrong.var]
    return {
        "first_error_step": wrong.var,
        "first_error_position": wrong_index + 1,
        "lookback_confusion": not isinstance(wrong_value, (bool, str)) and _lookback_confusion(key, wrong_index, wrong_value),
    }


def score_generation(
    target: ScoringTarget | tuple[Procedure, Mapping[str, Any]],
    text: str,
    *,
    id: str | None = None,
    max_chars: int = 1_000_000,
    max_digits: int = 400,
) -> Score:
    """Score one raw-mode generation against its procedure (rules: benchmark.md, *ours*).

    Args:
        target: a generated instance (a :class:`ScoringTarget`, e.g. ``stepguard.bench.instances.Instance``),
            or ``(procedure, expected)`` where
            ``expected`` maps each step variable to its value (as from
            :meth:`Procedure.expected_values`; input values may be included, for the look-back check).
        text: the model's generation.
        id: overrides the score's id (default: the instance id or the procedure name).
        max_chars, max_digits: the parser's caps (see :func:`stepguard.trace.parse_trace`).

    Returns:
        A :class:`Score`.

    Raises:
        TypeError: ``target`` is neither shape, or ``text`` is not a string.
    """
    key = _key(target, id)
    trace = parse_trace(text, var_names=key.vars, max_chars=max_chars, max_digits=max_digits)
    position = {v: i for i, v in enumerate(key.vars)}
    steps = _read_steps(trace.records, key, position)
    answers = trace.answers
    answer = answers[0] if answers else None
    values = [_answer_value(a, key, text) for a in answers]
    correct = answer is not None and _right(values[0], key.answer) and key.answer is not _MISSING
    flags = _flags(key, steps, answer, values, correct)
    exact = correct and not any(flags.values()) and steps.order == list(range(len(key.vars)))
    labels = [label for label in SCORE_LABELS if (exact if label == "exact" else flags[label])]
    return Score(
        id=key.id,
        n_steps=len(key.vars),
        lookback=key.lookback,
        first_answer=_as_json(values[0]) if answer is not None else None,
        correct=correct,
        exact=exact,
        labels=labels,
        steps_emitted=len(trace.records),
        distinct_steps=len(steps.first),
        step_values_correct=steps.right,
        **_first_error(key, steps, position),
        code=trace.has_code,
        capped=trace.capped,
    )
