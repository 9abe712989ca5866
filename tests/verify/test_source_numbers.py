"""An extract step's value must occur in the source as a whole number read exactly: never a part of
a number (``1.234,56`` is not 1.234), never with its sign dropped (``–18.86``), never with a scale
ignored (``12 thousand``); a number that could mean two values supports neither."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, parse_procedure
from stepguard.kinds import verify_extract
from stepguard.verify._source_numbers import scan_numbers
from tests._fakes import ReplyModel

F = Fraction


@pytest.mark.parametrize("text,exact", [
    ("Total: $1,234.50", [F(2469, 2)]),
    ("Gesamt: 1.234,50 EUR", [F(2469, 2)]),
    ("Total: 1 234,50", []),  # plain-space groups: one number or two
    ("Total\u00a01\u202f234.50", [F(2469, 2)]),  # narrow no-break space groups are groups
    ("CHF 1'234.50", [F(2469, 2)]),
    ("Total: –18.86", [F(-943, 50)]),  # en dash, minus sign, full-width and small hyphen-minus
    ("−18.86 －2 ﹣3", [F(-943, 50), -2, -3]),
    ("pages 10 to 20", [10, 20]), ("pages 10–20, 2024-03-05", []),  # joined by a mark: parts of something else
    ("(18.86)", []), ("18.86-", []), ("– 18.86", []),  # credit or not: both signs possible
    ("12 thousand", []), ("3 Mio", []), ("12 ½", []), ("6 万", []), ("12½", []), ("5²", []), ("5 k", []),
    ("1,234", []), ("1.234", []),  # alone: 1234 or 1.234
    ("1,234 of 5.50", [1234, F(11, 2)]), ("1.234 of 5,50", [1234, F(11, 2)]),  # the document's own convention
    ("12,5", [F(25, 2)]), ("0,81", [F(81, 100)]),  # only a decimal comma reads these
    ("1,23,456", []), ("12.5.3", []), ("05.03.2024", []),
    ("VAT 7%: 0,81", [F(81, 100)]), ("Weight (72.5 kg)", [F(145, 2)]), ("INV-2024", [2024]),
    # the breaker's second round
    ("Total: -$18.86", [F(-943, 50)]), ("−€ 18,86", [F(-943, 50)]), ("—18.86", [F(-943, 50)]),
    ("CHF 1’234.50", [F(2469, 2)]), ("1\u2007234.50", []), ("1\t234.50", []), ("1\u3000234.50", []),
    ("1\u066c234\u066b50", []), ("1·234,50", []), ("3/4", []), ("1 1/2", []), ("2^10", []), ("12**2", []),
    ("1.5×10³", []), ("12 Millionen", []), ("18.86 CR", []), ("- \u00a018.86", []),
    # issue 33: a percent has no value of its own until a reader declares one (15% is 0.15 or 15)
    ("15%", []), ("15 %", []), ("7 percent", []), ("3‰", []), ("5 bp", []),
    ("5 March 2024", []), ("March 5, 2024", []), ("May 2024", []), ("5 mayors", [5]),  # a date's day and year are not numbers
])
def test_numbers_are_read_whole_or_not_at_all(text: str, exact: list) -> None:
    assert scan_numbers(text).exact == exact


def test_the_whole_document_decides_the_decimal_mark() -> None:
    assert scan_numbers("Total: 1,234").exact == []
    assert scan_numbers("Total: 1,234", context="Shipping: 4.50\nTotal: 1,234").exact == [1234]
    assert scan_numbers("Total: 1,234", context="Versand: 4,50\nTotal: 1,234").exact == [F(617, 500)]


RECEIPT = parse_procedure("""
inputs: {receipt_text: string}
steps:
  - {var: total, kind: extract, source: receipt_text, label: Total, type: decimal, scale: 2}
  - {var: tax, kind: extract, source: receipt_text, label: VAT, type: decimal, scale: 2}
  - {var: subtotal, expr: total - tax, type: decimal, scale: 2}
""")


@pytest.mark.parametrize("text,reply,kind", [
    ("Total: 1.234,56 EUR\nVAT: 0,81 EUR", "total = 1.234", "not_in_source"),  # a part of the number
    ("Total: 1.234,56 EUR\nVAT: 0,81 EUR", "total = 56", "not_in_source"),
    ("Total: 1.234,56 EUR\nVAT: 0,81 EUR", "total = 1234.56", None),
    ("CREDIT NOTE Total: –18.86", "total = 18.86", "not_in_source"),  # its sign dropped
    ("CREDIT NOTE Total: –18.86", "total = -18.86", None),
    ("Total: (18.86)", "total = 18.86", "not_in_source"),
    ("Total: 12 thousand", "total = 12", "not_in_source"),
    ("Total: 1 234.56", "total = 234.56", "not_in_source"),
])
def test_an_extracted_value_is_a_whole_number_of_the_source(text: str, reply: str, kind: str | None) -> None:
    verdict = verify_extract(RECEIPT, 0, {"receipt_text": text}, reply)
    assert (verdict.deviation.kind if verdict.deviation else None) == kind, verdict.deviation


def test_the_refusal_names_the_ambiguous_number() -> None:
    verdict = verify_extract(RECEIPT, 0, {"receipt_text": "Total: 1,234"}, "total = 1234")
    assert verdict.deviation is not None and "'1,234' there could mean more than one value" in verdict.deviation.detail


def test_a_european_receipt_read_in_part_is_never_verified() -> None:
    """The tester's case: 1.234 and 0 read out of 1.234,56 and 0,81 ended verified with subtotal 1.23."""
    model = ReplyModel(["total = 1.234", "tax = 0", "subtotal = 1.23 - 0 = 1.23"] * 4)
    result = Guard(model, GuardConfig(max_reprompts_per_step=1, on_exhausted="flag")).run(
        RECEIPT, {"receipt_text": "Gesamtbetrag / Total: 1.234,56 EUR\nVAT 7%: 0,81 EUR"})
    assert result.status != "verified"
    assert result.steps[0].provenance != "model_verified"


@pytest.mark.parametrize("text,reply,kind", [
    ("Total (incl. VAT 7%): 18.86", "total = 7", "not_in_source"),  # the label points at no number
    ("Total: 18.86\nTotal savings: 5.00", "total = 5.00", "not_in_source"),
    ("Total: 18.86\nTotal savings: 5.00", "total = 18.86", None),
    ("Total (EUR): 18,86", "total = 18.86", None), ("Total: EUR 1.234,56", "total = 1234.56", None),
    ("REFUND\nTotal: -$18.86", "total = 18.86", "not_in_source"), ("Total: CHF 1’234.50", "total = 1", "not_in_source"),
])
def test_a_label_points_at_the_number_right_after_it(text: str, reply: str, kind: str | None) -> None:
    verdict = verify_extract(RECEIPT, 0, {"receipt_text": text}, reply)
    assert (verdict.deviation.kind if verdict.deviation else None) == kind, verdict.deviation


@pytest.mark.slow
def test_a_megabyte_of_numbers_is_read_in_bounded_work() -> None:
    """Bounded work, not a time: every token is read once and the document's convention once."""
    import stepguard.verify._source_numbers as sn

    calls = {"n": 0}
    real = sn._grouped

    def counting(*args: object) -> object:
        calls["n"] += 1
        return real(*args)  # type: ignore[arg-type]

    sn._grouped = counting  # type: ignore[assignment]
    try:
        found = scan_numbers("1 " * 500_000)
        doc = "\n".join(["Total: 1234.56"] * 60_000)
        verify_extract(RECEIPT, 0, {"receipt_text": doc}, "total = 1234.56")
    finally:
        sn._grouped = real  # type: ignore[assignment]
    assert len(found.exact) == 500_000  # "1 1": no groups of three, so ones
    assert calls["n"] <= 2 * 60_000 * 2 + 10  # two conventions a decimal token, the document once more for its convention
