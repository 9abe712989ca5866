"""Instance files: the model, JSONL round trips, the schema file, bad lines; and the `bench` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.bench.generate import generate_grid, generate_instance
from stepguard.bench.instances import (
    instance_json_schema,
    iter_instances,
    load_instances,
    read_jsonl,
    write_instances,
)
from stepguard.cli.bench import app
from stepguard.errors import ProcedureError, RunStoreError
from tests._paths import ROOT

SCHEMA_FILE = ROOT / "docs" / "schemas" / "instance.schema.json"
USER_LINE = {
    "id": "invoice-1", "n_steps": 2, "inputs": {"price": 12, "qty": 3},
    "steps": [{"var": "subtotal", "expr": "price * qty"}, {"var": "total", "expr": "subtotal + 4"}],
    "expected": {"subtotal": 36, "total": 40}, "answer": 40,
}


def test_schema_file_is_up_to_date() -> None:
    on_disk = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert on_disk == instance_json_schema(), "regenerate: python -c 'from stepguard.bench.instances import write_instance_schema; write_instance_schema()'"
    assert on_disk["$schema"].endswith("2020-12/schema")
    assert set(on_disk["required"]) == {"id", "n_steps", "inputs", "steps", "expected", "answer"}


def test_write_and_load_round_trip(tmp_path: Path) -> None:
    grid = list(generate_grid((5, 23), (1, 7), 5, seed=2))
    path = tmp_path / "inst.jsonl"
    assert write_instances(grid, path) == 20
    assert load_instances(path) == grid
    assert list(iter_instances(path, verify=True)) == grid
    assert path.read_bytes().count(b"\n") == 20 and b"\r" not in path.read_bytes()


def test_user_file_of_the_same_shape(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text("\n" + json.dumps(USER_LINE) + "\n\n", encoding="utf-8")
    (inst,) = load_instances(path, verify=True)
    assert inst.lookback is None and inst.seed == 0
    proc = inst.to_procedure()
    assert proc.name == "invoice-1" and proc.variables == ("subtotal", "total")
    assert proc.expected_values(inst.inputs) == inst.expected


def test_generated_instance_converts_to_a_procedure() -> None:
    inst = generate_instance(14, 3, seed=1, index=4)
    proc = inst.to_procedure()
    assert [i.name for i in proc.inputs] == ["x", "y"]
    assert proc.steps[0].expr == "x" and proc.steps[1].expr == "y" and proc.answer_var == "S14"
    assert proc.expected_values(inst.inputs) == inst.expected


def _bad(**change: object) -> str:
    return json.dumps({**USER_LINE, **change})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        (_bad(n_steps=3), "n_steps is 3"),
        (_bad(answer=41), "answer 41 differs"),
        (_bad(expected={"subtotal": 36}), "missing ['total']"),
        (_bad(inputs={"price": 1.5, "qty": 3}), "inputs.price"),
        (_bad(inputs={"price": True, "qty": 3}), "inputs.price"),
        (_bad(steps=[{"var": "1bad", "expr": "x"}, {"var": "total", "expr": "1"}]), "steps.0.var"),
        (_bad(steps=[{"var": "subtotal", "expr": "price * qty", "note": 1}, {"var": "total", "expr": "1"}]), "steps.0.note"),
        (_bad(surprise=1), "surprise"),
        ("[1, 2]", "instance"),
    ],
)
def test_bad_lines_name_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_LINE) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ProcedureError) as info:
        load_instances(path)
    assert f"{path}:2" in str(info.value) and message in str(info.value)


def test_verify_catches_wrong_expected_values(tmp_path: Path) -> None:
    path = tmp_path / "wrong.jsonl"
    path.write_text(_bad(expected={"subtotal": 35, "total": 40}) + "\n", encoding="utf-8")
    assert len(load_instances(path)) == 1  # structurally fine
    with pytest.raises(ProcedureError, match=r"wrong.jsonl:1.*subtotal"):
        load_instances(path, verify=True)


def test_long_lines_duplicates_and_unreadable_files(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(USER_LINE) + "\n" + " " * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ProcedureError, match="long.jsonl:2: line longer than 1000"):
        load_instances(path, max_line_chars=1000)
    dup = tmp_path / "dup.jsonl"
    dup.write_text(json.dumps(USER_LINE) + "\n" + json.dumps(USER_LINE) + "\n", encoding="utf-8")
    with pytest.raises(ProcedureError, match="duplicate instance id 'invoice-1'"):
        load_instances(dup)
    with pytest.raises(ProcedureError, match="cannot read"):
        load_instances(tmp_path / "absent.jsonl")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"id": "\xe9"}\n')
    with pytest.raises(RunStoreError, match="not UTF-8"):
        list(read_jsonl(latin, error=RunStoreError))


# ------------------------------------------------------------------------------------ bench CLI
runner = CliRunner()


def test_cli_generate_is_byte_identical(tmp_path: Path) -> None:
    args = ["generate", "--steps", "5,14", "--lookback", "1,7", "--per-config", "3", "--seed", "0"]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert runner.invoke(app, [*args, "--out", str(a)]).exit_code == 0
    result = runner.invoke(app, [*args, "--out", str(b)])
    assert result.exit_code == 0 and "wrote 12 instances" in result.output
    assert a.read_bytes() == b.read_bytes()
    assert load_instances(a) == list(generate_grid((5, 14), (1, 7), 3, 0))
    assert runner.invoke(app, ["generate", "--out", str(a), "--steps", "5,x"]).exit_code == 2
    assert runner.invoke(app, ["generate", "--out", str(a), "--steps", "1"]).exit_code == 2


def test_cli_score_and_summarize(tmp_path: Path) -> None:
    inst_path, gen_path, out = tmp_path / "i.jsonl", tmp_path / "g.jsonl", tmp_path / "s.jsonl"
    grid = list(generate_grid((5,), (2,), 3, 0))
    write_instances(grid, inst_path)
    right = "\n".join(f"{v} = {x}" for v, x in grid[0].expected.items()) + f"\nFinal answer: {grid[0].answer}"
    rows = [{"id": grid[0].id, "text": right}, {"id": grid[1].id, "text": "Final answer: 99999"}]
    gen_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["score", str(inst_path), str(gen_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    scores = [json.loads(line) for line in out.read_text().splitlines()]
    assert [s["labels"] for s in scores] == [["exact"], ["premature_answer", "under_executed"]]
    result = runner.invoke(app, ["summarize", str(out), "--instances", str(inst_path), "--json", str(tmp_path / "rows.json")])
    assert result.exit_code == 0, result.output
    assert "50.0 [9.5, 90.5]" in result.output and "miss" in result.output
    (row,) = json.loads((tmp_path / "rows.json").read_text())
    assert (row["n_steps"], row["lookback"], row["count"], row["missing"], row["accuracy"]["k"]) == (5, 2, 2, 1, 1)


def test_cli_score_reports_unknown_ids_and_bad_lines(tmp_path: Path) -> None:
    inst_path, gen_path, out = tmp_path / "i.jsonl", tmp_path / "g.jsonl", tmp_path / "s.jsonl"
    write_instances(generate_grid((5,), (2,), 1, 0), inst_path)
    gen_path.write_text(json.dumps({"id": "n5-l2-s0-i0", "text": ""}) + "\n" + json.dumps({"id": "ghost", "text": ""}) + "\n")
    result = runner.invoke(app, ["score", str(inst_path), str(gen_path), "--out", str(out)])
    assert result.exit_code == 7 and "1 generations name ids not in" in result.output and "'ghost' (line 2)" in result.output
    assert len(out.read_text().splitlines()) == 1  # the known one is still scored
    gen_path.write_text('{"id": 3}\n')
    result = runner.invoke(app, ["score", str(inst_path), str(gen_path), "--out", str(out)])
    assert result.exit_code == 7 and "g.jsonl:1" in result.output
    result = runner.invoke(app, ["summarize", str(gen_path)])
    assert result.exit_code == 7 and "not a score" in result.output
