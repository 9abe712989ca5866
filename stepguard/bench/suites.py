"""Procedure suites: a user's procedure files with input sets, as benchmark cases.

A **suite** is one procedure file (``payroll.yaml``) or a folder of them
(``benchmarks/production/``). Beside each procedure file ``NAME.yaml`` (or ``.yml``, ``.json``)
lies its **input sets** file ``NAME.inputs.yaml`` (or ``.inputs.yml``, ``.inputs.json``): a list
of input sets, each a mapping with ``inputs`` (the procedure's inputs) and an optional ``id``::

    - {id: small-order, inputs: {quantity: 3, unit_price: "19.99", vat_rate: "0.20"}}
    - inputs: {quantity: 25, unit_price: "22.05", vat_rate: "0.21"}     # id "set-2"

Each (procedure, input set) becomes one :class:`ProcedureCase` with the stable id
``"<file stem>/<set id>"`` (``invoice/small-order``; an input set without an id is ``set-<k>``,
its 1-based position). The file is read by :func:`stepguard.procedure.load_inputs_file`, so a
value arrives as written: ``19.99`` and ``"19.99"`` are both exactly 19.99, ``010`` and ``0x1F`` are
refused (YAML 1.1 reads ``010`` as 8), ``1:30`` and ``2024-03-05`` are text, and a key given twice
is refused with its line. The expected value of every step comes from
:meth:`~stepguard.procedure.Procedure.expected_values` (exact, rounded per ``scale`` and
``rounding``), so every step needs an ``expr`` or an expected-value ``check``: a step with only a
predicate has no value to score against, and the suite refuses it.

A procedure may also have a **prompt file** beside it, ``NAME.prompt.yaml`` (or ``.prompt.yml``,
``.prompt.json``): the messages its user sends today and how their code reads the answer
(:mod:`stepguard.bench.user_prompt`). Raw mode then sends those messages instead of stepguard's
own prompt; guarded mode does not read it.

The run store's identity of a suite is :func:`suite_sha256`: the sha256 over the names and bytes
of every procedure file and input-sets file it reads. Prompt files are not in it (the instances
are the same with or without one): a raw run records them apart (:func:`raw_prompt_digests`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepguard.errors import ProcedureError
from stepguard.evaluator import Number, format_number
from stepguard.procedure import LoadLimits, Procedure, Step, load_inputs_file, load_procedure, round_to_scale

if TYPE_CHECKING:
    from stepguard.bench.user_prompt import UserPrompt

__all__ = ["INPUTS_SUFFIXES", "PROCEDURE_SUFFIXES", "ProcedureCase", "inputs_file", "is_suite", "load_suite", "prompt_file",
           "raw_prompt_digests", "suite_files", "suite_sha256"]

PROCEDURE_SUFFIXES: tuple[str, ...] = (".yaml", ".yml", ".json")
"""File endings of procedure files (instances files, ``.jsonl``, are not suites)."""

INPUTS_SUFFIXES: tuple[str, ...] = (".inputs.yaml", ".inputs.yml", ".inputs.json")
"""File endings of input-sets files beside ``NAME.yaml``; a procedure may have only one."""

MAX_INPUT_SETS = 10_000
"""Most input sets read from one file."""

_SET_KEYS = frozenset({"id", "inputs"})


@dataclass(frozen=True)
class ProcedureCase:
    """One (procedure, input set) of a suite: what the benchmark harness runs, raw and guarded.

    It has the attributes the harness reads from a generated
    :class:`~stepguard.bench.instances.Instance` (``id``, ``n_steps``, ``lookback``, ``inputs``,
    ``expected``, ``answer``, :meth:`to_procedure`), so raw and guarded mode run it unchanged.
    """

    id: str
    """Stable case id, ``"<file stem>/<set id>"`` (``"payroll/exactly-40-hours"``)."""
    procedure: Procedure
    """The procedure, as loaded from its file."""
    inputs: dict[str, Number | str]
    """The input set, bound to exact values (``Fraction(1, 5)`` for ``"0.20"``)."""
    expected: dict[str, Any]
    """Expected value of every step, typed as declared: ``Decimal('1302.45')`` at the step's
    ``scale`` for a decimal step, ``int`` for an integer, else the exact value."""
    source: str = ""
    """The procedure file the case came from (for messages)."""
    exact_expected: dict[str, Number | str] = field(default_factory=dict, repr=False)
    """The same values exact, as the evaluator gives them (what raw-mode scoring compares with)."""

    lookback: None = None
    """Look-back depth: ``None`` (a user procedure has none; reports group it as look-back 0)."""
    raw_prompt: UserPrompt | None = field(default=None, repr=False, compare=False)
    """The procedure's prompt file (``NAME.prompt.yaml``), which raw mode sends instead of stepguard's prompt; ``None``: none."""
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The input set as its file writes it (``"25.5"``, ``Decimal('25.50')``): what a prompt file's placeholders show."""

    @property
    def procedure_name(self) -> str:
        """The procedure file's stem, the part of :attr:`id` before the first ``/`` (``"payroll"``; a
        file name holds no ``/``, an input set's id may: ``payroll/eu/a`` is set ``eu/a`` of ``payroll``)."""
        return self.id.split("/", 1)[0]

    @property
    def n_steps(self) -> int:
        """Number of steps."""
        return len(self.procedure.steps)

    @property
    def answer(self) -> Any:
        """Expected value of the answer step (:attr:`Procedure.answer_var`), typed like :attr:`expected`."""
        return self.expected[self.procedure.answer_var]

    def to_procedure(self) -> Procedure:
        """The case's procedure (what the guard and the raw prompt run)."""
        return self.procedure

    def scoring_target(self) -> tuple[Procedure, dict[str, Number | str]]:
        """``(procedure, inputs and exact expected values)``: what
        :func:`stepguard.verify.score_generation` scores a raw-mode generation against."""
        return self.procedure, {**self.inputs, **self.exact_expected}

    def model_dump_json(self) -> str:
        """Canonical JSON of the case (id, procedure, inputs): hashed for a run's identity when
        cases are passed as a list rather than a path."""
        data = {"id": self.id, "procedure": self.procedure.model_dump(mode="json", exclude_unset=True),
                "inputs": {k: _json(v) for k, v in self.inputs.items()}}
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _json(value: Number | str) -> Any:
    return value if isinstance(value, (str, bool, int)) else format_number(value)


def _typed(value: Number | str, step: Step) -> Any:
    """An exact expected value as a caller reads it: a Decimal at the step's scale, an int, or as is."""
    if isinstance(value, (str, bool)) or type(value) is int and step.scale is None:
        return value
    frac = Fraction(value)
    if step.scale is not None:  # in integers, then written out: a Decimal context (28 digits) would round it again
        units = Fraction(round_to_scale(frac, step.scale, step.rounding)) * 10**step.scale
        return Decimal(f"{units.numerator}E-{step.scale}")
    if frac.denominator == 1:
        return frac.numerator
    text = format_number(frac)
    return frac if "/" in text else Decimal(text)


def is_suite(path: str | Path) -> bool:
    """Is ``path`` a suite (a folder, or a ``.yaml``/``.yml``/``.json`` procedure file) rather than an instances JSONL file?"""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in PROCEDURE_SUFFIXES


def _is_inputs_file(p: Path) -> bool:
    return p.name.lower().endswith(INPUTS_SUFFIXES)


def _is_prompt_file(p: Path) -> bool:
    from stepguard.bench.user_prompt import PROMPT_SUFFIXES

    return p.name.lower().endswith(PROMPT_SUFFIXES)


def _stem(p: Path, marker: str) -> str:
    return p.name[: p.name.lower().rindex(marker)]


def prompt_file(procedure_file: str | Path) -> Path | None:
    """The prompt file beside ``procedure_file`` (``shipping.yaml`` -> ``shipping.prompt.yaml``), or ``None``.

    Raises:
        ProcedureError: more than one is there, naming each.
    """
    from stepguard.bench.user_prompt import PROMPT_SUFFIXES

    p = Path(procedure_file)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    found = [c for c in (p.with_name(stem + suffix) for suffix in PROMPT_SUFFIXES) if c.is_file()]
    if len(found) > 1:
        raise ProcedureError(f"{len(found)} prompt files for one procedure: {', '.join(f.name for f in found)}; keep one", str(p))
    return found[0] if found else None


def inputs_file(procedure_file: str | Path) -> Path | None:
    """The input-sets file beside ``procedure_file`` (``payroll.yaml`` -> ``payroll.inputs.yaml``), or ``None``.

    Raises:
        ProcedureError: more than one is there (``payroll.inputs.yaml`` and ``payroll.inputs.json``),
            naming each.
    """
    p = Path(procedure_file)
    stem = p.name[: -len(p.suffix)] if p.suffix else p.name
    found = [c for c in (p.with_name(stem + suffix) for suffix in INPUTS_SUFFIXES) if c.is_file()]
    if len(found) > 1:  # reading one would ignore the other without a word
        raise ProcedureError(f"{len(found)} input-sets files for one procedure: {', '.join(f.name for f in found)}; keep one",
                             str(p))
    return found[0] if found else None


def suite_files(path: str | Path) -> list[tuple[Path, Path]]:
    """``(procedure file, input-sets file)`` pairs of a suite, sorted by file name.

    Args:
        path: a procedure file, or a folder of them (not searched recursively).

    Raises:
        ProcedureError: the path does not exist, a folder holds no procedure file, an input-sets
            file has no procedure beside it, or a procedure file has no input sets (the message
            names the file and the input-sets file to add).
    """
    p = Path(path)
    if p.is_dir():
        entries = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in PROCEDURE_SUFFIXES)
        procedures = [f for f in entries if not _is_inputs_file(f) and not _is_prompt_file(f)]
        if not procedures:
            raise ProcedureError("no procedure files (*.yaml, *.yml, *.json) in this folder", str(p))
        stems = {f.name[: -len(f.suffix)] for f in procedures}
        for f in entries:
            if _is_inputs_file(f) and _stem(f, ".inputs.") not in stems:
                raise ProcedureError("an input-sets file with no procedure file of the same name beside it", str(f))
            if _is_prompt_file(f) and _stem(f, ".prompt.") not in stems:
                raise ProcedureError("a prompt file with no procedure file of the same name beside it", str(f))
    elif p.is_file():
        if _is_inputs_file(p):
            raise ProcedureError("this is an input-sets file: pass its procedure file, or the folder", str(p))
        if _is_prompt_file(p):
            raise ProcedureError("this is a prompt file: pass its procedure file, or the folder", str(p))
        procedures = [p]
    else:
        raise ProcedureError("no such file or folder", str(p))
    out = []
    for proc in procedures:
        sets = inputs_file(proc)
        if sets is None:
            stem = proc.name[: -len(proc.suffix)]
            raise ProcedureError(
                f"no input sets: add {stem}.inputs.yaml beside it, a list of input sets such as "
                f"'- {{id: first, inputs: {{...}}}}' (see docs/procedures.md, 'Input sets')", str(proc))
        out.append((proc, sets))
    return out


def suite_sha256(path: str | Path) -> str:
    """sha256 (hex) over the names and bytes of every file of the suite, in :func:`suite_files` order.

    Raises:
        ProcedureError: as :func:`suite_files`.
    """
    h = hashlib.sha256()
    for pair in suite_files(path):
        for f in pair:
            h.update(f.name.encode("utf-8") + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def raw_prompt_digests(cases: list[ProcedureCase] | tuple[ProcedureCase, ...]) -> dict[str, str] | None:
    """``{prompt file name: sha256}`` of the prompt files the cases carry (what run.json records as
    ``raw_prompt`` in raw mode), or ``None`` when no case has one (stepguard's own prompt throughout)."""
    out = {c.raw_prompt.path.name: c.raw_prompt.sha256 for c in cases if c.raw_prompt is not None}
    return dict(sorted(out.items())) or None


def _read_sets(path: Path, limits: LoadLimits) -> list[Any]:
    """The parsed list of an input-sets file, read by the strict inputs loader
    (:func:`stepguard.procedure.load_inputs_file`: YAML 1.2 core scalars, exact numbers, no
    duplicate keys, no aliases, size-capped)."""
    data = load_inputs_file(path, limits)
    where = str(path)
    if not isinstance(data, list) or not data:
        got = "an empty list" if data == [] else "nothing" if data is None else type(data).__name__
        raise ProcedureError(f"expected a non-empty list of input sets ('- {{id: ..., inputs: {{...}}}}'), got {got}", where)
    if len(data) > MAX_INPUT_SETS:
        raise ProcedureError(f"more than {MAX_INPUT_SETS} input sets", where)
    return data


def _cases_of(proc_file: Path, sets_file: Path, limits: LoadLimits) -> list[ProcedureCase]:
    procedure = load_procedure(proc_file, limits)
    stem = proc_file.name[: -len(proc_file.suffix)]
    prompt = None
    if (pfile := prompt_file(proc_file)) is not None:
        from stepguard.bench.user_prompt import load_user_prompt

        prompt = load_user_prompt(pfile, procedure, limits)
    out: list[ProcedureCase] = []
    seen: set[str] = set()
    for k, item in enumerate(_read_sets(sets_file, limits)):
        where = f"{sets_file}: [{k}]"
        if not isinstance(item, dict) or "inputs" not in item or not isinstance(item["inputs"], dict):
            raise ProcedureError("an input set is a mapping with 'inputs' (a mapping of input name to value) and an optional 'id'", where)
        extra = sorted(set(item) - _SET_KEYS)
        if extra:
            raise ProcedureError(f"unknown keys {extra} (allowed: id, inputs)", where)
        raw_id = item.get("id", f"set-{k + 1}")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):  # 1.50 or true would become "1.50", "True"
            raise ProcedureError(f"an input set's id is text or a whole number, got {raw_id!r}", where)
        set_id = str(raw_id)
        if not set_id or set_id in seen:
            raise ProcedureError(f"input set id {set_id!r} is empty or used twice", where)
        seen.add(set_id)
        try:
            exact = procedure.expected_values(item["inputs"])
        except ProcedureError as exc:
            raise ProcedureError(str(exc), where) from None
        missing = [s.var for s in procedure.steps if s.var not in exact]
        if missing:
            raise ProcedureError(
                f"steps {missing} have no expected value (only a predicate, or reading one that has none): "
                "the benchmark scores every step against one, so give each an expr or an expected-value check", str(proc_file))
        typed = {s.var: _typed(exact[s.var], s) for s in procedure.steps}
        out.append(ProcedureCase(f"{stem}/{set_id}", procedure, procedure.bind_inputs(item["inputs"]), typed, str(proc_file), exact,
                                 raw_prompt=prompt, written=dict(item["inputs"])))
    return out


def load_suite(path: str | Path, *, limits: LoadLimits = LoadLimits()) -> list[ProcedureCase]:
    """Read a suite into cases: every procedure file's input sets, in file then list order.

    Args:
        path: a procedure file with its ``NAME.inputs.yaml`` beside it, or a folder of such pairs.
        limits: caps on each file (size, nesting, steps), as for procedure files.

    Returns:
        One :class:`ProcedureCase` per (procedure, input set); ids are unique.

    Raises:
        ProcedureError: a file is missing, unreadable or invalid, an input set does not fit its
            procedure, or a step has no expected value; the message names the file and the input set.
    """
    cases: list[ProcedureCase] = []
    for proc_file, sets_file in suite_files(path):
        cases.extend(_cases_of(proc_file, sets_file, limits))
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ProcedureError(f"case id {dup!r} appears twice (two procedure files with one stem?)", str(path))
    return cases
