"""A breaker's faults in one_of values and "did you mean" (issue 32 item 5): a comparison of a one_of
name with text none of its choices is refused at load (it is never true, so the other branch ran on
every input, verified), and a misspelt ``answer`` gets the name meant. Each failed before its fix."""

from __future__ import annotations

import pytest

from stepguard.errors import ProcedureError
from stepguard.procedure import parse_procedure

HEAD = "name: p\ninputs:\n  zone: {type: one_of, choices: [EU, US]}\n  n: integer\nsteps:\n"


@pytest.mark.parametrize(("steps", "says"), [
    ("  - {var: fee, expr: \"2 if zone == 'eu' else 3\"}\n", "compares 'zone' with 'eu', which is none of its choices (EU, US)"),
    ("  - {var: fee, expr: \"2 if 'Eu' != zone else 3\"}\n", "compares 'zone' with 'Eu'"),
    ("  - {var: fee, expr: \"2 if zone in ('EU', 'UK') else 3\"}\n", "compares 'zone' with 'UK'"),
    ("  - {var: fee, expr: \"2 if zone not in ('us',) else 3\"}\n", "compares 'zone' with 'us'"),
    ("  - {var: fee, expr: '2', check: \"value == 2 if zone == 'Mars' else value == 3\"}\n", "compares 'zone' with 'Mars'"),
    # a one_of step's own value, and a later step's comparison with it
    ("  - {var: band, expr: \"'low' if n < 5 else 'high'\", type: one_of, choices: [low, high], check: \"value in ('low', 'hi')\"}\n",
     "compares 'value' with 'hi'"),
    ("  - {var: band, expr: \"'low' if n < 5 else 'high'\", type: one_of, choices: [low, high]}\n"
     "  - {var: fee, expr: \"1 if band == 'Low' else 2\"}\n", "compares 'band' with 'Low'"),
])
def test_a_comparison_with_text_none_of_the_choices_is_refused(steps: str, says: str) -> None:
    with pytest.raises(ProcedureError) as err:
        parse_procedure(HEAD + steps, "p.yaml")
    assert says in str(err.value) and "never true" in str(err.value)


@pytest.mark.parametrize("steps", [
    "  - {var: fee, expr: \"2 if zone == 'EU' else 3\"}\n",
    "  - {var: fee, expr: \"2 if zone in ('EU', 'US') else 3\"}\n",
    "  - {var: fee, expr: \"2 if n == 1 else 3\"}\n",
    "  - {var: label, expr: \"'x' if zone == 'US' else 'y'\", type: string}\n",
])
def test_a_comparison_within_the_choices_loads(steps: str) -> None:
    assert parse_procedure(HEAD + steps, "p.yaml").steps


def test_a_misspelt_answer_says_which_step_was_meant() -> None:
    with pytest.raises(ProcedureError, match=r"answer 'totl' is not a step variable \(did you mean 'total'\?\)"):
        parse_procedure("name: p\ninputs: {n: integer}\nsteps:\n  - {var: total, expr: n + 1}\nanswer: totl\n", "p.yaml")
