"""benchmarks/curve_table.py: the raw decline curve's table is computed from the committed run store,
and docs/fidelity.md shows exactly that table, and the 95-step paired table of the same store against
today's guarded store (so the page cannot drift from the data behind it); the lab notes show the pairs
of the earlier guarded store as that store gives them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests._paths import ROOT
from tests._scripts import load_script

STORE = ROOT / "benchmarks" / "stores" / "curve" / "raw"
PAGE = ROOT / "docs" / "fidelity.md"
LAB = ROOT / "docs" / "lab" / "fidelity-history.md"
COMMAND = "python benchmarks/curve_table.py benchmarks/stores/curve/raw --planned 6"
PAIRS = [  # (page, guarded store): today's default ladder on the page, the ladder before the digit rungs in the lab notes
    (PAGE, "digits"),
    (LAB, "guarded"),
]


def _script() -> Any:
    return load_script("benchmarks/curve_table.py")


def _writing(store: Path = STORE) -> bool:
    """True while a measurement holds the store's lock (its rows are then ahead of the page)."""
    from stepguard.bench._storefiles import lock, unlock
    from stepguard.errors import RunStoreError

    if not (store / ".lock").exists():
        return False
    try:
        unlock(lock(store))
    except RunStoreError:
        return True
    return False


def test_the_page_shows_the_committed_stores_table() -> None:
    if _writing():
        pytest.skip("a measurement is appending to the store: commit its rows with the page's table")
    table = _script().curve_table(STORE, [5, 14, 23, 32, 50, 95], planned=6)
    page = PAGE.read_text(encoding="utf-8")
    assert table in page, f"docs/fidelity.md's raw decline curve table differs from `{COMMAND}`"
    assert COMMAND in page


@pytest.mark.parametrize(("page", "guarded"), PAIRS)
def test_the_page_shows_the_committed_stores_paired_table(page: Path, guarded: str) -> None:
    store = STORE.parent / guarded
    if _writing(STORE) or _writing(store):
        pytest.skip("a measurement is appending to the store: commit its rows with the page's table")
    from stepguard.bench.compare import compare_runs
    from stepguard.bench.report import paired_table

    command = f"stepguard bench compare benchmarks/stores/curve/raw benchmarks/stores/curve/{guarded} --metric verified --markdown"
    table = paired_table(compare_runs(STORE, store, "verified"), "raw", "guarded").markdown()
    rows = table.split("\n\n", 1)[1]  # the header and rows, without the title naming the folders
    text = page.read_text(encoding="utf-8")
    assert rows in text, f"{page.relative_to(ROOT)}'s 95-step paired table differs from `{command}`"
    assert command in text


def _row(n: int, lb: int, i: int, correct: bool, tokens: int = 100) -> dict[str, Any]:
    return {"id": f"n{n}-l{lb}-s0-i{i}", "n_steps": n, "lookback": lb, "mode": "raw", "correct": correct,
            "usage": {"output_tokens": tokens}}


def _store(tmp_path: Path, rows: list[dict[str, Any]], mode: str = "raw", simulated: bool = False) -> Path:
    (tmp_path / "run.json").write_text(json.dumps({"format": 1, "mode": mode, "simulated": simulated}))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_cells_intervals_and_what_is_still_to_run(tmp_path: Path) -> None:
    store = _store(tmp_path, [_row(5, 2, 0, True, 100), _row(5, 2, 1, False, 200), _row(5, 7, 0, True, 300)])
    with (store / "results.jsonl").open("a") as fh:
        fh.write('{"id": "n5-l7-s0-i1", "n_st')  # a live run's torn last line: skipped, as the store does
    table = _script().curve_table(store, [5, 95], planned=2)
    assert "| 5 steps | 1/2 50% [9-91] | 1/1 100% [21-100] (1 still to run) | **2/3 67% [21-94]** | 200 |" in table
    assert "| 95 steps | - | - | not yet run | |" in table and "SIMULATED" not in table


def test_every_look_back_in_the_store_gets_a_column_and_a_simulation_says_so(tmp_path: Path) -> None:
    store = _store(tmp_path, [_row(5, 2, 0, True), _row(5, 3, 0, False)], simulated=True)
    table = _script().curve_table(store, [5])
    assert table.startswith("SIMULATED") and "| look-back 2 [95% Wilson] | look-back 3 |" in table
    assert "| 5 steps | 1/1 100% [21-100] | 0/1 0% [0-79] | **1/2 50% [9-91]** |" in table


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: p / "missing", "is not a run directory"),
    (lambda p: _store(p, [_row(5, 2, 0, True)], mode="guarded"), "a guarded run; the curve is read from a raw run store"),
    (lambda p: _store(p, [_row(5, 2, 0, True), {"id": "x", "mode": "raw"}]), "results.jsonl:2: not a raw benchmark row"),
])
def test_a_store_that_cannot_be_read_is_an_error_naming_it_not_a_traceback(
        tmp_path: Path, make: Any, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main([str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_bad_steps_are_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        _script().main([str(STORE), "--steps", "5,abc"])
    assert exc.value.code == 2
