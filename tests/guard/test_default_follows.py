"""The default follows the model (issue 43): every run's settings follow it, and a mode's setting given alone asks
that mode, the same in every way in (GuardOptions, GuardConfig.for_procedure, the CLI's flags, the client)."""

from __future__ import annotations

import json

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
