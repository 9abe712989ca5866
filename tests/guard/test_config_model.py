"""One configuration model (issue 42, item 2): GuardConfig declares each option once (type, constraint,
description, flag); the per-run options, the flags, the proxy's keys and schema and the docs' table
are built from it; one ``defaults_for`` gives the defaults by procedure.

The ways in agreeing on every row is tests/guard/test_options_table.py; this file holds the model itself.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepguard.guard import GuardConfig, GuardOptions, OptionError, defaults_for, fields_of, options_schema, options_table
from stepguard.guard._options import OPTION_NAMES
from stepguard.procedure import Procedure, load_procedure
from stepguard.serve._options import OPTION_KEYS
from stepguard.wire import RUN_KEYS
from tests._paths import ROOT

INVOICE = load_procedure(ROOT / "examples" / "invoice.yaml")
SPECS = {spec.name: spec for spec in fields_of(GuardConfig)}

BAD: dict[str, Any] = {
    "chunk_size": 0, "chunk_by": "together", "substeps_together": "yes",
    "adaptive": "no", "policy": "pray", "ladder": "bridge", "max_reprompts_per_step": -1,
    "max_reprompts_per_run": 1.5, "max_total_tokens": 0, "max_wall_s": -1.0, "on_exhausted": "retry",
    "temperature": 2.5, "seed": "1", "resample_temperature": math.nan, "inline_known": 1, "max_tokens_per_step": True,
    "streamed": None, "window": 100_001, "follow": "true", "prompt_dir": 5, "extra": {"a": 1},
}
"""One value each field refuses."""


def test_every_field_is_declared_with_a_description_and_its_default_passes_its_own_check() -> None:
    assert set(SPECS) == {f.name for f in dataclasses.fields(GuardConfig)}
    for spec in SPECS.values():
        assert spec.description.strip(), spec.name
        default = {} if spec.name == "extra" else spec.default
        assert spec.check(default) == default, spec.name


@pytest.mark.parametrize("field", list(BAD))
def test_a_refused_value_is_named_with_its_field(field: str) -> None:
    value = BAD[field]
    with pytest.raises(ValueError) as info:
        GuardConfig(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must "), message
    assert f"not {value!r}" in message, message
    assert "\n" not in message and "pydantic" not in message  # the project's sentence, not pydantic's report


def test_every_field_has_a_refused_value_above() -> None:
    assert set(BAD) == set(SPECS)


def test_the_model_is_immutable_and_keeps_values_as_its_fields_hold_them() -> None:
    config = GuardConfig(ladder=["split", "digits"], prompt_dir="prompts", temperature=1)  # type: ignore[arg-type]
    assert config.ladder == ("split", "digits") and config.prompt_dir == Path("prompts") and config.temperature == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.chunk_size = 2  # type: ignore[misc]
    assert dataclasses.replace(config, chunk_size=2).chunk_size == 2
    with pytest.raises(ValueError, match="chunk_size must be a whole number from 1 to 2147483647, not 0"):
        dataclasses.replace(config, chunk_size=0)
    assert GuardConfig.chunk_size == 5  # the class still reads as its defaults


def test_the_options_are_the_fields_not_declared_again() -> None:
    per_run = [("labels" if s.name == "extra" else s.name) for s in SPECS.values() if s.option.per_run]
    assert list(OPTION_NAMES) == per_run and "prompt_dir" not in OPTION_NAMES
    assert set(GuardOptions.__annotations__) == {"_given"}  # no option declared on the class itself
    assert OPTION_KEYS == (*RUN_KEYS, *OPTION_NAMES)  # the proxy's keys: what to run, then the options
    options = GuardOptions(chunk_size=2, labels={"case": "a"})
    assert (options.chunk_size, options.ladder, options.labels) == (2, GuardOptions().ladder, {"case": "a"})
    assert options == GuardOptions.parse({"chunk_size": 2, "labels": {"case": "a"}, "policy": None})
    assert hash(options) == hash(GuardOptions(labels={"case": "a"}, chunk_size=2)) and options != GuardOptions(chunk_size=2)
    import copy
    import pickle

    assert copy.deepcopy(options) == options == pickle.loads(pickle.dumps(options))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.chunk_size = 3
    with pytest.raises(OptionError) as info:
        GuardOptions(prompt_dir="/etc")
    assert info.value.field == "prompt_dir" and "unknown option 'prompt_dir'" in str(info.value)


def test_an_option_is_refused_with_the_fields_message() -> None:
    for field, value in BAD.items():
        if field in ("prompt_dir", "extra", "ladder") or value is None:  # not options / None: not given / a text ladder is names
            continue
        with pytest.raises(OptionError) as info:
            GuardOptions.parse({field: value})
        assert info.value.field == field and str(info.value).startswith(f"{field} must"), str(info.value)


# --------------------------------------------------------------------------------------- defaults by procedure
PRODUCTION = {"ladder": ("split", "resample", "resample", "digits"), "chunk_size": 1, "inline_known": True}
"""The defaults by procedure beyond integer sums, as they were before there was one defaults_for."""


def _sums() -> Procedure:
    return Procedure.model_validate({"name": "sums", "inputs": ["a", "b"], "steps": [{"var": "s", "expr": "a - b + 3"}]})


def test_defaults_for_gives_the_same_values_as_before_and_follows_the_model() -> None:
    run = {"follow": True, "substeps_together": True}  # every run's (issue 43)
    assert defaults_for(INVOICE) == {**run, **PRODUCTION}
    assert defaults_for([INVOICE]) == {**run, **PRODUCTION}
    assert defaults_for(None) == run and defaults_for() == run
    assert defaults_for(_sums()) == run
    assert defaults_for([_sums(), INVOICE]) == {**run, **PRODUCTION}  # a mixed suite: one configuration, the production one
    assert defaults_for(benchmark=True) == {**run, "on_exhausted": "flag"}
    assert defaults_for(INVOICE, benchmark=True) == {**run, **PRODUCTION, "on_exhausted": "flag"}
    defaults_for(INVOICE)["chunk_size"] = 9  # a new dict each call: a caller cannot change the next one's
    assert defaults_for(INVOICE) == {**run, **PRODUCTION}


def test_the_old_names_read_from_defaults_for() -> None:
    from stepguard.bench.run import GUARDED_DEFAULTS
    from stepguard.guard import PRODUCTION_SETTINGS

    assert GUARDED_DEFAULTS == defaults_for(benchmark=True)
    assert PRODUCTION_SETTINGS == PRODUCTION
    run = {"follow": True, "substeps_together": True}
    # a chunk size given alone asks the chunked mode: following is off (mode_asked)
    assert GuardConfig.for_procedure(INVOICE, chunk_size=3) == GuardConfig(**{**run, **PRODUCTION, "chunk_size": 3, "follow": False})
    assert GuardConfig.for_procedure(INVOICE, chunk_size=3, follow=True).follow
    assert GuardOptions().resolve(INVOICE, benchmark=True) == GuardConfig(**run, **PRODUCTION, on_exhausted="flag")


# ------------------------------------------------------------------------------------- generated documents
def test_the_docs_table_and_schema_are_the_generated_ones() -> None:
    """Rerun ``python scripts/gen_docs.py`` after changing a field."""
    assert (ROOT / "docs" / "options.md").read_text(encoding="utf-8") == options_table()
    committed = json.loads((ROOT / "docs" / "schemas" / "options.schema.json").read_text(encoding="utf-8"))
    assert committed == options_schema()


def test_the_table_has_a_row_per_field_with_its_flag() -> None:
    table = options_table()
    for spec in SPECS.values():
        row = next(line for line in table.splitlines() if line.startswith(f"| `{spec.name}` |"))
        assert (spec.option.flag or "") in row


def test_the_schema_takes_what_the_options_take() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = options_schema()
    assert set(schema["properties"]) == set(OPTION_NAMES)
    good = {"chunk_size": 2, "ladder": "split,resample", "max_wall_s": 1.5, "policy": "flag", "labels": {"a": "b"},
            "max_total_tokens": None, "follow": True}
    GuardOptions.parse(good)
    jsonschema.validate(good, schema)
    for field, value in BAD.items():
        if field in OPTION_NAMES and value is not None and not (isinstance(value, float) and math.isnan(value)) \
                and field != "ladder":  # a text ladder is comma-separated names; the rung check is the guard's
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate({field: value}, schema)


# ------------------------------------------------------------------------------------------- start-up
@pytest.mark.slow  # a fresh interpreter
def test_stepguard_help_builds_no_flag_and_loads_neither_pydantic_nor_the_guard() -> None:
    """The flags are generated when a guarded command is used, never at ``stepguard --help``."""
    code = ("import sys\nfrom stepguard.cli import main\nsys.argv = ['stepguard', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('MODULES', 'pydantic' in sys.modules, 'stepguard.guard' in sys.modules, 'stepguard.guard._fields' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "MODULES False False False" in out.stdout, out.stdout[-500:] + out.stderr[-2000:]
