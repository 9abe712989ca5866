"""Benchmark instances: one procedure with its inputs and expected values, one JSONL line each.

The shape is benchmark.md's "Output" (*ours*: the paper published no data): ``id``, ``n_steps``,
``lookback``, ``seed``, ``index``, ``inputs`` ``{x, y}``, ``steps`` ``[{var, expr}]`` (expressions in
the safe-evaluator syntax), ``expected`` ``{var: value}`` and ``answer``; values are JSON ints.
Users may bring their own procedures in the same shape (any input names, any variable names).
Its JSON Schema is :func:`instance_json_schema`, also kept in ``docs/schemas/instance.schema.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from stepguard.errors import EvaluationError, ProcedureError, StepguardError
from stepguard.evaluator import compile_expression
from stepguard.procedure import Procedure

__all__ = [
    "DEFAULT_MAX_LINE_CHARS",
    "Instance",
    "InstanceStep",
    "instance_json_schema",
    "iter_instances",
    "load_instances",
    "read_jsonl",
    "write_instance_schema",
    "write_instances",
]

DEFAULT_MAX_LINE_CHARS = 1_000_000
"""Longest JSONL line read from an instance file, characters (a 95-step instance is about 4,000)."""


# A frozen standard dataclass rather than a model: pydantic validates it from JSON all the same
# (pattern, length, no extra keys) at half the cost per step, and the generator shares instances.
@dataclass(frozen=True, slots=True)
class InstanceStep:
    """One step of an instance: the variable and its expression (``{"var": "S3", "expr": "S2 - S1"}``)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    var: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$", description="The variable this step produces.")]
    expr: Annotated[str, Field(max_length=2000, description="Its expression over inputs and earlier variables.")]


class Instance(BaseModel):
    """One benchmark instance: a procedure, its inputs and the expected value of every step.

    Checked on load: n_steps equals the number of steps, variables are unique, expected lists
    exactly the step variables, and answer equals the last step's expected value. Whether the
    expected values match the expressions is checked by ``check_expected`` (on request: slower).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=200, description='Unique id, e.g. "n95-l7-s0-i17".')
    n_steps: int = Field(ge=1, description="Steps N, the two initialisations included (S1..SN).")
    lookback: int | None = Field(None, ge=1, description="Look-back depth L (null for user procedures without one).")
    seed: int = Field(0, description="Generator seed.")
    index: int = Field(0, ge=0, description="Index of the instance within its configuration.")
    inputs: dict[str, StrictInt] = Field(description='Input values, e.g. {"x": 7, "y": 3}.')
    steps: tuple[InstanceStep, ...] = Field(min_length=1, description="The steps, in order.")
    expected: dict[str, StrictInt] = Field(description="Expected value of every step variable.")
    answer: StrictInt = Field(description="Expected final answer: the last step's value.")

    @model_validator(mode="after")
    def _consistent(self) -> Instance:
        names = [s.var for s in self.steps]
        if self.n_steps != len(names):
            raise ValueError(f"n_steps is {self.n_steps} but there are {len(names)} steps")
        if len(set(names)) != len(names):
            raise ValueError("step variables must be unique")
        if set(self.expected) != set(names):
            missing, extra = sorted(set(names) - set(self.expected)), sorted(set(self.expected) - set(names))
            raise ValueError(f"expected must list exactly the step variables (missing {missing}, extra {extra})")
        if self.answer != self.expected[names[-1]]:
            raise ValueError(f"answer {self.answer} differs from expected[{names[-1]!r}] = {self.expected[names[-1]]}")
        return self

    def to_procedure(self) -> Procedure:
        """This instance as a :class:`~stepguard.procedure.Procedure` (named by ``id``; inputs as declared).

        Raises:
            ProcedureError: an expression is unsafe or reads an undefined name (names the step).
        """
        return Procedure(
            name=self.id,
            inputs=[{"name": n, "type": "integer"} for n in self.inputs],
            steps=[{"var": s.var, "expr": s.expr} for s in self.steps],
        )

    def scoring_target(self) -> Instance:
        """What :func:`stepguard.verify.score_generation` scores a raw-mode generation against: the
        instance itself (a :class:`~stepguard.bench.suites.ProcedureCase` gives its procedure and values)."""
        return self

    def check_expected(self) -> None:
        """Recompute every step with the safe evaluator and compare with ``expected``.

        Raises:
            ProcedureError: an expression fails or its value differs from ``expected`` (names the step).
        """
        env: dict[str, Any] = dict(self.inputs)
        for i, step in enumerate(self.steps):
            try:
                value = compile_expression(step.expr).evaluate(env)
            except EvaluationError as exc:
                raise ProcedureError(str(exc), f"{self.id}: steps[{i}].expr ({step.var})") from None
            if value != self.expected[step.var]:
                raise ProcedureError(f"expected {self.expected[step.var]}, evaluator gives {value}", f"{self.id}: {step.var}")
            env[step.var] = value


def _lines(path: str | Path, max_line_chars: int, error: type[StepguardError]) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, line)`` for each non-blank line of a UTF-8 text file."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            number = 0
            while True:
                line = fh.readline(max_line_chars + 1)
                if not line:
                    return
                number += 1
                if len(line) > max_line_chars and not line.endswith("\n"):
                    raise error(f"{p}:{number}: line longer than {max_line_chars} characters")
                if line.strip():
                    yield number, line
    except OSError as exc:
        raise error(f"{p}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise error(f"{p}: not UTF-8 text") from None


def read_jsonl(
    path: str | Path, *, max_line_chars: int = DEFAULT_MAX_LINE_CHARS, error: type[StepguardError] = ProcedureError
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed JSON)`` for each non-blank line of a UTF-8 JSONL file.

    Args:
        path: the file.
        max_line_chars: longer lines are refused (at most this much plus one character is read per line).
        error: the :class:`~stepguard.errors.StepguardError` subclass raised, with ``"FILE:LINE"`` in the message.

    Raises:
        error: unreadable file, a line too long, not UTF-8 or not JSON.
    """
    for number, line in _lines(path, max_line_chars, error):
        try:
            yield number, json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise error(f"{path}:{number}: not valid JSON ({exc})") from None


def iter_instances(path: str | Path, *, verify: bool = False, max_line_chars: int = DEFAULT_MAX_LINE_CHARS) -> Iterator[Instance]:
    """Stream the instances of a JSONL file (ours or a user's file of the same shape).

    Args:
        path: the JSONL file.
        verify: also run :meth:`Instance.check_expected` on each (slower: the evaluator runs).
        max_line_chars: cap on one line, characters.

    Raises:
        ProcedureError: a bad line; the message names the file, the line and the field.
    """
    for number, line in _lines(path, max_line_chars, ProcedureError):
        where = f"{path}:{number}"
        try:
            inst = Instance.model_validate_json(line)  # pydantic's JSON parser: twice as fast as json.loads + validate
        except ValidationError as exc:
            first = exc.errors()[0]
            if first["type"] == "json_invalid":
                raise ProcedureError(f"not valid JSON ({first['msg']})", where) from None
            loc = ".".join(str(part) for part in first["loc"]) or "instance"
            raise ProcedureError(f"{loc}: {first['msg']}", where) from None
        if verify:
            try:
                inst.check_expected()
            except ProcedureError as exc:
                raise ProcedureError(str(exc), where) from None
        yield inst


def load_instances(path: str | Path, *, verify: bool = False, max_line_chars: int = DEFAULT_MAX_LINE_CHARS) -> list[Instance]:
    """Read all instances of a JSONL file into a list (see :func:`iter_instances`).

    Raises:
        ProcedureError: a bad line (file and line named), or two instances with the same id.
    """
    out: list[Instance] = []
    seen: set[str] = set()
    for inst in iter_instances(path, verify=verify, max_line_chars=max_line_chars):
        if inst.id in seen:
            raise ProcedureError(f"duplicate instance id {inst.id!r}", str(path))
        seen.add(inst.id)
        out.append(inst)
    return out


def write_instances(instances: Iterable[Instance], path: str | Path) -> int:
    """Write instances as JSONL (one compact JSON object per line, ``\\n`` endings); returns the count.

    The bytes depend only on the instances, so the same grid gives a byte-identical file.
    """
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        for inst in instances:
            fh.write(inst.model_dump_json())
            fh.write("\n")
            count += 1
    return count


def instance_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one line of an instances file."""
    schema = Instance.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "stepguard benchmark instance (one JSONL line)"
    return schema


def write_instance_schema(path: str | Path = "docs/schemas/instance.schema.json") -> None:
    """Regenerate the schema file from :func:`instance_json_schema` (tests check it is up to date)."""
    Path(path).write_text(json.dumps(instance_json_schema(), indent=2) + "\n", encoding="utf-8")
