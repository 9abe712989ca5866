"""Steps the model invents past the procedure's end are noted (``extra_steps``), never silently dropped.

A last chunk reply that went on with ``S96 = ...`` after ``S95`` of a 95-step procedure was read up
to ``S95`` and the rest went unmentioned in guarded mode (raw mode's taxonomy labels it
``extra_steps``). The guard now records one ``extra_steps`` event with action ``note`` naming the
invented steps; the verified values stand (nothing rests on those lines). Neighbours: several
invented steps, one after a middle chunk, streamed mode, an input restated (not an invented step), a later step of
the procedure written early (asked in its own chunk, as before), an invented step inside the chunk
(still refused), the ``raise`` policy, and the note in the result's JSON and the CLI's table.
"""

from __future__ import annotations

from stepguard import Guard, GuardConfig
from stepguard.guard import GuardResult
from stepguard.procedure import parse_procedure
from tests._fakes import FixedReplies


def _chain(n: int) -> str:
    """A procedure of ``n`` steps: ``S1 = x + 1``, ``S_k = S_{k-1} + 1``."""
    lines = ["inputs: {x: {type: integer}}", "steps:", "  - {var: S1, expr: x + 1}"]
    lines += [f"  - {{var: S{k}, expr: S{k - 1} + 1}}" for k in range(2, n + 1)]
    return "\n".join(lines) + "\n"


def _lines(first: int, last: int, x: int = 3) -> list[str]:
    """Right step lines ``S{first}..S{last}`` of :func:`_chain` on ``x``."""
    return [f"S{k} = {'x' if k == 1 else f'S{k - 1}'} + 1 = {x + k}" for k in range(first, last + 1)]


def _run(n: int, replies: list[str], chunk_size: int, **cfg: object) -> GuardResult:
    return Guard(FixedReplies(replies), GuardConfig(chunk_size=chunk_size, **cfg)).run(parse_procedure(_chain(n)), {"x": 3})  # type: ignore[arg-type]  # GuardConfig's fields, as keywords


def _extra(result: GuardResult) -> list[tuple[str | None, str, str]]:
    return [(d.step, d.action, d.detail) for d in result.deviations if d.kind == "extra_steps"]


def test_an_invented_step_past_a_95_step_procedures_end_is_noted() -> None:
    reply = "\n".join([*_lines(1, 95), "S96 = S95 + 1 = 99", "Final answer: 98"])
    result = _run(95, [reply], 95)
    assert result.status == "verified" and result.values["S95"] == 98 and result.chunks == 1
    [(step, action, detail)] = _extra(result)
    assert step == "S96" and action == "note"
    assert "S96 is not a step of this procedure" in detail and "past the procedure's last step" in detail
    assert result.deviations[0].got == "S96 = S95 + 1 = 99"


def test_several_invented_steps_are_one_note_naming_each() -> None:
    reply = "\n".join([*_lines(1, 3), "S4 = S3 + 1 = 7", "S5 = S4 + 1 = 8", "S4 = 7"])
    [(step, action, detail)] = _extra(_run(3, [reply], 3))
    assert step == "S4" and action == "note" and detail.startswith("S4, S5 are not steps of this procedure")


def test_an_invented_step_after_a_middle_chunk_is_noted_and_the_run_goes_on() -> None:
    result = _run(4, ["\n".join([*_lines(1, 2), "S9 = 1"]), "\n".join(_lines(3, 4))], 2)
    assert result.status == "verified" and result.values["S4"] == 7
    [(step, action, detail)] = _extra(result)
    assert step == "S9" and action == "note" and "after this chunk's steps" in detail


def test_an_input_restated_or_a_later_step_written_early_is_not_an_invented_step() -> None:
    result = _run(2, ["\n".join([*_lines(1, 1), "x = 3", "S2 = S1 + 1 = 5"]), "\n".join(_lines(2, 2))], 1)
    assert result.status == "verified" and result.deviations == []


def test_an_invented_step_inside_the_chunk_is_still_refused() -> None:
    result = _run(2, ["\n".join([_lines(1, 1)[0], "S9 = 1", _lines(2, 2)[0]]), "\n".join(_lines(1, 2))], 2)
    assert result.status == "verified"
    [(step, action, _)] = _extra(result)
    assert step == "S9" and action == "reprompt"


def test_streamed_mode_notes_them_too() -> None:
    """The streamed window's reply is checked whole as a chunk's is, so the note is the same."""
    result = _run(3, ["\n".join([*_lines(1, 3), "S4 = S3 + 1 = 7"])], 3, streamed=True, window=3)
    assert result.status == "verified" and result.usage.model_calls == 1
    assert [(step, action) for step, action, _ in _extra(result)] == [("S4", "note")]


def test_the_raise_policy_does_not_stop_at_a_note() -> None:
    result = _run(2, ["\n".join([*_lines(1, 2), "S3 = S2 + 1 = 6"])], 2, policy="raise")
    assert result.status == "verified" and [a for _, a, _ in _extra(result)] == ["note"]


def test_the_note_is_in_the_results_json_and_the_cli_table(capsys: object) -> None:
    from stepguard.cli.run import print_result

    result = _run(2, ["\n".join([*_lines(1, 2), "S3 = S2 + 1 = 6"])], 2)
    again = GuardResult.model_validate_json(result.model_dump_json())
    assert _extra(again) == _extra(result)
    print_result(result)
    out = capsys.readouterr().out  # type: ignore[attr-defined]  # pytest's CaptureFixture, typed object to keep the import light
    assert "deviation at S3: extra_steps -> note" in out
