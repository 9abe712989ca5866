"""Procedure files as untrusted input: each hostile case is a ProcedureError naming the file, the
step and the reason, in bounded time and memory; no case executes anything."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from stepguard.errors import ProcedureError
from stepguard.procedure import LoadLimits, load_procedure, parse_procedure
from benchmarks.hostile_cases import BINARY, PROCEDURES, _steps_json, _steps_yaml

_BIG = {"ten_megabytes", "hundred_thousand_steps_yaml", "hundred_thousand_steps_json", "json_deep_nesting", "json_deep_objects"}


def _write(tmp_path: Path, name: str, suffix: str, text: str) -> Path:
    """Write a case to ``tmp_path/name.suffix`` and return the path."""
    path = tmp_path / f"{name}.{suffix}"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", [n for n in PROCEDURES if n not in _BIG])
def test_hostile_procedure_is_refused_with_file_and_reason(tmp_path: Path, name: str) -> None:
    suffix, text, fragment = PROCEDURES[name]
    path = _write(tmp_path, name, suffix, text)
    with pytest.raises(ProcedureError) as info:  # its time and memory: benchmarks/bench_hostile.py
        load_procedure(path)
    message = str(info.value)
    assert str(path) in message, message
    assert fragment in message, message
    assert info.value.__cause__ is None or isinstance(info.value.__cause__, ProcedureError)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_BIG))
def test_large_hostile_procedure_is_refused_in_bounded_time_and_memory(tmp_path: Path, name: str) -> None:
    suffix, text, fragment = PROCEDURES[name]
    path = _write(tmp_path, name, suffix, text)
    del text
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ProcedureError, match=fragment) as info:
            load_procedure(path)
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(info.value)
    assert elapsed < 10.0  # tracemalloc slows this several-fold; benchmarks/bench_hostile.py measures without it
    assert peak < 100 * 2**20, peak


@pytest.mark.parametrize("name", sorted(BINARY))
def test_non_utf8_file_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(BINARY[name])
    with pytest.raises(ProcedureError, match="not UTF-8 text") as info:
        load_procedure(path)
    assert str(path) in str(info.value)


def test_missing_file_and_directory_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProcedureError, match="cannot read"):
        load_procedure(tmp_path / "nope.yaml")
    with pytest.raises(ProcedureError, match="cannot read"):
        load_procedure(tmp_path)


@pytest.mark.slow
def test_step_cap_is_documented_and_adjustable() -> None:
    """10,000 steps load (under a second on 2 cores); 10,001 are refused by LoadLimits.max_steps
    before validation; a larger cap lets a caller take more."""
    assert LoadLimits().max_steps == 10_000
    assert len(parse_procedure(_steps_json(10_000), "p.json", "json").steps) == 10_000
    with pytest.raises(ProcedureError, match="more than 10000 steps"):
        parse_procedure(_steps_yaml(10_001), "p.yaml")
    assert len(parse_procedure(_steps_yaml(12_000), "p.yaml", limits=LoadLimits(max_steps=20_000)).steps) == 12_000


def test_nested_steps_lists_do_not_count_as_steps() -> None:
    """Only the top-level ``steps`` list is capped; a nested key named ``steps`` is a validation error."""
    text = "steps:\n- var: S1\n  choices: [" + ", ".join(f"c{i}" for i in range(50)) + "]\n  type: one_of\n"
    assert len(parse_procedure(text, "p.yaml", limits=LoadLimits(max_steps=5)).steps) == 1


def test_json_strings_with_brackets_do_not_count_as_nesting() -> None:
    text = '{"steps": [{"var": "S1", "instruction": "' + "[{" * 100 + '\\" ]]"}]}'
    assert parse_procedure(text, "p.json", "json").steps[0].instruction.startswith("[{")


def test_valid_expressions_with_constant_parts_still_load() -> None:
    proc = parse_procedure("inputs: [x]\nsteps:\n- {var: S1, expr: 'x * 2**10 + round(1/3, 2)'}\n"
                           "- {var: S2, type: boolean, expr: 'S1 in (1, 2)'}\n", "p.yaml")
    assert proc.expected_values({"x": 1})["S1"] == 1024 + parse_procedure("steps:\n- {var: A, expr: '33/100'}\n").expected_values({})["A"]
