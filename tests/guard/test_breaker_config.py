"""Hostile option values through every way in (issue 42, breaker round of the one configuration model).

Python's ``GuardConfig`` (and ``for_procedure``, the LangGraph node's and the benchmark's), the per-run
options (``GuardOptions``: ``run_benchmark``), the drop-in client's ``extra_body["stepguard"]`` and the
proxy's ``stepguard`` object (the request's JSON read as the proxy reads it, :func:`read_run_object`)
and the command line each refuse a value naming the option, or all take it as the same value. The
generated JSON Schema takes what the options take; where it cannot say a refusal (a whole number
written ``2.0``, an unregistered rung, an unknown key, ``NaN``), docs/options.md says so.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from typer.testing import CliRunner

from stepguard.guard import GuardConfig, GuardOptions, OptionError, options_schema
from stepguard.wire import read_run_object
from stepguard.wire._body import parse_json
from tests._fakes import chain_procedure
from tests._paths import ROOT

HOSTILE: list[tuple[str, Any]] = [
    ("chunk_size", True), ("chunk_size", 2.0), ("chunk_size", "2"), ("chunk_size", -0.0), ("chunk_size", 10**40),
    ("chunk_size", [2]), ("chunk_size", {"n": 2}), ("chunk_size", 0), ("window", 100_001), ("seed", 1.0), ("seed", 2**63),
    ("seed", True), ("max_total_tokens", True), ("max_total_tokens", 2**63), ("max_reprompts_per_step", -1),
    ("max_wall_s", float("nan")), ("max_wall_s", float("inf")), ("max_wall_s", float("-inf")), ("max_wall_s", -0.0),
    ("max_wall_s", 0), ("max_wall_s", True), ("max_wall_s", "5"), ("max_wall_s", 10**400),
    ("temperature", float("nan")), ("temperature", float("inf")), ("temperature", True), ("temperature", "0.5"), ("temperature", 2.5),
    ("resample_temperature", -1e-9), ("policy", "Reprompt"), ("policy", "REPAIR"), ("policy", " flag"), ("policy", 1),
    ("policy", ["flag"]), ("on_exhausted", "Flag"), ("on_exhausted", "reprompt"), ("ladder", ["réstate"]), ("ladder", ["Restate"]),
    ("ladder", []), ("ladder", [1]), ("ladder", {"restate": 1}), ("ladder", ["ｒestate"]), ("adaptive", 1), ("adaptive", "true"),
    ("streamed", 0), ("follow", None), ("labels", {"a": 1}), ("labels", []), ("labels", {"a": None}),
]
"""(option, value): each refused, naming the option, by every way in (``follow: null`` is ``None`` to
Python, refused; JSON ``null``: not given)."""

SAME: list[tuple[str, Any, Any]] = [
    ("chunk_size", 2, 2), ("max_wall_s", 5, 5.0), ("max_wall_s", 1e308, 1e308), ("temperature", 1, 1.0),
    ("temperature", -0.0, 0.0), ("seed", -(2**63), -(2**63)), ("ladder", ["restate", "restate"], ("restate", "restate")),
    ("ladder", ("narrow",), ("narrow",)), ("labels", {"é": "ü"}, {"é": "ü"}),
]
"""(option, value, held): taken by every way in, held as the same value."""


def _python(name: str, value: Any) -> Any:
    field = "extra" if name == "labels" else name
    return getattr(GuardConfig(**{field: value}), field)


def _for_procedure(name: str, value: Any) -> Any:
    field = "extra" if name == "labels" else name
    return getattr(GuardConfig.for_procedure(chain_procedure(3), **{field: value}), field)


def _options(name: str, value: Any) -> Any:
    return GuardOptions(**{name: value}).given()[name]


def _wire(name: str, value: Any) -> Any:
    """As the proxy and the drop-in client read it: the JSON text parsed as the proxy parses a body."""
    text = json.dumps({"procedure": "p", name: value})
    return read_run_object(parse_json(text, "the request body")).options.given()[name]


WAYS = {"GuardConfig": _python, "for_procedure": _for_procedure, "GuardOptions": _options, "proxy/client JSON": _wire}


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize(("name", "value"), HOSTILE, ids=[f"{n}={v!r:.20}" for n, v in HOSTILE])
def test_a_hostile_value_is_refused_naming_the_option_by_every_way_in(way: str, name: str, value: Any) -> None:
    if way == "proxy/client JSON" and value is None:
        pytest.skip("JSON null is 'not given' (GuardOptions.parse): the default")
    field = "extra" if (name == "labels" and way in ("GuardConfig", "for_procedure")) else name
    with pytest.raises((ValueError, OptionError)) as info:
        WAYS[way](name, value)
    text = str(info.value)
    assert field in text or (name == "ladder" and "rung" in text), text
    if isinstance(info.value, OptionError):
        assert info.value.field == name


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize(("name", "value", "held"), SAME, ids=[f"{n}={v!r:.20}" for n, v, _ in SAME])
def test_a_value_taken_is_held_the_same_by_every_way_in(way: str, name: str, value: Any, held: Any) -> None:
    got = WAYS[way](name, value)
    assert got == held and type(got) is type(held)


def test_guardconfig_refuses_an_infinite_wall_budget_as_the_options_do() -> None:
    """``GuardConfig(max_wall_s=inf)`` was taken (a budget that never ends; ``None`` says unbounded)
    while GuardOptions, the proxy and ``--max-wall-s inf`` refused it."""
    for value in (math.inf, float("1e400")):
        with pytest.raises(ValueError, match="max_wall_s"):
            GuardConfig(max_wall_s=value)


INVOICE = [str(ROOT / "examples" / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:paper", "--quiet"]


@pytest.mark.parametrize(("flag", "text"), [("--chunk-size", "2.0"), ("--chunk-size", "True"), ("--chunk-size", "1_0"),
                                            ("--chunk-size", "0x2"), ("--window", "4.0"), ("--max-reprompts", "1.5"),
                                            ("--max-total-tokens", "1e3")])
def test_the_command_line_refuses_a_whole_number_written_otherwise_naming_the_flag(flag: str, text: str) -> None:
    """typer read ``--chunk-size 2.0`` as 2 (and ``1_0`` as 10) where every other way in refuses 2.0."""
    from stepguard.cli._app import app

    out = CliRunner().invoke(app, ["run", *INVOICE, flag, text])
    assert out.exit_code == 2, out.output
    assert flag in out.output and "not a whole number" in out.output


@pytest.mark.parametrize(("flag", "text", "named"), [("--max-wall-s", "nan", "max_wall_s"), ("--max-wall-s", "inf", "max_wall_s"),
                                                     ("--max-wall-s", "-0", "max_wall_s"), ("--policy", "Reprompt", "policy"),
                                                     ("--on-exhausted", "FLAG", "on_exhausted"), ("--ladder", "réstate", "réstate"),
                                                     ("--ladder", "", "ladder"), ("--chunk-size", "99999999999", "chunk_size")])
def test_the_command_line_refuses_what_the_other_ways_refuse_naming_the_option(flag: str, text: str, named: str) -> None:
    from stepguard.cli._app import app

    out = CliRunner().invoke(app, ["run", *INVOICE, flag, text])
    assert out.exit_code == 2 and named in out.output, out.output


def test_the_command_line_takes_a_whole_number_as_the_others_do() -> None:
    from stepguard.cli._app import app

    out = CliRunner().invoke(app, ["run", *INVOICE, "--chunk-size", "2", "--json"])
    assert out.exit_code == 0, out.output


SCHEMA_LOOSER = {("chunk_size", "2.0"), ("seed", "1.0"), ("ladder", "['réstate']"), ("ladder", "['Restate']"), ("ladder", "['ｒestate']"),
                 ("ladder", "[]"), ("max_wall_s", repr(10**400))}
"""Refused by the options, taken by the schema, as docs/options.md says (JSON Schema's integer takes
2.0; rung names are a registry; an integer past any float)."""


IN_JSON = [(n, v) for n, v in HOSTILE if v is not None and not (isinstance(v, float) and not math.isfinite(v))]
"""The hostile values JSON can write."""


@pytest.mark.parametrize(("name", "value"), IN_JSON, ids=lambda v: repr(v)[:20])
def test_the_schema_refuses_what_the_options_refuse_or_the_docs_say_it_is_looser(name: str, value: Any) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    data = json.loads(json.dumps({name: value}))
    key = (name, repr(value))
    if key in SCHEMA_LOOSER:
        jsonschema.validate(data, options_schema())
        return
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, options_schema())


def test_the_docs_say_where_the_options_are_stricter_than_the_schema() -> None:
    text = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    for said in ("`2.0`", "registered rungs", "`unknown_option`", "`NaN`"):
        assert said in text
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate({"chunksize": 2}, options_schema())  # the schema lists the options alone
    with pytest.raises(OptionError, match="unknown option 'chunksize'"):
        read_run_object({"chunksize": 2})


@pytest.mark.parametrize("field", ["temperature", "resample_temperature"])
def test_negative_zero_is_the_same_setting_as_zero_in_the_identity(field: str) -> None:
    """-0.0 == 0.0, but JSON writes them apart: a run started with one resumed with the other was
    refused as other settings (the breaker's open case). The config holds 0.0 for both."""
    from stepguard.adapters import load_model
    from stepguard.guard import PromptSet, run_identity
    from stepguard.procedure import load_procedure
    from tests._paths import ROOT

    procedure = load_procedure(ROOT / "examples" / "invoice.yaml")
    inputs = {"subtotal": "100.10", "rate": "0.1"}
    with load_model("sim:perfect") as model:
        ids = [run_identity(procedure, inputs, GuardConfig.for_procedure(procedure, **{field: v}), model, PromptSet())
               for v in (0.0, -0.0)]
    assert json.dumps(ids[0], sort_keys=True) == json.dumps(ids[1], sort_keys=True)
    assert math.copysign(1.0, getattr(GuardConfig(**{field: -0.0}), field)) == 1.0
