"""benchmarks/curve_table.py: the raw decline curve's table is computed from the committed run store,
and docs/fidelity.md shows exactly that table (so the page cannot drift from the data behind it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._scripts import load_script

ROOT = Path(__file__).parent.parent
STORE = ROOT / "benchmarks" / "stores" / "curve" / "raw"
PAGE = ROOT / "docs" / "fidelity.md"
COMMAND = "python benchmarks/curve_table.py benchmarks/stores/curve/raw --planned 6"


def _script() -> Any:
    return load_script("benchmarks/curve_table.py")


def test_the_page_shows_the_committed_stores_table() -> None:
    table = _script().curve_table(STORE, [5, 14, 23, 32, 50, 95], planned=6)
    page = PAGE.read_text(encoding="utf-8")
    assert table in page, f"docs/fidelity.md's raw decline curve table differs from `{COMMAND}`"
    assert COMMAND in page


def _row(n: int, lb: int, i: int, correct: bool, tokens: int = 100) -> dict[str, Any]:
    return {"id": f"n{n}-l{lb}-s0-i{i}", "n_steps": n, "lookback": lb, "mode": "raw", "correct": correct,
            "usage": {"output_tokens": tokens}}


def test_cells_intervals_and_what_is_still_to_run(tmp_path: Path) -> None:
    rows = [_row(5, 2, 0, True, 100), _row(5, 2, 1, False, 200), _row(5, 7, 0, True, 300)]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = _script().curve_table(tmp_path, [5, 95], planned=2)
    assert "| 5 steps | 1/2 50% [9-91] | 1/1 100% [21-100] (1 still to run) | **2/3 67% [21-94]** | 200 |" in table
    assert "| 95 steps | - | - | not yet run | |" in table


def test_a_guarded_row_is_refused_by_file_and_line(tmp_path: Path) -> None:
    rows = [_row(5, 2, 0, True), {**_row(5, 2, 1, True), "mode": "guarded"}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"results.jsonl:2: mode 'guarded', not a raw row"):
        _script().curve_table(tmp_path, [5])
