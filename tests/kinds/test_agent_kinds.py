"""Issue 18.1: the extract and text kinds' checks, and the procedure model's rules for every kind."""

from __future__ import annotations

import pytest

from stepguard import ProcedureError, parse_procedure
from stepguard.kinds import verify_extract, verify_text
from stepguard.kinds.extract import dates_in, numbers_in

TEXTS = parse_procedure("""
inputs: {doc: string}
steps:
  - {var: tags, kind: text, format: list, max_length: 3, choices: [red, green, blue]}
  - {var: code, kind: text, pattern: "[A-Z]{3}-[0-9]{2}"}
  - {var: card, kind: text, format: json, schema: {type: object, required: [name], properties: {name: {type: string}}}}
  - {var: short, kind: text, max_length: 10, check: words(value) <= 2}
  - {var: when, kind: extract, source: doc, type: string}
""")
ENV = {"doc": "Invoice dated 5 March 2024. Amount due: EUR 1,234.50."}


@pytest.mark.parametrize("index,reply,kind", [
    (0, 'tags = ["red", "blue"]', None),
    (0, 'tags = ["red", "pink"]', "check_failed"),
    (0, 'tags = ["red", "blue", "green", "red"]', "check_failed"),
    (0, "tags = red, blue", "type_error"),
    (1, "code = ABC-12", None),
    (1, "code = ABC-123", "check_failed"),
    (2, 'card = {"name": "Ada"}', None),
    (2, 'card = {"nom": "Ada"}', "check_failed"),
    (3, "short = two words", None),
    (3, "short = three words here", "check_failed"),
    (3, "nothing here", "under_executed"),
    (4, "when = 2024-03-05", None),
    (4, "when = 2024-03-06", "not_in_source"),
])
def test_text_and_extract_checks(index: int, reply: str, kind: str | None) -> None:
    check = verify_extract if TEXTS.steps[index].kind == "extract" else verify_text
    verdict = check(TEXTS, index, ENV, reply)
    assert (verdict.deviation.kind if verdict.deviation else None) == kind, verdict.deviation


def test_numbers_and_dates_are_normalised() -> None:
    assert 1234.5 in [float(n) for n in numbers_in("Total: $1,234.50")]
    assert dates_in("5 March 2024; March 5, 2024; 2024-03-05; 05.03.2024") == ["2024-03-05"] * 4


@pytest.mark.parametrize("step,message", [
    ("{var: a, kind: tool, tool: t, expr: '1'}", "has no expr"),
    ("{var: a, kind: extract, source: n}", "must be an input of type string"),
    ("{var: a, kind: text, type: integer}", "a text step's value is a string"),
    ("{var: a, kind: text, pattern: '('}", "not a valid regular expression"),
    ("{var: a, kind: text, schema: {type: object}}", "schema applies only to format json"),
    ("{var: a, kind: tool, tool: t, args: {x: later}}", "reads 'later'"),
    ("{var: a, source: s}", "source applies only to kind extract or text"),
])
def test_kind_rules_are_enforced_at_load(step: str, message: str) -> None:
    with pytest.raises(ProcedureError, match=message):
        parse_procedure(f"inputs: {{s: string, n: integer}}\nsteps:\n  - {step}\n")
