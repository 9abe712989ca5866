"""The default follows the model (issue 43): every run's settings follow it, and a mode's setting given alone asks
that mode, the same in every way in (GuardOptions, GuardConfig.for_procedure, the CLI's flags, the client)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import GuardConfig
from stepguard.cli import app
from stepguard.guard import GuardOptions
from stepguard.procedure import load_procedure
from tests._paths import ROOT

INVOICE = load_procedure(ROOT / "examples" / "invoice.yaml")
ARGV = ["run", str(ROOT / "examples" / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect", "--json"]

MODES = [  # (options given, (follow, streamed, chunk_size))
    ({}, (True, False, 1)),
    ({"chunk_size": 2}, (False, False, 2)),
    ({"streamed": False}, (False, False, 1)),
    ({"streamed": True}, (False, True, 1)),
    ({"follow": True, "chunk_size": 2}, (True, False, 2)),
    ({"follow": False}, (False, False, 1)),
    ({"follow": True, "streamed": False}, (True, False, 1)),
]


@pytest.mark.parametrize(("given", "want"), MODES, ids=lambda v: str(v))
def test_a_modes_setting_given_alone_asks_that_mode_in_every_way_in(given: dict[str, object], want: tuple[object, ...]) -> None:
    for config in (GuardOptions.parse(given).resolve(INVOICE), GuardConfig.for_procedure(INVOICE, **given)):
        assert (config.follow, config.streamed, config.chunk_size) == want
        assert config.substeps_together  # every run's, whatever the mode


FLAGS = {"chunk_size": lambda v: ["--chunk-size", str(v)], "streamed": lambda v: ["--streamed" if v else "--chunked"],
         "follow": lambda v: ["--follow" if v else "--no-follow"]}


@pytest.mark.parametrize(("given", "want"), MODES, ids=lambda v: str(v))
def test_the_cli_asks_the_same_mode_and_a_right_model_costs_one_call_only_when_followed(given: dict[str, object],
                                                                                     want: tuple[object, ...]) -> None:
    argv = [*ARGV, *(flag for name, value in given.items() for flag in FLAGS[name](value))]
    out = CliRunner().invoke(app, argv)
    assert out.exit_code == 0, out.output
    calls = json.loads(out.stdout)["usage"]["model_calls"]
    follow, streamed, chunk = want
    assert calls == (1 if follow or streamed else -(-4 // int(chunk)))  # invoice: 4 steps


@pytest.mark.parametrize(("before", "flags"), [({"follow": False, "substeps_together": False}, "--no-follow --substeps-one-at-a-time"),
                                                ({"follow": False}, "--no-follow")])
def test_a_checkpoint_thread_made_before_the_default_followed_names_the_flags_that_resume_it(
        tmp_path: Path, before: dict[str, object], flags: str) -> None:
    """As a run store does (tests/bench/test_store.py): the thread is refused, naming the settings that differ,
    and the refusal gives the flags and fields that run it as it was; the thread resumes with those."""
    from stepguard import Guard
    from stepguard.errors import CheckpointError
    from stepguard.guard import sqlite_checkpointer
    from tests._fakes import ScriptedModel

    inputs = {"subtotal": "100.10", "rate": "0.1"}
    old = GuardConfig.for_procedure(INVOICE, **before)
    Guard(ScriptedModel(), old, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite")).run(INVOICE, inputs, thread_id="t")
    now = Guard(ScriptedModel(), GuardConfig.for_procedure(INVOICE), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError, match=rf"settings\.follow: .*resume it with {flags} \(GuardConfig: follow=False"):
        now.run(INVOICE, inputs, thread_id="t")
    fields = dict.fromkeys(before, False)
    again = Guard(ScriptedModel(), GuardConfig.for_procedure(INVOICE, **fields), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    assert again.run(INVOICE, inputs, thread_id="t").status == "verified"
    other = Guard(ScriptedModel(), GuardConfig.for_procedure(INVOICE, **before, seed=5),
                  checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError) as refused:  # the same defaults, another setting: no such hint
        other.run(INVOICE, inputs, thread_id="t")
    assert "every run's default" not in str(refused.value)
