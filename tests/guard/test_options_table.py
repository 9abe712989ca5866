"""One table of options, valid and invalid, through all four ways in (issue 28 item 3, issue 33 #9, #10).

Each row goes through the CLI (``stepguard run`` by typer's CliRunner, the Guard it builds captured),
``GuardedOpenAI`` (a stub ``openai`` client), the proxy (Starlette's TestClient over ``sim:perfect``)
and ``run_benchmark`` (a one-procedure suite on ``sim:perfect``), and must give the same resolved
GuardConfig or the same error naming the field. The CLI's flags are the ones the configuration model
declares (``CLI_FLAGS``, read from it, as ``stepguard run`` builds them); a row setting an option
without one (``labels``, ``temperature``...) skips the CLI. Each row is also held against the
generated options schema (``docs/schemas/options.schema.json``): a valid row validates, and an invalid
row the schema can tell (a type or a range) is refused by it too.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

import stepguard.guard
from stepguard.adapters import load_model
from stepguard.adapters.integrations.openai_wrapper import GuardedOpenAI
from stepguard.bench.run import GUARDED_DEFAULTS, run_benchmark
from stepguard.cli import app
from stepguard.cli._exit import ExitCode
from stepguard.guard import GuardConfig
from stepguard.guard._options import GuardOptions, OptionError
from stepguard.procedure import load_procedure
from stepguard.serve import create_app
from stepguard.serve._upstream import Upstream
from stepguard.wire import InvalidGuardedCall
from tests._paths import ROOT

INVOICE_FILE = ROOT / "examples" / "invoice.yaml"
INVOICE = load_procedure(INVOICE_FILE)
INPUTS = {"subtotal": "100.10", "rate": "0.1"}

def _flags() -> dict[str, str | tuple[str, str]]:
    """The CLI's flag of each option that has one, as the configuration model declares it (the
    flags ``stepguard run`` builds are generated from the same declarations): a switch as ``(on, off)``."""
    from stepguard.guard._fields import fields_of

    out: dict[str, str | tuple[str, str]] = {}
    for spec in fields_of(GuardConfig):
        flag = spec.option.flag
        if flag is not None and spec.option.per_run:
            on, _, off = flag.partition("/")
            out[spec.name] = (on, off) if off else on
    return out


CLI_FLAGS = _flags()
"""The options the CLI has flags for, read from the model; the others (labels, temperature, seed,
resample_temperature, max_reprompts_per_run, max_tokens_per_step) are set per run from the client,
the proxy or Python."""


# (options as a caller writes them, the GuardConfig fields they give on top of the defaults by procedure)
VALID: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({"ladder": "split,resample"}, {"ladder": ("split", "resample")}),
    ({"ladder": ["split", "resample"]}, {"ladder": ("split", "resample")}),
    ({"ladder": " narrow , restate "}, {"ladder": ("narrow", "restate")}),
    ({"chunk_size": 2, "inline_known": False, "policy": "flag"}, {"chunk_size": 2, "inline_known": False, "policy": "flag"}),
    ({"max_reprompts_per_step": 1, "max_total_tokens": 50000, "max_wall_s": 30.0, "adaptive": True, "on_exhausted": "repair"},
     {"max_reprompts_per_step": 1, "max_total_tokens": 50000, "max_wall_s": 30.0, "adaptive": True, "on_exhausted": "repair"}),
    ({"labels": {"case": "a"}}, {"extra": {"case": "a"}}),
    ({"temperature": 0.5, "seed": 7, "resample_temperature": 1.0}, {"temperature": 0.5, "seed": 7, "resample_temperature": 1.0}),
    ({"max_reprompts_per_run": 4, "max_tokens_per_step": 64}, {"max_reprompts_per_run": 4, "max_tokens_per_step": 64}),
    ({"follow": True}, {"follow": True}),
    ({"follow": True, "window": 12}, {"follow": True, "window": 12}),
    ({"streamed": True, "window": 3}, {"streamed": True, "window": 3}),
    ({"chunk_by": "independent"}, {"chunk_by": "independent"}),
    ({"substeps_together": True}, {"substeps_together": True}),
]

# (options, the field named, what the message says)
INVALID: list[tuple[dict[str, Any], str, str]] = [
    ({"ladder": "nope"}, "ladder", "unknown ladder rung 'nope': use one of"),
    ({"ladder": ["split", "nope"]}, "ladder", "unknown ladder rung 'nope': use one of"),
    ({"ladder": ","}, "ladder", "ladder must name at least one rung"),
    ({"chunk_size": 0}, "chunk_size", "chunk_size must be a whole number from 1 to 2147483647, not 0"),
    ({"policy": "pray"}, "policy", "policy must be reprompt, repair, raise or flag, not 'pray'"),
    ({"chunk_by": "together"}, "chunk_by", "chunk_by must be size or independent, not 'together'"),
    ({"substeps_together": "yes"}, "substeps_together", "substeps_together must be"),
    ({"on_exhausted": "retry"}, "on_exhausted", "on_exhausted must be raise, repair or flag, not 'retry'"),
    ({"max_reprompts_per_step": -1}, "max_reprompts_per_step", "max_reprompts_per_step must be a whole number from 0 to"),
    ({"max_wall_s": 0}, "max_wall_s", "max_wall_s must be positive seconds, finite (or None), not 0.0"),
    ({"max_total_tokens": 0}, "max_total_tokens", "max_total_tokens must be a whole number from 1 to"),
    ({"labels": {"a": 1}}, "labels", "labels must map text to text"),
    ({"temperature": 3}, "temperature", "temperature must be a number from 0 to 2, not 3.0"),
    ({"seed": 1.5}, "seed", "seed must be a whole number from"),
    ({"adaptive": "false"}, "adaptive", "adaptive must be true or false, not 'false'"),
    ({"follow": "yes"}, "follow", "follow must be true or false, not 'yes'"),
    ({"polcy": "flag"}, "polcy", "unknown option 'polcy'; the options are:"),
]


def _expected(fields: dict[str, Any], way_defaults: dict[str, Any] | None = None) -> GuardConfig:
    """Computed apart from the code under test: every run's settings (following the model), the defaults
    by procedure (invoice has decimals: the production settings), the way in's own defaults, then the
    fields; ``streamed`` or ``chunk_size`` given without ``follow`` asks for that mode, not the following one."""
    from stepguard.guard._config import PRODUCTION_SETTINGS, RUN_SETTINGS

    mode = {"follow": False} if {"streamed", "chunk_size"} & set(fields) and "follow" not in fields else {}
    return GuardConfig(**{**RUN_SETTINGS, **PRODUCTION_SETTINGS, **(way_defaults or {}), **fields, **mode})


# --------------------------------------------------------------------------------------------- the ways in
def _cli_argv(options: dict[str, Any]) -> list[str] | None:
    argv = ["run", str(INVOICE_FILE), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect"]
    for name, value in options.items():
        flag = CLI_FLAGS.get(name)
        if flag is None:
            return None
        if isinstance(flag, tuple):
            argv.append(flag[0] if value is True else flag[1] if value is False else f"{flag[0]}={value}")
        else:
            argv += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    return argv


def via_cli(options: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> GuardConfig | tuple[str, str] | None:
    """The config ``stepguard run`` builds, or its usage error's text; ``None``: the CLI has no flag for a field."""
    argv = _cli_argv(options)
    if argv is None:
        return None
    seen: list[GuardConfig] = []
    real = stepguard.guard.Guard

    def capturing(model: Any, config: Any = None, *args: Any, **kwargs: Any) -> Any:
        seen.append(config)
        return real(model, config, *args, **kwargs)

    monkeypatch.setattr(stepguard.guard, "Guard", capturing)
    out = CliRunner().invoke(app, argv)
    monkeypatch.setattr(stepguard.guard, "Guard", real)
    if out.exit_code == ExitCode.USAGE:
        return ("usage", out.output)
    assert seen, out.output
    return seen[0]


class _Completions:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        raise AssertionError("no model call is expected here")


def _client(**kw: Any) -> GuardedOpenAI:
    fake = SimpleNamespace(chat=SimpleNamespace(completions=_Completions()))
    return GuardedOpenAI(fake, {"invoice": INVOICE}, **kw)


def via_client(options: dict[str, Any], request: dict[str, Any] | None = None, **kw: Any) -> GuardConfig | InvalidGuardedCall:
    """The config a ``GuardedOpenAI`` call resolves (read as ``create`` reads it), or the error ``create`` raises."""
    client = _client(**kw)
    kwargs = {"model": "m", "messages": [], **(request or {}),
              "extra_body": {"stepguard": {"procedure": "invoice", "inputs": INPUTS, **options}}}
    try:
        call = client._read(kwargs)
    except InvalidGuardedCall as exc:
        with pytest.raises(InvalidGuardedCall) as again:  # create() refuses it the same way, before any model call
            client.chat.completions.create(**kwargs)
        assert str(again.value) == str(exc)
        return exc
    return call.config


@pytest.fixture(scope="module")
def proxy() -> Any:
    app = create_app(Upstream("sim:perfect"), {"invoice": INVOICE})
    with TestClient(app) as client:
        yield client


def via_proxy(proxy: Any, options: dict[str, Any], request: dict[str, Any] | None = None) -> GuardConfig | dict[str, Any]:
    """The config the proxy ran with (the guard it built), or its error body."""
    body = {"model": "stepguard/invoice", "messages": [{"role": "user", "content": "go"}], **(request or {}),
            "stepguard": {"inputs": INPUTS, **options}}
    reply = proxy.post("/v1/chat/completions", json=body)
    if reply.status_code != 200:
        return {"status": reply.status_code, **reply.json()["error"]}
    state = proxy.app.state.proxy
    guard = next(reversed(state._guards.values()))  # the one this request used (most recently used last)
    return guard.config


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    shutil.copy(INVOICE_FILE, folder / "invoice.yaml")
    (folder / "invoice.inputs.yaml").write_text('- {id: a, inputs: {subtotal: "100.10", rate: "0.1"}}\n', encoding="utf-8")
    return folder


def via_benchmark(options: dict[str, Any], suite: Path, rundir: Path) -> GuardConfig | OptionError:
    """The config ``run_benchmark`` records for options a Python caller gives, or the options' error."""
    try:
        given = GuardOptions.parse(options)
    except OptionError as exc:
        return exc
    with load_model("sim:perfect") as model:
        run_benchmark(suite, "guarded", model, rundir, guard_config=given, progress=False)
    recorded = json.loads((rundir / "run.json").read_text())["guard_config"]
    recorded["ladder"] = tuple(recorded["ladder"])
    return GuardConfig(**{k: v for k, v in recorded.items() if k in {f.name for f in dataclasses.fields(GuardConfig)}})


# ------------------------------------------------------------------------------------------------ the table
@pytest.mark.slow
@pytest.mark.parametrize(("options", "fields"), VALID, ids=[json.dumps(r[0]) for r in VALID])
def test_a_valid_row_resolves_to_the_same_config_every_way_in(options: dict[str, Any], fields: dict[str, Any], proxy: Any,
                                                              suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = _expected(fields)
    cli = via_cli(options, monkeypatch)
    assert cli is None or cli == want
    assert via_client(options) == want
    assert via_proxy(proxy, options) == want
    # the benchmark's own default (on_exhausted flag, so every row has an answer) sits under the options
    assert via_benchmark(options, suite, tmp_path / "run") == _expected(fields, GUARDED_DEFAULTS)


@pytest.mark.slow
@pytest.mark.parametrize(("options", "field", "says"), INVALID, ids=[json.dumps(r[0]) for r in INVALID])
def test_an_invalid_row_is_the_same_error_naming_the_field_every_way_in(options: dict[str, Any], field: str, says: str,
                                                                        proxy: Any, suite: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if field in CLI_FLAGS and not isinstance(CLI_FLAGS[field], tuple):  # a boolean flag takes no text: typer's own error
        cli = via_cli(options, monkeypatch)
        assert isinstance(cli, tuple) and says in cli[1], cli
    client = via_client(options)
    assert isinstance(client, InvalidGuardedCall) and client.location == f'extra_body["stepguard"].{field}'
    assert says in str(client)
    error = via_proxy(proxy, options)
    assert isinstance(error, dict) and error["status"] == 400 and error["param"] == f"stepguard.{field}", error
    assert says in error["message"]
    bench = via_benchmark(options, suite, tmp_path / "run")
    assert isinstance(bench, OptionError) and bench.field == field and says in str(bench)
    assert not (tmp_path / "run").exists()  # refused before the run directory is made
    # the same message, word for word, from the client and the proxy
    assert str(client).split(": ", 1)[1].split("; the options are")[0] == error["message"].split("; the options are")[0]


def test_a_python_caller_of_run_benchmark_gets_the_defaults_by_procedure(suite: Path, tmp_path: Path) -> None:
    """run_benchmark with no configuration skipped them; now it resolves as the CLI does."""
    with load_model("sim:perfect") as model:
        run_benchmark(suite, "guarded", model, tmp_path / "py", progress=False)
    recorded = json.loads((tmp_path / "py" / "run.json").read_text())["guard_config"]
    got = (recorded["chunk_size"], tuple(recorded["ladder"]), recorded["inline_known"])
    assert got == (1, ("split", "resample", "resample", "digits"), True)
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(suite), "--mode", "guarded", "--model", "sim:perfect",
                                   "--out", str(tmp_path / "cli"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "cli" / "run.json").read_text())["guard_config"] == recorded


# ------------------------------------------------------------------------------- issue 33 #10: thread_id
def test_thread_id_without_a_checkpointer_is_refused_every_way_in(proxy: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    says = "thread_id needs a checkpointer ("
    out = CliRunner().invoke(app, [*(_cli_argv({}) or []), "--thread-id", "t"])
    assert out.exit_code == ExitCode.USAGE and says in out.output
    client = via_client({"thread_id": "t"})
    assert isinstance(client, InvalidGuardedCall) and client.location == 'extra_body["stepguard"].thread_id' and says in str(client)
    error = via_proxy(proxy, {"thread_id": "t"})
    assert isinstance(error, dict) and error["param"] == "stepguard.thread_id" and says in error["message"]
    from langgraph.checkpoint.memory import InMemorySaver

    assert isinstance(via_client({"thread_id": "t"}, checkpointer=InMemorySaver()), GuardConfig)  # with one, taken


# ------------------------------------------------------------------- issue 33 #9: the request's own fields
@pytest.mark.parametrize(("request_fields", "field", "says"), [
    ({"n": 2}, "n", "n must be 1: a guarded call gives one choice, not 2"),
    ({"stop": ["\n"]}, "stop", "stop is not supported in a guarded call"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools", "tools is not supported in a guarded call"),
    ({"logprobs": True}, "logprobs", "logprobs is not supported in a guarded call"),
    ({"top_logprobs": 2}, "top_logprobs", "top_logprobs is not supported in a guarded call"),
    ({"max_tokens": 0}, "max_tokens", "max_tokens must be a whole number of tokens from 1 to 2147483647, not 0"),
    ({"temperature": 3}, "temperature", "temperature must be a number from 0 to 2, not 3.0"),
    ({"stream": "false"}, "stream", "stream must be true or false, not 'false'"),
])
def test_a_request_field_the_guard_cannot_honour_is_refused_the_same_both_ways(proxy: Any, request_fields: dict[str, Any],
                                                                               field: str, says: str) -> None:
    client = via_client({}, request_fields)
    assert isinstance(client, InvalidGuardedCall) and client.location == field
    error = via_proxy(proxy, {}, request_fields)
    assert isinstance(error, dict) and error["status"] == 400 and error["param"] == field, error
    assert str(client) == f"{field}: {error['message']}" and says in error["message"]


def test_max_tokens_and_the_request_sampling_are_honoured_both_ways(proxy: Any) -> None:
    request = {"max_tokens": 40, "temperature": 0.3, "seed": 5}
    want = _expected({"temperature": 0.3, "seed": 5})
    assert via_client({}, request) == want
    assert via_proxy(proxy, {}, request) == want
    guard = next(reversed(proxy.app.state.proxy._guards.values()))
    assert guard.model.cap == 40  # every model call of the proxy's run is capped, as the client's are
    assert _client()._read({"model": "m", "messages": [], "extra_body": {"stepguard": {"procedure": "invoice", "inputs": INPUTS}},
                            **request}).max_tokens == 40
    # the object's own temperature wins over the request's, both ways
    assert via_client({"temperature": 0.9}, request).temperature == via_proxy(proxy, {"temperature": 0.9}, request).temperature == 0.9


def test_top_p_is_sent_by_the_client_and_refused_by_a_proxy_that_cannot_send_it(proxy: Any) -> None:
    """Honoured where it can be sent (the client's endpoint, a proxy's HTTP upstream), else refused, named."""
    call = _client()._read({"model": "m", "messages": [], "top_p": 0.5,
                            "extra_body": {"stepguard": {"procedure": "invoice", "inputs": INPUTS}}})
    assert call.sent == {"top_p": 0.5}
    error = via_proxy(proxy, {}, {"top_p": 0.5})
    assert isinstance(error, dict) and error["param"] == "top_p" and "cannot be honoured: the upstream sim:perfect" in error["message"]


def test_the_cli_flags_are_the_generated_ones() -> None:
    """Every flag the model declares is one ``stepguard run --help`` shows, and the table exercises each."""
    out = CliRunner().invoke(app, ["run", "--help"], terminal_width=200)
    for flag in CLI_FLAGS.values():
        for spelled in flag if isinstance(flag, tuple) else (flag,):
            assert spelled in out.output, spelled
    exercised = {name for options, _ in VALID for name in options}
    assert set(CLI_FLAGS) <= exercised, set(CLI_FLAGS) - exercised


@pytest.mark.parametrize("options", [opts for opts, _ in VALID], ids=lambda o: ",".join(o) or "none")
def test_a_valid_row_validates_against_the_generated_schema(options: dict[str, Any]) -> None:
    import jsonschema

    from stepguard.guard._options_table import options_schema

    jsonschema.validate(options, options_schema())


SCHEMA_TELLS = {"chunk_size", "chunk_by", "substeps_together",
                "policy", "on_exhausted", "max_reprompts_per_step", "max_wall_s", "max_total_tokens",
                "temperature", "seed", "adaptive", "follow", "labels"}
"""The invalid rows whose fault is a type or a range, which a JSON Schema can say (an unknown rung or
option is the options model's to refuse, with its message)."""


@pytest.mark.parametrize("options,field,message", [row for row in INVALID if row[1] in SCHEMA_TELLS],
                         ids=lambda x: x if isinstance(x, str) else None)
def test_an_invalid_row_is_refused_by_the_generated_schema(options: dict[str, Any], field: str, message: str) -> None:
    import jsonschema

    from stepguard.guard._options_table import options_schema

    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(options, options_schema())
