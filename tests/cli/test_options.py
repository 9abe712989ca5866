"""The command line's shape (issue 15, items 3 and 5): one set of guard options and defaults, one
GuardConfig builder, one model opener; --version, -h, readable metavars, commands importable."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

import stepguard
from stepguard.bench.run import GUARDED_DEFAULTS
from stepguard.cli import app
from stepguard.cli._deferred import Deferred, deferred_defaults
from stepguard.cli._exit import ExitCode
from stepguard.cli._guard_options import build_guard_config
from stepguard.cli._open_model import open_model
from stepguard.errors import LocalServerError
from stepguard.guard import ADDED_AFTER_STORES, MODE_SETTINGS, RUN_SETTINGS, GuardConfig, fields_of, rung_names
from tests._paths import ROOT

INVOICE = ["run", str(ROOT / "examples" / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect"]
GUARDED = {"run": ("run",), "bench run": ("bench", "run"), "bench demo": ("bench", "demo")}
FLAGGED = {spec.name: spec.option.flag for spec in fields_of(GuardConfig) if spec.option.flag}
"""The GuardConfig fields with a flag (the parameter is named as the field), and the flag."""


def _commands(group: Any = None, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the app, with its path: (("run",), cmd), (("bench", "run"), cmd), ..."""
    group = group or typer.main.get_command(app)
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield (*path, name), cmd
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, (*path, name))


def _params(path: tuple[str, ...]) -> dict[str, Any]:
    cmd = dict(_commands())[path]
    return {p.name: p for p in cmd.get_params(typer.Context(cmd))}


# ------------------------------------------------------------------- one set of options and defaults
@pytest.mark.slow
@pytest.mark.parametrize("command", GUARDED)
def test_guard_options_are_the_same_everywhere_and_default_to_guardconfig(command: str) -> None:
    params = _params(GUARDED[command])
    expected = GuardConfig(**(GUARDED_DEFAULTS if command.startswith("bench") else {}))
    by_procedure = ("chunk_size", "ladder", "inline_known") if command in ("run", "bench run") else ()
    assert set(FLAGGED) <= set(params)
    for option, flag in FLAGGED.items():
        assert params[option].opts == [flag.split("/")[0]], option  # the field's own flag, generated
        default = params[option].default
        if option in by_procedure:  # GuardConfig.for_procedure's (bench run: for procedure files), said in the help
            assert default is None and "Default by procedure" in (params[option].help or ""), option
            continue
        if option in (*RUN_SETTINGS, *MODE_SETTINGS):  # decided when the options resolve (a mode given turns follow off)
            assert default is None and "Default" in (params[option].help or ""), option
            continue
        want = getattr(expected, option)
        assert (tuple(default.split(",")) if option == "ladder" else default) == want, option
    assert params["timeout"].opts == ["--timeout"] and params["model"].opts == ["--model"]
    assert ["--max-total-tokens", "--max-wall-s"] == params["max_total_tokens"].opts + params["max_wall_s"].opts


@pytest.mark.slow
def test_the_bench_default_is_documented_where_it_differs() -> None:
    assert GUARDED_DEFAULTS["on_exhausted"] != GuardConfig.on_exhausted  # else the note below is noise
    for command in ("bench run", "bench demo"):
        help_text = _params(GUARDED[command])["on_exhausted"].help
        assert f"default is {GUARDED_DEFAULTS['on_exhausted']}, not GuardConfig's {GuardConfig.on_exhausted}" in help_text
    assert "GuardConfig's" not in _params(GUARDED["run"])["on_exhausted"].help


def test_ladder_help_lists_the_registered_rungs() -> None:
    assert f"Registered rungs: {', '.join(rung_names())}." in _params(("run",))["ladder"].help


def test_build_guard_config_maps_every_option_to_its_field() -> None:
    assert build_guard_config() == GuardConfig(**RUN_SETTINGS)
    assert build_guard_config(defaults=GUARDED_DEFAULTS) == GuardConfig(**{**RUN_SETTINGS, **GUARDED_DEFAULTS})
    cfg = build_guard_config({"chunk_size": 2, "adaptive": True, "policy": "flag", "on_exhausted": "repair", "max_reprompts_per_step": 1,
                              "ladder": " narrow, restate ", "max_total_tokens": 900, "max_wall_s": 1.5}, defaults=GUARDED_DEFAULTS)
    # chunks of 2 asked: not followed
    assert cfg == GuardConfig(**{**RUN_SETTINGS, "follow": False}, chunk_size=2, adaptive=True, policy="flag", on_exhausted="repair",
                              max_reprompts_per_step=1, ladder=("narrow", "restate"), max_total_tokens=900, max_wall_s=1.5)


@pytest.mark.parametrize(("options", "message"), [
    ({"ladder": "nope"}, "unknown ladder rung 'nope'"),
    ({"policy": "ignore"}, "policy must be"),
    ({"max_wall_s": 0.0}, "max_wall_s must be positive"),
])
def test_a_value_guardconfig_rejects_is_a_usage_error(options: dict[str, Any], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as info:
        build_guard_config(options)
    assert info.value.exit_code == ExitCode.USAGE
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_run_spends_the_token_budget_given_on_the_command_line() -> None:
    assert CliRunner().invoke(app, INVOICE).exit_code == ExitCode.OK
    out = CliRunner().invoke(app, [*INVOICE, "--max-total-tokens", "1"])
    assert out.exit_code == ExitCode.FAILED and "tokens budget spent" in out.output
    out = CliRunner().invoke(app, [*INVOICE, "--max-wall-s", "0"])
    assert out.exit_code == ExitCode.USAGE and "max_wall_s must be positive" in out.output


def _instances(tmp_path: Path) -> Path:
    path = tmp_path / "inst.jsonl"
    res = CliRunner().invoke(app, ["bench", "generate", "--out", str(path), "--steps", "5", "--lookback", "1", "--per-config", "2"])
    assert res.exit_code == 0, res.output
    return path


@pytest.mark.slow
def test_bench_run_records_the_built_config(tmp_path: Path) -> None:
    inst = _instances(tmp_path)
    base = ["bench", "run", "--instances", str(inst), "--mode", "guarded", "--model", "sim:perfect", "--no-progress"]
    assert CliRunner().invoke(app, [*base, "--out", str(tmp_path / "a")]).exit_code == 0
    assert CliRunner().invoke(app, [*base, "--out", str(tmp_path / "b"), "--max-total-tokens", "5000", "--chunk-size", "2"]).exit_code == 0
    plain = json.loads((tmp_path / "a" / "run.json").read_text())["guard_config"]
    given = json.loads((tmp_path / "b" / "run.json").read_text())["guard_config"]
    # the CLI's defaults are run_benchmark's: a run started from Python resumes from the command line
    # (less the settings added after stores recorded the whole configuration, at their defaults, so those resume)
    built = json.loads(json.dumps(dataclasses.asdict(GuardConfig(**GUARDED_DEFAULTS)), default=str))
    assert plain == {k: v for k, v in built.items() if k not in ADDED_AFTER_STORES or ADDED_AFTER_STORES[k] != v}
    assert plain["follow"] is True and plain["substeps_together"] is True  # every run's (RUN_SETTINGS)
    # a chunk size given alone asks the chunked mode (mode_asked): following is off for that run
    assert given == {**plain, "max_total_tokens": 5000, "chunk_size": 2, "follow": False}
    assert CliRunner().invoke(app, [*base, "--out", str(tmp_path / "c"), "--substeps-one-at-a-time"]).exit_code == 0
    recorded = json.loads((tmp_path / "c" / "run.json").read_text())["guard_config"]
    assert recorded == {k: v for k, v in plain.items() if k != "substeps_together"}  # at its old default: left out


@pytest.mark.slow
def test_bench_demo_takes_the_guard_options(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["bench", "demo", "--model", "sim:perfect", "--out", str(tmp_path), "--sizes", "5:1",
                                   "--chunk-size", "3", "--ladder", "narrow", "--no-progress"])
    assert res.exit_code == 0, res.output
    cfg = json.loads((tmp_path / "guarded-sim-perfect" / "run.json").read_text())["guard_config"]
    assert cfg["chunk_size"] == 3 and cfg["ladder"] == ["narrow"] and cfg["on_exhausted"] == GUARDED_DEFAULTS["on_exhausted"]


# ------------------------------------------------------------------------------ one model opener
class _Served:
    """A model with a server to start and stop."""

    simulated = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def close(self) -> None:
        self.calls.append("close")


def test_open_model_starts_and_closes_once_even_when_the_work_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import stepguard.adapters

    model, seen = _Served(), {}
    monkeypatch.setattr(stepguard.adapters, "load_model", lambda spec, **kw: seen.update(kw, spec=spec) or model)
    with pytest.raises(RuntimeError), open_model("local", 2.5, procedure="P") as chat:
        assert chat is model and model.calls == ["start"]
        raise RuntimeError("the work failed")
    assert model.calls == ["start", "close"]
    assert seen == {"spec": "local", "timeout": 2.5, "procedure": "P"}


def test_open_model_turns_load_errors_into_exit_codes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import stepguard.adapters

    def missing(spec: str, **kw: Any) -> Any:
        raise LocalServerError("llama-cpp-python is not installed")

    monkeypatch.setattr(stepguard.adapters, "load_model", missing)
    with pytest.raises(typer.Exit) as info, open_model("local"):
        pass
    assert info.value.exit_code == ExitCode.MODEL and 'pip install -e ".[local]"' in capsys.readouterr().err
    monkeypatch.undo()
    with pytest.raises(typer.Exit) as info, open_model("nonsense-spec"):
        pass
    assert info.value.exit_code == ExitCode.USAGE  # a spec naming no model is the caller's usage (as stepguard serve says it)


# --------------------------------------------------------------------------- a conventional CLI
def test_version() -> None:
    out = CliRunner().invoke(app, ["--version"])
    assert out.exit_code == 0 and out.stdout == f"stepguard {stepguard.__version__}\n"
    from importlib.metadata import version

    assert stepguard.__version__ == version("stepguard")


@pytest.mark.slow
def test_every_command_answers_h_like_help() -> None:
    paths = [p for p, _ in _commands()]
    assert len(paths) >= 14  # run init check bench(+7) model(+2)
    for path in [(), *paths]:
        short = CliRunner().invoke(app, [*path, "-h"])
        assert short.exit_code == 0 and short.stdout.startswith("Usage: "), (path, short.output)
        assert short.stdout == CliRunner().invoke(app, [*path, "--help"]).stdout


def test_every_option_shows_a_readable_metavar() -> None:
    for path, cmd in _commands():
        for param in cmd.get_params(typer.Context(cmd)):
            if param.param_type_name != "option" or param.is_flag:
                continue
            assert param.metavar and param.metavar[0].isupper(), (path, param.name)  # N, SECONDS, STEPSxLOOKBACK,...
            name, _ = param.get_help_record(typer.Context(cmd))
            assert "<" not in name, (path, name)


def test_bench_help_names_every_bench_command() -> None:
    out = CliRunner().invoke(app, ["bench", "--help"]).stdout
    about, _, listing = out.partition("Commands:")
    names = [p[1] for p, _ in _commands() if len(p) == 2 and p[0] == "bench"]
    assert sorted(names) == ["compare", "demo", "generate", "report", "run", "score", "summarize"]
    for name in names:
        assert f"  {name} " in listing and name in about, name


def test_commands_are_module_level_functions() -> None:
    from stepguard.cli import authoring, bench, bench_run, run

    callbacks = {c.callback for c in app.registered_commands} | {c.callback for c in bench.app.registered_commands}
    assert {run.run_command, authoring.init_command, authoring.check_command, bench.generate_command, bench.score_command,
            bench.summarize_command, bench_run.run_command, bench_run.report_command, bench_run.compare_command,
            bench_run.demo_command} <= callbacks


def test_deferred_defaults_reject_a_name_the_command_lacks() -> None:
    mini = typer.Typer()

    def cmd(n: int | None = None) -> None:
        """One option."""

    mini.command("a", cls=deferred_defaults(lambda: Deferred({"n": 4}, {"n": "Four."})))(cmd)
    mini.command("b", cls=deferred_defaults(lambda: Deferred({"m": 4})))(cmd)
    assert "[default: 4]" in CliRunner().invoke(mini, ["a", "--help"]).stdout
    with pytest.raises(LookupError, match="no parameters"):
        CliRunner().invoke(mini, ["b", "--help"], catch_exceptions=False)


def test_an_input_given_twice_is_refused_not_overwritten() -> None:
    """`-i rate=0.2 -i rate=0.3` ran with 0.3 and said nothing."""
    out = CliRunner().invoke(app, ["run", "examples/invoice.yaml", "-i", "subtotal=120", "-i", "rate=0.2", "-i", "rate=0.3",
                                   "--model", "sim:perfect"])
    assert out.exit_code == ExitCode.USAGE and "rate given twice" in out.output


@pytest.mark.parametrize("timeout", ["-1", "0", "inf", "nan"])
def test_a_timeout_not_above_zero_is_refused_for_every_model(timeout: str) -> None:
    """`--timeout -1` was refused for an HTTP model and ignored for the simulator."""
    out = CliRunner().invoke(app, ["run", "examples/invoice.yaml", "-i", "subtotal=120", "-i", "rate=0.2",
                                   "--timeout", timeout, "--model", "sim:perfect"])
    assert out.exit_code == ExitCode.USAGE and "--timeout" in out.output, out.output
