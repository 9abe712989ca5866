"""Fuzz the text kind against an oracle of its own (issue 33 must-show).

Replies are generated together with what they mean: a JSON text is built from a value tree, so the
oracle knows its exact value (numbers as written: ``Decimal`` as ``json`` would never give them),
and whether it is JSON at all (a ``NaN``, ``Infinity`` or a key given twice makes it not). The
oracle decides the verdict from that knowledge and the step's rules, never by calling the kind;
then the kind must agree, and what it commits, read back by ``Text.value_of``, must be the value
the oracle checked (the form a later step reads is the form the predicate saw).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
jsonschema = pytest.importorskip("jsonschema")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from stepguard.kinds import kind_of  # noqa: E402
from stepguard.kinds.text import verify_text  # noqa: E402
from stepguard.procedure import parse_procedure  # noqa: E402

pytestmark = pytest.mark.slow

TEXT_CHARS = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))  # one line: no line breaks


class Bad:
    """Marks a generated text that is not JSON here."""


NOT_JSON = Bad()


# ------------------------------------------------------------------------------- replies with a meaning
@st.composite
def numbers(draw: Any) -> tuple[str, Any]:
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.sampled_from(["0", "1", "7", "10", "123456789012345678901234567890"]))
    frac = draw(st.sampled_from(["", ".0", ".50", ".0000000000000001", ".5"]))
    exp = draw(st.sampled_from(["", "e5", "E+2", "e-3", "E400", "e-400", "E+99999"]))
    text = sign + whole + frac + exp
    return text, (Decimal(text) if frac or exp else int(text))


def _key(draw: Any) -> str:
    return draw(st.text(TEXT_CHARS, max_size=4))


def json_values(depth: int = 2) -> Any:
    leaf = st.one_of(
        numbers(),
        st.text(TEXT_CHARS, max_size=8).map(lambda s: (json.dumps(s, ensure_ascii=False), s)),
        st.text(TEXT_CHARS, max_size=8).map(lambda s: (json.dumps(s), s)),  # \\u escapes
        st.sampled_from([("true", True), ("false", False), ("null", None), ("null", None)]),
        st.sampled_from([("NaN", Bad()), ("Infinity", Bad()), ("-Infinity", Bad())] + [("0", 0), ("-1.5", Decimal("-1.5"))] * 6),
    )
    if depth == 0:
        return leaf
    inner = json_values(depth - 1)

    @st.composite
    def lists(draw: Any) -> tuple[str, Any]:
        items = draw(st.lists(inner, max_size=4))
        sep = draw(st.sampled_from([",", ", ", " ,\t"]))
        value: Any = [v for _, v in items]
        return "[" + sep.join(t for t, _ in items) + "]", value

    @st.composite
    def objects(draw: Any) -> tuple[str, Any]:
        pairs = [(_key(draw), draw(inner)) for _ in range(draw(st.integers(0, 3)))]
        if pairs and draw(st.integers(0, 5)) == 0:
            pairs.append((pairs[0][0], draw(inner)))  # a key given twice
        keys = [k for k, _ in pairs]
        value: Any = Bad() if len(set(keys)) < len(keys) else {k: v for k, (_, v) in pairs}
        return "{" + ", ".join(f"{json.dumps(k)}: {t}" for k, (t, _) in pairs) + "}", value

    return st.one_of(leaf, leaf, lists(), objects())  # a top-level leaf often: null, NaN, 1E+99999 alone


def _is_bad(value: Any) -> bool:
    if isinstance(value, Bad):
        return True
    if isinstance(value, list):
        return any(_is_bad(v) for v in value)
    if isinstance(value, dict):
        return any(_is_bad(v) for v in value.values())
    return False


# ---------------------------------------------------------------------------------------- the oracle
def _seen(value: Any, top: bool = True) -> Any:
    """What the predicate and a later step read: a list as a tuple, a top-level number exact."""
    if isinstance(value, list):
        return tuple(_seen(v, False) for v in value)
    if isinstance(value, dict):
        return {k: _seen(v, False) for k, v in value.items()}
    if top and isinstance(value, Decimal):
        f = Fraction(value)
        return f.numerator if f.denominator == 1 else f
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal in value and in form: a bool is no number, a Decimal keeps its exponent, a tuple is no list."""
    if type(a) is not type(b) and not (isinstance(a, (int, Fraction)) and isinstance(b, (int, Fraction))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return False
    if isinstance(a, Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _compact(value: Any) -> str:
    """The committed JSON text, written here apart: ", " and ": ", a number as Decimal writes it (a
    Decimal whose text has no point or exponent with ``E+0``, so JSON reads it back as no integer)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return str(value) if set(str(value)) & set(".E") else f"{value}E+0"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _digits_out(d: Decimal) -> int:
    t = d.as_tuple()
    return len(t.digits) + abs(int(t.exponent))


PREDICATES = {  # source -> the oracle's reading of it on the value seen (None: the check cannot read it)
    None: lambda v: True,
    "len(value) >= 2": lambda v: len(v) >= 2 if isinstance(v, (str, tuple, dict)) else None,
    "len(value) <= 3": lambda v: len(v) <= 3 if isinstance(v, (str, tuple, dict)) else None,
}
SCHEMAS = [None, {"type": "object"}, {"type": "array", "items": {"type": "string"}}, {"type": "integer", "maximum": 10},
           {"type": "object", "properties": {"n": {"type": "number", "maximum": 10}}}, {"type": "string", "maxLength": 3}]


def oracle(step: dict[str, Any], rhs: str, meaning: Any) -> tuple[bool, Any]:
    """``(verified, the value seen)`` for step ``step`` and the reply ``t = rhs``."""
    fmt = step.get("format", "text")
    if fmt == "text":
        text = rhs.strip()
        m = re.fullmatch(r"([\"'`])(.*)\1", text, re.S)
        if m:
            text = m.group(2).strip()
        if not text:
            return False, None
        items, size, seen = [text], len(text), text
    else:
        if _is_bad(meaning):  # not JSON (the generator knows)
            return False, None
        value = meaning
        if fmt == "list":
            if not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
                return False, None
            items, size = list(value), len(value)
        else:
            if isinstance(value, Decimal) and _digits_out(value) > 1000:
                return False, None
            items, size = [], len(_compact(value))
            if step.get("schema") is not None and not jsonschema.Draft202012Validator(step["schema"]).is_valid(value):
                return False, None
        seen = _seen(value)
    if step.get("min_length") is not None and size < step["min_length"]:
        return False, None
    if step.get("max_length") is not None and size > step["max_length"]:
        return False, None
    for item in items:
        if step.get("pattern") is not None and not re.fullmatch(step["pattern"], item):
            return False, None
        if step.get("choices") is not None and item not in step["choices"]:
            return False, None
    verdict = PREDICATES[step.get("check")](seen)
    return bool(verdict), seen


@st.composite
def cases(draw: Any) -> tuple[dict[str, Any], str, Any]:
    fmt = draw(st.sampled_from(["text", "list", "json"]))
    step: dict[str, Any] = {"var": "t", "kind": "text", "format": fmt}
    def sometimes() -> bool:
        return draw(st.integers(0, 3)) == 0

    for rule, strategy in (("min_length", st.integers(0, 6)), ("max_length", st.integers(0, 200)),
                           ("check", st.sampled_from([k for k in PREDICATES if k]))):
        if sometimes():
            step[rule] = draw(strategy)
    if fmt != "json" and sometimes():
        step["pattern"] = draw(st.sampled_from([r"[a-z]+", r".*", r"\w{1,3}", r"[0-9.eE+-]+"]))
    if fmt != "json" and sometimes():
        step["choices"] = draw(st.lists(st.sampled_from(["a", "ab", "é", "ok", "1"]), min_size=1, max_size=3, unique=True))
    if fmt == "json":
        schema = draw(st.sampled_from(SCHEMAS))
        if schema is not None:
            step["schema"] = schema
    if fmt == "text" or draw(st.integers(0, 9)) == 0:
        rhs = draw(st.one_of(st.text(TEXT_CHARS, max_size=12), st.sampled_from(["a", "ab", "é", "ok", "1", " ok ", "x y"])))
        if draw(st.booleans()):
            q = draw(st.sampled_from(['"', "'", "`"]))
            rhs = q + rhs + q
        meaning = _junk_meaning(rhs) if fmt != "text" else NOT_JSON
    else:
        rhs, meaning = draw(json_values() if fmt == "json" else st.one_of(json_values(1), _string_lists(), _string_lists()))
    return step, rhs, meaning


@st.composite
def _string_lists(draw: Any) -> tuple[str, Any]:
    items = draw(st.lists(st.sampled_from(["a", "ab", "é", "ok", "1", "", "x y"]), max_size=4))
    return json.dumps(items, ensure_ascii=draw(st.booleans())), items


def _junk_meaning(rhs: str) -> Any:
    """Free text given where JSON is asked: what it means, read here by the standard library (strict)."""
    def pairs(ps: list[tuple[str, Any]]) -> Any:
        return Bad() if len({k for k, _ in ps}) < len(ps) else dict(ps)

    def no_constant(_: str) -> Any:
        return Bad()

    try:
        return json.loads(rhs.strip().strip("`"), parse_float=Decimal, parse_constant=no_constant, object_pairs_hook=pairs)
    except ValueError:
        return NOT_JSON


def _procedure(step: dict[str, Any]) -> Any:
    return parse_procedure("name: fuzz\ninputs: {a: integer}\nsteps:\n  - " + json.dumps(step) + "\n")


_J = {"var": "t", "kind": "text", "format": "json"}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
@example(({**_J, "check": "len(value) >= 2"}, "null", None))  # was checked as the text "null": verified
@example((_J, "1E+99999", Decimal("1E+99999")))  # was a traceback out of the kind
@example((_J, "-0.000E-400", Decimal("-0.000E-400")))
@example(({**_J, "schema": {"type": "object", "properties": {"n": {"type": "number", "maximum": 10}}}}, '{"n": NaN}', Bad()))
@example(({**_J, "schema": {"type": "integer", "maximum": 10}}, "10.0000000000000001", Decimal("10.0000000000000001")))
@example((_J, '{"n": 500, "n": 5}', Bad()))
@example(({**_J, "check": "len(value) <= 3"}, '{"a": [1, {"b": 1E+99999}]}', {"a": [1, {"b": Decimal("1E+99999")}]}))
@example(({"var": "t", "kind": "text", "format": "list", "choices": ["é"]}, '["\\u00e9"]', ["é"]))
@example((_J, "[0,0.50E+2]", [0, Decimal("50")]))  # was committed as [0, 50]: read back as an integer
def test_a_verified_text_value_is_the_oracles_and_reads_back_as_checked(case: tuple[dict[str, Any], str, Any]) -> None:
    step, rhs, meaning = case
    proc = _procedure(step)
    verdict = verify_text(proc, 0, {"a": 1}, f"t = {rhs}")
    want_ok, want_seen = oracle(step, rhs.strip(" \t"), meaning)
    assert (verdict.deviation is None) == want_ok, (step, rhs, verdict.deviation)
    if want_ok:
        committed = verdict.value
        assert isinstance(committed, str)
        read_back = kind_of(proc.steps[0]).value_of(proc.steps[0], committed)
        assert _same(read_back, want_seen), (committed, read_back, want_seen)
        if step["format"] == "json":
            assert committed == _compact(meaning)
