"""A breaker's faults in a user's prompt as the raw baseline (issue 32): what the declared answer
format reads from a hostile reply, and what the placeholders write into the user's messages.

Each test failed on the code before its fix; the neighbours of each fault are its other rows.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from stepguard.bench.suites import load_suite
from stepguard.bench.user_prompt import load_user_prompt, number_texts
from stepguard.procedure import load_procedure
from tests._paths import DATA

SHIPPING = DATA / "shipping_user"


@pytest.mark.parametrize("reply", [
    "The price is $40.93 as of 2024-05-01.",       # a date's day was read: 1
    "The price is $40.93, valid until 05/01/2024",  # the year: 2024
    "Total $40.93, quoted at 12:30",                # the minutes: 30
    "Delivery in 3-5 days",                         # a range's end: 5
    "Total: 1\u00a0176.50",                         # a no-break space as a thousands separator: 176.50
    "Ref 0x1F",                                     # a hex number's 0
    "Total 40_93",                                  # 40
    "About 40\u00bd",                               # 40 of 40 and a half
    "Area 2\u00b2",                                 # 2 of two squared
])
def test_the_last_number_is_never_the_tail_or_the_head_of_a_longer_token(reply: str) -> None:
    prompt = load_suite(SHIPPING)[0].raw_prompt
    assert prompt is not None
    read = prompt.read_answer(reply)
    assert read.value is None and read.text is None
    assert "is not one number" in str(read.refused)


@pytest.mark.parametrize(("reply", "value"), [
    ("The price is $40.93.", Fraction(4093, 100)),
    ("so 40.93 USD", Fraction(4093, 100)),
    ("Parcel 25kg, price 40.93EUR", Fraction(4093, 100)),
    ("x = 5 - 3 = 2", 2),                            # a spaced minus is no range
    ("Total: -40.93", Fraction(-4093, 100)),
    ("Order A123: 40.93", Fraction(4093, 100)),
])
def test_a_number_that_stands_alone_is_still_read(reply: str, value: object) -> None:
    prompt = load_suite(SHIPPING)[0].raw_prompt
    assert prompt is not None
    assert prompt.read_answer(reply).value == value


def test_the_report_does_not_find_a_steps_value_inside_a_date() -> None:
    """number_texts (what "the reply shows the value" means in the per-case table) reads the same way."""
    assert number_texts("on 2024-05-01 at 12:30 the price was 40.93") == [Fraction(4093, 100)]


def _suite(tmp_path: Path, inputs: str) -> Path:
    (tmp_path / "post.yaml").write_text(
        "name: post\ninputs:\n  postcode: {type: string}\n  zone: {type: one_of, choices: ['1', '2', '007']}\n"
        "  qty: {type: integer}\n  rate: {type: decimal}\n  express: {type: boolean}\n"
        "steps:\n  - {var: total, expr: 'qty * rate', type: decimal, scale: 2}\n", encoding="utf-8")
    (tmp_path / "post.inputs.yaml").write_text(inputs, encoding="utf-8")
    (tmp_path / "post.prompt.yaml").write_text("messages:\n  - {role: user, content: '{inputs_json}'}\nanswer: {format: last_number}\n",
                                               encoding="utf-8")
    return tmp_path / "post.yaml"


@pytest.mark.parametrize(("inputs", "sent"), [
    # text inputs that look like numbers stay text: "02139" was written 02139, which is not JSON
    ('{postcode: "02139", zone: "007", qty: 3, rate: "1.50", express: true}',
     {"postcode": "02139", "zone": "007", "qty": 3, "rate": "1.50", "express": True}),
    ('{postcode: "1e3", zone: "2", qty: 3, rate: 1.50, express: false}',
     {"postcode": "1e3", "zone": "2", "qty": 3, "rate": "1.50", "express": False}),
    # a number written otherwise than JSON writes one is still a number: "+1.5" was sent as a string
    ('{postcode: "-5", zone: "1", qty: "3", rate: "+1.5", express: "TRUE"}',
     {"postcode": "-5", "zone": "1", "qty": 3, "rate": "1.5", "express": True}),
    ('{postcode: "x", zone: "1", qty: 1000, rate: "1,000.25", express: false}',
     {"postcode": "x", "zone": "1", "qty": 1000, "rate": "1000.25", "express": False}),
])
def test_inputs_json_writes_each_value_as_its_declared_type(tmp_path: Path, inputs: str, sent: dict[str, object]) -> None:
    import json
    from decimal import Decimal

    from stepguard.bench._raw import case_messages

    case = load_suite(_suite(tmp_path, f"- {{id: a, inputs: {inputs}}}\n"))[0]
    content = str(case_messages(case)[0][0]["content"])
    got = json.loads(content, parse_float=Decimal)
    assert list(got) == ["postcode", "zone", "qty", "rate", "express"]
    assert {k: (str(v) if isinstance(v, Decimal) else v) for k, v in got.items()} == sent


@pytest.mark.parametrize(("reply", "field", "value"), [
    # a path into an array loaded, then read nothing from any reply: every raw case "no answer"
    ('{"items": [{"price": 12.50}, {"price": 40.93}]}', "items.1.price", Fraction(4093, 100)),
    ('{"steps": [{"value": 1}, {"value": 40.93}]}', "steps.-1.value", Fraction(4093, 100)),
    ('{"prices": [40.93]}', "prices.0", Fraction(4093, 100)),
    ('{"result": {"0": {"price": 40.93}}}', "result.0.price", Fraction(4093, 100)),  # a key "0" of an object is a key
    ('{"items": [{"price": 12.50}]}', "items.1.price", None),                        # no such item: refused, never another
    ('{"items": [{"price": 12.50}]}', "items.01.price", None),
])
def test_a_json_field_path_reaches_into_arrays(tmp_path: Path, reply: str, field: str, value: object) -> None:
    from stepguard.bench.user_prompt import load_user_prompt
    from stepguard.procedure import load_procedure

    (tmp_path / "p.prompt.yaml").write_text(
        f"messages:\n  - {{role: user, content: '{{inputs_json}}'}}\nanswer: {{format: json_field, field: '{field}'}}\n", encoding="utf-8")
    prompt = load_user_prompt(tmp_path / "p.prompt.yaml", load_procedure(SHIPPING / "shipping.yaml"))
    read = prompt.read_answer(reply)
    assert read.value == value
    assert (read.refused is None) == (value is not None)


@pytest.mark.parametrize("answer_type", ["one_of, choices: [EU, US]", "boolean", "string"])
def test_last_number_for_an_answer_that_is_no_number_is_refused_at_load(tmp_path: Path, answer_type: str) -> None:
    """A one_of, boolean or text answer under last_number was read as the reply's whole last line, so
    'The zone is EU' was a wrong answer EU: every raw case of the suite wrong, by a rule no doc gave."""
    from stepguard.bench.user_prompt import load_user_prompt
    from stepguard.errors import ProcedureError
    from stepguard.procedure import parse_procedure

    value = {"boolean": "n > 1", "string": "'EU' if n > 1 else 'US'"}.get(answer_type.split(",")[0], "'EU' if n > 1 else 'US'")
    proc = parse_procedure(f"name: p\ninputs: {{n: integer}}\nsteps:\n  - {{var: a, expr: \"{value}\", type: {answer_type}}}\n", "p.yaml")
    (tmp_path / "p.prompt.yaml").write_text("messages:\n  - {role: user, content: '{inputs_json}'}\nanswer: {format: last_number}\n",
                                            encoding="utf-8")
    with pytest.raises(ProcedureError, match="format last_number reads a number, and the answer 'a' is"):
        load_user_prompt(tmp_path / "p.prompt.yaml", proc)
    (tmp_path / "p.prompt.yaml").write_text(
        "messages:\n  - {role: user, content: '{inputs_json}'}\nanswer: {format: regex, pattern: 'is (\\w+)'}\n", encoding="utf-8")
    read = load_user_prompt(tmp_path / "p.prompt.yaml", proc).read_answer("The answer is true", "boolean")
    assert read.value is True


def test_a_pattern_that_backtracks_without_bound_reads_no_answer_instead_of_hanging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``((?:\\d+,?)+)\\.`` on "Total: " and 40 digits never returns under ``re`` (each digit doubles the
    work): the regex format reads it with the ``regex`` package, which answers at once (no match), and
    bounds every search by REGEX_TIMEOUT_S: past it the reply reads no answer, named as such (shown
    here with the bound made tiny against a long reply). A reply the pattern matches still reads."""
    import stepguard.bench.user_prompt as up

    proc = load_procedure(SHIPPING / "shipping.yaml")
    path = tmp_path / "shipping.prompt.yaml"
    path.write_text("messages:\n  - {role: user, content: '{inputs_json}'}\n"
                    "answer: {format: regex, pattern: 'Total: ((?:\\d+,?)+)\\.'}\n", encoding="utf-8")
    prompt = load_user_prompt(path, proc)
    read = prompt.read_answer("Total: " + "1" * 40 + " USD")
    assert read.value is None and read.refused == "the pattern does not match the reply"
    assert prompt.read_answer("Total: 40. USD").value == 40
    monkeypatch.setattr(up, "REGEX_TIMEOUT_S", 1e-6)
    read = prompt.read_answer("Total: " + "1," * 200_000 + " USD")
    assert read.value is None and "did not finish on the reply within 1e-06 s" in str(read.refused)
