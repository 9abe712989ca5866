"""The published JSON Schema is the one generated from the pydantic model, and it accepts what
the loader accepts: every example, every procedure snippet in the docs, the ``init`` starter, and
each form of ``inputs``; it refuses what the loader refuses structurally."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from stepguard.cli.authoring import STARTER
from stepguard.errors import ProcedureError
from stepguard.procedure import parse_procedure, procedure_json_schema
from tests._paths import ROOT

PUBLISHED = ROOT / "docs" / "schemas" / "procedure.schema.json"
VALIDATOR = Draft202012Validator(json.loads(PUBLISHED.read_text(encoding="utf-8")))
_FENCE = re.compile(r"^```(yaml|yml|json)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _errors(data: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:200]}" for e in VALIDATOR.iter_errors(data)]


def _doc_snippets() -> list[tuple[str, str, str]]:
    """``(where, fmt, text)`` of every yaml/json block with a top-level ``steps`` in docs/*.md and the READMEs."""
    out = []
    for path in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "examples" / "README.md"]:
        text = path.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            data = yaml.safe_load(m.group(2))
            if isinstance(data, dict) and "steps" in data:
                line = text[: m.start()].count("\n") + 1
                out.append((f"{path.relative_to(ROOT)}:{line}", "json" if m.group(1) == "json" else "yaml", m.group(2)))
    return out


SNIPPETS = _doc_snippets()


@pytest.mark.slow
def test_published_schema_is_the_generated_one() -> None:
    assert json.loads(PUBLISHED.read_text(encoding="utf-8")) == procedure_json_schema(), "run: python scripts/gen_docs.py"
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_docs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert gen_docs.outputs()[PUBLISHED] == PUBLISHED.read_text(encoding="utf-8")
    Draft202012Validator.check_schema(procedure_json_schema())


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_validates(path: Path) -> None:
    assert _errors(yaml.safe_load(path.read_text(encoding="utf-8"))) == []
    parse_procedure(path.read_text(encoding="utf-8"), str(path))


def test_docs_hold_procedure_snippets() -> None:
    """The snippet test below must have something to check: procedures.md shows a YAML and a JSON one."""
    where = {(w.split(":")[0], fmt) for w, fmt, _ in SNIPPETS}
    assert {("docs/procedures.md", "yaml"), ("docs/procedures.md", "json")} <= where


@pytest.mark.parametrize(("where", "fmt", "text"), SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_every_docs_snippet_validates_and_loads(where: str, fmt: str, text: str) -> None:
    data = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert _errors(data) == [], where
    parse_procedure(text, where, fmt)


def test_init_starter_validates() -> None:
    text = STARTER.format(name="procedure.yaml", stem="procedure")
    assert _errors(yaml.safe_load(text)) == []
    parse_procedure(text)


_STEPS = [{"var": "a", "expr": "x + 1"}]


@pytest.mark.parametrize("inputs", [
    {"x": "integer"},
    {"x": {"type": "decimal", "description": "an amount"}},
    {"x": {}},
    ["x"],
    [{"name": "x", "type": "number"}],
    ["x", {"name": "y", "type": "boolean"}],
], ids=["map-type", "map-fields", "map-empty", "list-names", "list-specs", "list-mixed"])
def test_every_inputs_form_is_accepted_by_both(inputs: Any) -> None:
    data = {"inputs": inputs, "steps": _STEPS}
    assert _errors(data) == []
    parse_procedure(json.dumps(data), fmt="json")


@pytest.mark.parametrize("data", [
    {"inputs": {"x": "float"}, "steps": _STEPS},                     # unknown type
    {"inputs": {"x": {"kind": "integer"}}, "steps": _STEPS},         # unknown field in the mapping form
    {"inputs": [{"type": "integer"}], "steps": _STEPS},              # a spec without a name
    {"inputs": {"1x": "integer"}, "steps": [{"var": "a", "expr": "1"}]},  # not a name
    {"inputs": ["x"], "steps": [{"var": "a", "expr": "x", "bogus": 1}]},  # unknown step field
    {"inputs": ["x"], "steps": [{"var": "a", "expr": "x", "rounding": "ROUND_DOWN"}]},
    {"inputs": ["x"]},                                                # no steps
    {"inputs": 3, "steps": _STEPS},
], ids=["type", "map-field", "no-name", "bad-name", "step-field", "rounding", "no-steps", "inputs-int"])
def test_structural_errors_are_refused_by_both(data: dict[str, Any]) -> None:
    assert _errors(data) != []
    with pytest.raises(ProcedureError):
        parse_procedure(json.dumps(data), fmt="json")
