"""Input-set files are read by one strict loader: a value arrives exactly as written (issue 33, item 5).

PyYAML's YAML 1.1 read ``qty: 010`` as 8 and ``minutes: 1:30`` as 90; a key given twice took the
last value (YAML and JSON); ``NAME.inputs.json`` was ignored without a word beside
``NAME.inputs.yaml``. Neighbours: other notations (hex, octal, binary, ``1_000``, ``.5``, ``+1``,
``1e3``, null, ``Yes``/``on``, dates, JSON floats past double precision, ``NaN``, big numbers),
duplicates nested and at the top, other ways in (``.yml`` beside ``.yaml``, tags, aliases, ids,
``stepguard bench run``), and a property: what is written is what is bound.
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stepguard.bench.suites import inputs_file, load_suite
from stepguard.cli._app import app
from stepguard.cli._exit import ExitCode
from stepguard.errors import ProcedureError
from stepguard.procedure import Procedure, load_inputs_file, parse_inputs_text
from tests._paths import ROOT

PROC = """\
name: p
inputs: {qty: integer, minutes: string, price: decimal, ok: boolean}
steps:
  - {var: y, expr: qty * price, type: decimal, scale: 2}
"""
KINDS = Procedure.model_validate({"name": "kinds", "inputs": {"qty": "integer", "minutes": "string", "price": "decimal",
                                                              "ok": "boolean", "n": "number"},
                                  "steps": [{"var": "y", "expr": "qty * price + n"}]})


def _suite(tmp_path: Path, sets: str, suffix: str = ".inputs.yaml") -> Path:
    (tmp_path / "p.yaml").write_text(PROC, encoding="utf-8")
    (tmp_path / f"p{suffix}").write_text(sets, encoding="utf-8")
    return tmp_path


def _inputs(tmp_path: Path, sets: str, suffix: str = ".inputs.yaml") -> dict[str, object]:
    (case,) = load_suite(_suite(tmp_path, sets, suffix))
    return case.inputs


def _refused(tmp_path: Path, sets: str, suffix: str = ".inputs.yaml") -> str:
    with pytest.raises(ProcedureError) as info:
        load_suite(_suite(tmp_path, sets, suffix))
    return str(info.value)


def _yaml(text: str) -> object:
    return parse_inputs_text(text, "t.yaml")


# --- the faults, as the issue found them -------------------------------------------------------

def test_a_leading_zero_is_refused_not_read_as_octal(tmp_path: Path) -> None:
    message = _refused(tmp_path, "- inputs: {qty: 010, minutes: x, price: 1, ok: true}\n")  # was qty 8
    assert "p.inputs.yaml" in message and "'010' has a leading zero" in message and "octal (8)" in message
    assert "(line 1)" in message and "quote it" in message


def test_base_60_is_text_not_a_number(tmp_path: Path) -> None:
    assert _inputs(tmp_path, "- inputs: {qty: 2, minutes: 1:30, price: 1, ok: true}\n")["minutes"] == "1:30"  # was 90
    message = _refused(tmp_path, "- inputs: {qty: 1:30, minutes: x, price: 1, ok: true}\n")
    assert "inputs.qty" in message and "not a number: '1:30'" in message


def test_a_yaml_key_given_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    message = _refused(tmp_path, "- inputs:\n    qty: 5\n    minutes: x\n    qty: 500\n    price: 1\n    ok: true\n")  # was 500
    assert "p.inputs.yaml" in message and "duplicate key 'qty' (line 4)" in message


def test_a_json_key_given_twice_is_refused_with_its_line(tmp_path: Path) -> None:
    sets = '[{"inputs": {"qty": 5,\n  "minutes": "x", "price": 1, "ok": true,\n  "qty": 500}}]\n'
    message = _refused(tmp_path, sets, ".inputs.json")  # was 500
    assert "p.inputs.json" in message and "duplicate key 'qty' (line 3)" in message


def test_json_and_yaml_input_sets_side_by_side_are_refused_naming_both(tmp_path: Path) -> None:
    _suite(tmp_path, '[{"inputs": {"qty": 1, "minutes": "x", "price": 1, "ok": true}}]', ".inputs.json")
    (tmp_path / "p.inputs.yaml").write_text("- inputs: {qty: 7, minutes: x, price: 1, ok: true}\n", encoding="utf-8")
    with pytest.raises(ProcedureError) as info:  # the JSON file was ignored
        load_suite(tmp_path)
    assert "p.inputs.yaml" in str(info.value) and "p.inputs.json" in str(info.value) and "keep one" in str(info.value)


# --- neighbours: other notations ------------------------------------------------------------------

@pytest.mark.parametrize(("written", "says"), [
    ("0x1F", "hexadecimal"), ("0o17", "octal, which JSON"), ("0b101", "binary"), ("-010", "octal (-8)"),
    ("09", "reads it as text, YAML 1.2 as 9"), ("+007", "leading zero"),
])
def test_other_integer_notations_are_refused_naming_the_form(written: str, says: str) -> None:
    with pytest.raises(ProcedureError, match="line 1") as info:
        _yaml(f"qty: {written}\n")
    assert says in str(info.value) and repr(written) in str(info.value)


def test_a_quoted_or_tagged_text_keeps_its_zeros() -> None:
    assert _yaml('zip: "010"\ncode: !!str 0x1F\n') == {"zip": "010", "code": "0x1F"}


@pytest.mark.parametrize(("written", "value"), [
    ("25", 25), ("-3", -3), ("+1", 1), ("0", 0), ("25.00", Decimal("25.00")), (".5", Decimal("0.5")),
    ("+.5", Decimal("0.5")), ("1e3", Decimal("1E+3")), ("-0.20", Decimal("-0.20")), ("12.", Decimal("12")),
    ("10.0000000000000001", Decimal("10.0000000000000001")),
])
def test_plain_numbers_are_exact_and_keep_their_places(written: str, value: object) -> None:
    got = _yaml(f"n: {written}\n")["n"]  # type: ignore[index]
    assert got == value and type(got) is type(value)
    if isinstance(value, Decimal):
        assert got.as_tuple() == value.as_tuple()  # 25.00 stays 25.00, not 25.0 or 25


@pytest.mark.parametrize("written", ["1_000", "1:30", "yes", "Yes", "on", "off", "no", "y", "2024-03-05", "2024-03-05T10:00:00",
                                     "1,000", "0x", "12e", "Infinity", "nan"])
def test_yaml_1_1_forms_are_text_exactly_as_written(written: str) -> None:
    assert _yaml(f"s: {written}\n") == {"s": written}


def test_yaml_1_1_forms_are_refused_where_a_number_or_boolean_is_declared(tmp_path: Path) -> None:
    assert "inputs.qty: not a number: '1_000'" in _refused(tmp_path, "- inputs: {qty: 1_000, minutes: x, price: 1, ok: true}\n")
    assert "inputs.ok: expected true or false, got 'Yes'" in _refused(tmp_path, "- inputs: {qty: 1, minutes: x, price: 1, ok: Yes}\n")
    assert "inputs.ok" in _refused(tmp_path, "- inputs: {qty: 1, minutes: x, price: 1, ok: on}\n")
    assert "inputs.price: not a number: '2024-03-05'" in _refused(tmp_path, "- inputs: {qty: 1, minutes: x, price: 2024-03-05, ok: true}\n")


def test_a_date_reaches_a_string_input_as_its_text_not_a_date_object(tmp_path: Path) -> None:
    got = _inputs(tmp_path, "- inputs: {qty: 1, minutes: 2024-03-05, price: 1, ok: TRUE}\n")
    assert got["minutes"] == "2024-03-05" and type(got["minutes"]) is str and got["ok"] is True


@pytest.mark.parametrize("written", ["~", "null", "Null", "NULL", ""])
def test_null_is_none_and_refused_as_an_input_value(tmp_path: Path, written: str) -> None:
    assert _yaml(f"n: {written}\n") == {"n": None}
    assert "inputs.qty: no value (null)" in _refused(tmp_path, f"- inputs: {{qty: {written}, minutes: x, price: 1, ok: true}}\n")


def test_a_number_or_boolean_for_a_string_input_asks_for_quotes(tmp_path: Path) -> None:
    message = _refused(tmp_path, "- inputs: {qty: 1, minutes: 12.50, price: 1, ok: true}\n")
    assert 'inputs.minutes: expected text, got a number 12.50: in an inputs file, quote it ("12.50")' in message
    assert 'quote it ("true")' in _refused(tmp_path, "- inputs: {qty: 1, minutes: true, price: 1, ok: true}\n")


@pytest.mark.parametrize("written", [".inf", "-.inf", "+.INF", ".nan", ".NaN"])
def test_yaml_infinity_and_nan_are_refused(written: str) -> None:
    with pytest.raises(ProcedureError, match=r"is not a finite number \(line 1\)"):
        _yaml(f"n: {written}\n")


@pytest.mark.parametrize("written", ["NaN", "Infinity", "-Infinity"])
def test_json_nan_and_infinity_are_refused(written: str) -> None:
    with pytest.raises(ProcedureError, match=f"{written} is not a finite number"):
        parse_inputs_text(f'{{"n": {written}}}', "t.json", "json")


def test_json_numbers_are_exact() -> None:
    got = parse_inputs_text('{"a": 10.0000000000000001, "b": 25.00, "c": 1e3, "d": -7, "e": "0.20"}', "t.json", "json")
    assert got == {"a": Decimal("10.0000000000000001"), "b": Decimal("25.00"), "c": Decimal("1E+3"), "d": -7, "e": "0.20"}
    assert str(got["b"]) == "25.00"  # type: ignore[index]


def test_a_float_past_double_precision_reaches_the_procedure_exactly(tmp_path: Path) -> None:
    got = _inputs(tmp_path, '[{"inputs": {"qty": 3, "minutes": "x", "price": 10.0000000000000001, "ok": false}}]', ".inputs.json")
    assert got["price"] == Fraction(Decimal("10.0000000000000001"))  # json.loads gave the float 10.0


@pytest.mark.parametrize(("fmt", "written", "says"), [
    ("yaml", "1" * 401, "more than 400 digits"), ("json", "1" * 401, "more than 400 digits"),
    ("yaml", "1" * 5000, "more than 400 digits"), ("json", "1" * 5000, "more than 400 digits"),
    ("yaml", "1e99999999999", "exponent of more than 4 digits"), ("json", "1e99999999999", "exponent of more than 4 digits"),
    ("yaml", "1e9999", "past the bounds"), ("json", "-1.5e-9999", "past the bounds"),
])
def test_big_numbers_are_refused_clearly(fmt: str, written: str, says: str) -> None:
    text = f"n: {written}\n" if fmt == "yaml" else f'{{"n": {written}}}'
    with pytest.raises(ProcedureError) as info:
        parse_inputs_text(text, f"t.{fmt}", fmt)  # type: ignore[arg-type]
    assert says in str(info.value) and f"t.{fmt}" in str(info.value) and len(str(info.value)) < 300


# --- neighbours: duplicates nested, at the top, quoted differently ------------------------------------

@pytest.mark.parametrize(("text", "line"), [
    ("- id: a\n  id: b\n  inputs: {}\n", 2),  # in the input set itself
    ("- inputs: {qty: 1, 'qty': 2}\n", 1),  # plain and quoted spellings of one key
    ("- inputs:\n    qty: 1\n    nested: {a: 1, b: 2, a: 3}\n", 3),
    ('- {inputs: {qty: 1}}\n- inputs: {qty: 1, "qty": 1}\n', 2),  # same value twice is still twice
])
def test_yaml_duplicates_anywhere_are_refused_with_the_line(text: str, line: int) -> None:
    with pytest.raises(ProcedureError, match=rf"duplicate key '\w+' \(line {line}\)"):
        _yaml(text)


@pytest.mark.parametrize(("text", "line"), [
    ('[{"id": "a",\n"id": "b", "inputs": {}}]', 2),
    ('[{"inputs": {"a": {"x": 1,\n\n "x": 2}}}]', 3),
    ('[{"inputs": {"x": "\\"x\\": {", "x": 2}}]', 1),  # a string holding a key-like text does not confuse the line
    ('[{"inputs": {"\\u0078": 1, "x": 2}}]', 1),  # an escaped spelling of the same key
])
def test_json_duplicates_anywhere_are_refused_with_the_line(text: str, line: int) -> None:
    with pytest.raises(ProcedureError, match=rf"duplicate key '\w+' \(line {line}\)"):
        parse_inputs_text(text, "t.json", "json")


# --- neighbours: other ways in ------------------------------------------------------------------------

def test_yml_beside_yaml_is_refused_too(tmp_path: Path) -> None:
    _suite(tmp_path, "- inputs: {qty: 1, minutes: x, price: 1, ok: true}\n")
    (tmp_path / "p.inputs.yml").write_text("- inputs: {qty: 2, minutes: x, price: 1, ok: true}\n", encoding="utf-8")
    with pytest.raises(ProcedureError, match=r"2 input-sets files for one procedure: p\.inputs\.yaml, p\.inputs\.yml"):
        inputs_file(tmp_path / "p.yaml")


@pytest.mark.parametrize("text", ["d: !!timestamp 2024-03-05\n", "b: !!binary aGk=\n", "s: !!set {a: null}\n",
                                  "o: !!python/object:os.system {}\n", "x: !custom 1\n", "m: !!omap [{a: 1}]\n"])
def test_tags_beyond_the_core_are_refused(text: str) -> None:
    with pytest.raises(ProcedureError, match="is not accepted in an inputs file"):
        _yaml(text)


@pytest.mark.parametrize(("text", "says"), [
    ("n: !!int 0x1F\n", "not a whole number in decimal"), ("n: !!float .inf\n", "not a finite decimal"),
    ("n: !!bool yes\n", "not true or false"), ("n: !!null x\n", "is not null"),
])
def test_core_tags_check_their_text(text: str, says: str) -> None:
    with pytest.raises(ProcedureError, match=says):
        _yaml(text)


def test_aliases_and_merge_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProcedureError, match="aliases"):
        _yaml("- &a {qty: 1}\n- *a\n")
    assert "unknown keys ['<<']" in _refused(tmp_path, "- inputs: {qty: 1, minutes: x, price: 1, ok: true}\n  <<: {id: x}\n")


def test_keys_are_text() -> None:
    with pytest.raises(ProcedureError, match=r"a key must be text \(a name\), got 1 \(line 1\)"):
        _yaml("1: a\n")
    with pytest.raises(ProcedureError, match="a key must be text"):
        _yaml("true: a\n")


@pytest.mark.parametrize(("written", "ok"), [("7", True), ("first", True), ("1.50", False), ("true", False), ("~", False)])
def test_an_input_set_id_is_text_or_a_whole_number(tmp_path: Path, written: str, ok: bool) -> None:
    sets = f"- id: {written}\n  inputs: {{qty: 1, minutes: x, price: 1, ok: true}}\n"
    if ok:
        (case,) = load_suite(_suite(tmp_path, sets))
        assert case.id == f"p/{written}"
    else:
        assert "id is text or a whole number" in _refused(tmp_path, sets)


def test_load_inputs_file_reads_json_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"n": 1.10}', encoding="utf-8")
    (tmp_path / "a.yaml").write_text("n: 010\n", encoding="utf-8")
    assert load_inputs_file(tmp_path / "a.json") == {"n": Decimal("1.10")}
    with pytest.raises(ProcedureError, match="a.yaml"):
        load_inputs_file(tmp_path / "a.yaml")


def test_bench_run_refuses_a_duplicate_key_naming_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    folder = _suite(tmp_path / "s", "- inputs:\n    qty: 1\n    minutes: x\n    price: 1\n    ok: true\n    qty: 2\n")
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(folder), "--mode", "raw", "--model", "sim:perfect",
                                   "--out", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == ExitCode.PROCEDURE, res.output
    assert "p.inputs.yaml" in res.output and "duplicate key 'qty' (line 6)" in res.output


def test_the_production_suite_reads_as_before() -> None:
    suite = ROOT / "benchmarks" / "production"
    assert len(load_suite(suite)) > 0


# --- property: a value written in the file reaches the procedure exactly as written --------------------

_DIGITS = st.text("0123456789", min_size=1, max_size=25)
_INT_TEXT = st.builds(lambda sign, d: sign + (d.lstrip("0") or "0"), st.sampled_from(["", "-", "+"]), _DIGITS)
_DEC_TEXT = st.builds(lambda sign, i, f, e: sign + (i.lstrip("0") or "0") + "." + f + e, st.sampled_from(["", "-"]), _DIGITS,
                      st.text("0123456789", max_size=25), st.sampled_from(["", "e3", "E-5", "e+12"]))
_BOOL_TEXT = st.sampled_from(["true", "True", "TRUE", "false", "False", "FALSE"])
_TEXT = st.one_of(st.sampled_from(["010", "1:30", "yes", "on", "~", "null", "2024-03-05", "0x1F", "1_000", "25.00", "", " a ", "#x", "a: b"]),
                  st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "S", "Zs"]), max_size=30))


def _written(text: str, fmt: str, quoted: bool) -> str:
    """``text`` as it sits in the file: plain, or quoted (JSON's quoting is also YAML's double quotes)."""
    return json.dumps(text, ensure_ascii=False) if quoted else text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qty=_INT_TEXT, price=_DEC_TEXT, n=st.one_of(_INT_TEXT, _DEC_TEXT), ok=_BOOL_TEXT, minutes=_TEXT,
       fmt=st.sampled_from(["yaml", "json"]), quote=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()))
def test_a_written_value_reaches_the_procedure_exactly(qty: str, price: str, n: str, ok: str, minutes: str, fmt: str,
                                                         quote: tuple[bool, bool, bool, bool]) -> None:
    if fmt == "json":  # JSON has no plain +1, no 1. and only lower-case booleans
        qty, n = qty.lstrip("+"), n.lstrip("+")
        ok = ok.lower()
        price, n = (t.replace(".e", ".0e").replace(".E", ".0E") + ("0" if t.endswith(".") else "") for t in (price, n))
    fields = {"qty": _written(qty, fmt, quote[0]), "price": _written(price, fmt, quote[1]), "n": _written(n, fmt, quote[2]),
              "ok": _written(ok, fmt, quote[3]), "minutes": _written(minutes, fmt, True)}
    text = ("- inputs: {" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}\n" if fmt == "yaml"
            else "[{\"inputs\": {" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}}]")
    (item,) = parse_inputs_text(text, f"p.inputs.{fmt}", fmt)  # type: ignore[arg-type, misc]
    raw = item["inputs"]
    assert raw["minutes"] == minutes  # text stays text, every character
    for name, written, quoted in (("qty", qty, quote[0]), ("price", price, quote[1]), ("n", n, quote[2])):
        if quoted:
            assert raw[name] == written
        else:  # the declared type decides the form: an int, or a Decimal with the places written
            want = int(written) if "." not in written and "e" not in written.lower() else Decimal(written)
            assert raw[name] == want and type(raw[name]) is type(want)
            if isinstance(want, Decimal):
                assert raw[name].as_tuple() == want.as_tuple()
    bound = KINDS.bind_inputs(raw)
    assert bound["qty"] == int(qty) and type(bound["qty"]) is int
    assert bound["price"] == Fraction(Decimal(price)) and bound["n"] == Fraction(Decimal(n))
    assert bound["ok"] is (ok.lower() == "true")
    assert bound["minutes"] == minutes
