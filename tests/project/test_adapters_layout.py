"""adapters/ in two directions: the models the core calls (``stepguard.adapters.models``) and the
integrations that call the core (``stepguard.adapters.integrations``), with the paths users were given
still answering: the package face, ``python -m stepguard.adapters.lm_eval`` and the ``inspect_ai``
entry point. The import contracts themselves run in tests/project/test_layering.py."""

from __future__ import annotations

import importlib
import tomllib

import pytest

from tests._paths import ROOT


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_two_directions_are_contracts_that_cover_every_adapter_folder() -> None:
    contracts = {c["id"]: c for c in _pyproject()["tool"]["importlinter"]["contracts"]}
    apart = contracts["adapter-directions"]
    assert apart["type"] == "independence"
    assert set(apart["modules"]) == {"stepguard.adapters.models", "stepguard.adapters.integrations"}
    layers = contracts["adapters"]
    assert layers["type"] == "layers" and layers["containers"] == ["stepguard.adapters"] and layers["exhaustive"]
    placed = {name.strip() for layer in layers["layers"] for name in layer.replace(":", "|").split("|")}
    present = {p.name for p in (ROOT / "adapters").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    present |= {p.stem for p in (ROOT / "adapters").glob("*.py") if p.stem != "__init__"}
    assert present == placed, f"not placed: {sorted(present - placed)}; placed but gone: {sorted(placed - present)}"


def test_the_package_face_names_each_adapter_from_its_direction() -> None:
    import stepguard.adapters as adapters

    for name in ("LocalModel", "OpenAICompatibleModel", "ReplayModel", "parse_model_spec"):
        assert getattr(adapters, name).__module__.startswith("stepguard.adapters.models."), name
    for name in ("GuardedOpenAI", "ClientChatModel", "guarded_node"):
        assert getattr(adapters, name).__module__.startswith("stepguard.adapters.integrations."), name
    assert type(adapters.load_model("sim:perfect")).__module__ == "stepguard.adapters.models.sim"


def test_the_lm_eval_path_users_run_and_import_is_the_integration() -> None:
    """Task folders written before the move import process_results from the old path."""
    old = importlib.import_module("stepguard.adapters.lm_eval")
    new = importlib.import_module("stepguard.adapters.integrations.lm_eval")
    assert old.process_results is new.process_results and old.write_task is new.write_task


def test_the_inspect_entry_point_names_the_integration() -> None:
    pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (the inspect extra)")
    target = _pyproject()["project"]["entry-points"]["inspect_ai"]["stepguard"]
    assert target == "stepguard.adapters.integrations.inspect"
    module = importlib.import_module(target)
    assert callable(module.procedural) and callable(module.guarded)
