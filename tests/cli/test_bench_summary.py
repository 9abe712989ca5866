"""``bench run``'s summary line and help say what a run did and what an option does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.cli._app import app
from tests._paths import DATA

SHIPPING = DATA / "shipping_user"


def _bench(*args: str) -> str:
    out = CliRunner().invoke(app, ["bench", "run", "--instances", str(SHIPPING), "--no-progress", *args])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.slow
def test_a_resumed_finished_store_says_how_many_of_its_done_rows_are_correct(tmp_path: Path) -> None:
    first = _bench("--mode", "guarded", "--model", "sim:perfect", "--out", str(tmp_path / "g"))
    assert "3 new rows (3 correct), 0 already done (0 correct)" in first
    again = _bench("--mode", "guarded", "--model", "sim:perfect", "--out", str(tmp_path / "g"))
    assert "0 new rows (0 correct), 3 already done (3 correct)" in again
    # the simulator cannot read the shipping prompt's prose: every raw row is done and wrong
    _bench("--mode", "raw", "--model", "sim:perfect", "--out", str(tmp_path / "r"))
    assert "3 already done (0 correct)" in _bench("--mode", "raw", "--model", "sim:perfect", "--out", str(tmp_path / "r"))
    assert "2 already done (2 correct)" in _bench("--mode", "guarded", "--model", "sim:perfect", "--out", str(tmp_path / "g"),
                                                  "--limit", "2")


def test_on_exhausted_help_says_a_spent_token_or_wall_budget_leaves_no_answer() -> None:
    out = CliRunner().invoke(app, ["bench", "run", "--help"], terminal_width=400)
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", out.output).split())
    assert "every row has an answer" not in text
    assert "a spent --max-total-tokens or --max-wall-s budget stops the run where it is, and its row has no answer" in text


def test_a_spent_token_budget_under_flag_leaves_a_row_with_no_answer(tmp_path: Path) -> None:
    import json

    _bench("--mode", "guarded", "--model", "sim:perfect", "--out", str(tmp_path / "t"), "--max-total-tokens", "1")
    rows = [json.loads(line) for line in (tmp_path / "t" / "results.jsonl").read_text().splitlines()]
    assert {(r["status"], r["first_answer"], r["correct"]) for r in rows} == {("failed", None, False)}
