"""A value keeps its type on its way to the evaluator (issue 28, item 4).

A ``format: list`` text step's value was its JSON text to every later expression: ``len(names)``
counted characters (24 for three names, verified; the right 3 refused; ``--policy repair`` wrote
24 over the model's 3), and ``'Ada' in names`` was a substring test. The kind now reads its
committed value back as what it is (:meth:`stepguard.kinds.Kind.value_of`): a list as a tuple of
its items, JSON as its value. The neighbours: predicates on the step itself, membership, empty
lists, mappings, nested lists, numbers inside JSON, booleans.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from stepguard import Guard, GuardConfig
from stepguard.kinds import get_kind
from stepguard.procedure import parse_procedure
from tests._fakes import FixedReplies

NAMES = """
inputs: {}
steps:
  - var: names
    kind: text
    format: list
    instruction: Name three primary colours.
  - var: num_names
    expr: len(names)
    type: integer
accept_bounded: [names]
"""


def _run(text: str, replies: list[str], **cfg: object):
    proc = parse_procedure(text)
    model = FixedReplies(replies)
    return Guard(model, GuardConfig(**cfg)).run(proc, {}), model  # type: ignore[arg-type]


def test_len_of_a_list_counts_its_items_and_the_character_count_is_refused() -> None:
    result, _ = _run(NAMES, ['names = ["red", "yellow", "blue"]', "num_names = 24", "num_names = 3"])
    assert result.status == "verified"
    assert result.values["num_names"] == 3
    assert [e.kind for e in result.deviations] == ["arithmetic_error"]


def test_repair_supplies_the_item_count_never_the_character_count() -> None:
    result, _ = _run(NAMES, ['names = ["red", "yellow", "blue"]', "num_names = 3"], policy="repair")
    assert result.status == "verified" and result.values["num_names"] == 3
    result, _ = _run(NAMES, ['names = ["red", "yellow", "blue"]', "num_names = 24"], policy="repair")
    assert result.status == "repaired" and result.values["num_names"] == 3


@pytest.mark.parametrize(
    ("reply", "expr", "want"),
    [
        ('["Ada", "Grace"]', "'Ada' in names", True),
        ('["Ada", "Grace"]', "'Ad' in names", False),  # an item, not a substring of the JSON text
        ('["Ada", "Grace"]', "'Grace' not in names", False),
        ("[]", "len(names) == 0", True),
        ('["a,b"]', "len(names)", 1),
    ],
)
def test_membership_and_empty_lists(reply: str, expr: str, want: object) -> None:
    text = NAMES.replace("expr: len(names)\n    type: integer", f"expr: {expr!r}\n    type: {'boolean' if isinstance(want, bool) else 'integer'}")
    result, _ = _run(text, [f"names = {reply}", f"num_names = {want}"])
    assert result.status == "verified", result.deviations
    assert result.values["num_names"] == want


def test_a_list_steps_own_predicate_counts_items() -> None:
    text = NAMES.replace("    instruction: Name three primary colours.\n", "    instruction: Name three primary colours.\n    check: len(value) <= 3\n")
    result, _ = _run(text, ['names = ["red", "yellow", "blue"]', "num_names = 3"])
    assert result.status == "verified", result.deviations
    result, _ = _run(text, ['names = ["red", "yellow", "blue", "green"]', 'names = ["red", "yellow", "blue"]', "num_names = 3"])
    assert [e.kind for e in result.deviations] == ["check_failed"]


JSON = """
inputs: {}
steps:
  - var: card
    kind: text
    format: json
    instruction: Write a card.
  - var: n
    expr: len(card)
    type: integer
accept_bounded: [card]
"""


def test_json_values_are_mappings_and_lists_to_the_evaluator() -> None:
    result, _ = _run(JSON, ['card = {"name": "Ada", "tags": ["x", "y"], "dose": 2.50}', "n = 3"])
    assert result.status == "verified", result.deviations
    step = parse_procedure(JSON).steps[0]
    value = get_kind("text").value_of(step, result.texts["card"])
    assert value == {"name": "Ada", "tags": ("x", "y"), "dose": Decimal("2.50")}
    assert result.texts["card"] == '{"name": "Ada", "tags": ["x", "y"], "dose": 2.50}'  # committed as written


def test_a_committed_boolean_and_string_keep_their_types() -> None:
    kind = get_kind("compute")
    proc = parse_procedure("inputs: {}\nsteps:\n  - {var: b, expr: '1 < 2', type: boolean}\n  - {var: s, expr: \"'x'\", type: string}\n")
    assert kind.value_of(proc.steps[0], "True") is True
    assert kind.value_of(proc.steps[1], "True") == "True"
    with pytest.raises(ValueError):
        kind.value_of(proc.steps[0], "maybe")
