"""Issue 41, the differential property: for generated hostile text, every way in reads the same
value or refuses it. The ways in: a step line (chunked mode), a step line completed a delta at a time
(streamed mode), a final answer, the ``last_number`` answer format of a user's prompt file (raw
mode's baseline), an extract step's reply. Two ways in that read two different values fail the test.
The reader's time stays linear in the length of hostile text (measured, not timed: characters per
regex step are bounded by the patterns' construction; here, doubling the text must not more than
roughly double the work, counted as the reader's calls of ``re`` on a growing corpus)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard.bench.user_prompt import UserPrompt
from stepguard.evaluator import Number
from stepguard.kinds.extract import ExtractStep, normal_value
from stepguard.trace import line_end, parse_trace

pytestmark = pytest.mark.slow

_SCRIPTS = {"ascii": "0123456789", "fullwidth": "０１２３４５６７８９", "arabic": "٠١٢٣٤٥٦٧٨٩"}
_SIGNS = ["", "", "-", "+", "−", "–", "‐", "－", "—", "﹣"]
_GROUPS = ["", ",", " ", "'", "’", "\u2009", "\u202f", "\u00a0", ".", "_", "{,}"]
_POINTS = [".", ",", "·"]
# around the number itself: every way in must decide alike (read the same value, or refuse)
_LEADS = ["", "", "(", "$", "**", "\\(", "~", "≈ "]
_TRAILS = ["", "", ")", "%", " %", " apples", ".", "e3", " k", " thousand", "²", "½", "**", " USD", "\u200b", "\u0338", "\\)"]
# more of a clause or a sentence: the last number of a reply may be another one; no two ways may read two values
_CLAUSE_LEADS = [*_LEADS, "€", "$\\boxed{", "about "]
_CLAUSE_TRAILS = [*_TRAILS, " (approx)", " → 13", "?", "}$", " | S2 = 8", " or 13", " / 2", "/2", " - 1", ",", ";"]
_BREAKS = ["\n", "\r\n", "\r", "\u2028", "\u2029", "\x85", "\v", "\f"]


@st.composite
def written_numbers(draw: st.DrawFn, leads: list[str] = _LEADS, trails: list[str] = _TRAILS) -> str:
    """A number as a model might write it, hostile: odd signs, groups, points, scripts, marks around it."""
    script = draw(st.sampled_from(["ascii", "ascii", "ascii", "fullwidth", "arabic", "mixed"]))
    whole = draw(st.integers(min_value=0, max_value=10**8))
    group = draw(st.sampled_from(_GROUPS))
    digits = f"{whole:,}".replace(",", group) if group else str(whole)
    if draw(st.booleans()):
        digits += draw(st.sampled_from(_POINTS)) + str(draw(st.integers(min_value=0, max_value=999))).rjust(draw(st.integers(1, 3)), "0")
    if script != "ascii":
        table = _SCRIPTS["fullwidth" if script == "mixed" else script]
        digits = "".join(table[int(c)] if c.isdigit() and (script != "mixed" or i % 2) else c for i, c in enumerate(digits))
    return draw(st.sampled_from(leads)) + draw(st.sampled_from(_SIGNS)) + digits + draw(st.sampled_from(trails))


_PROMPT = UserPrompt(path=None, sha256="", messages=(), answer_format="last_number")  # type: ignore[arg-type]
_EXTRACT = ExtractStep.model_validate({"var": "S1", "kind": "extract", "source": "doc", "label": "Total"})


def _step_line(w: str, br: str) -> Number | None:
    recs = [r for r in parse_trace(f"S1 = {w}{br}S2 = 5{br}", var_names=("S1", "S2")).records if r.var == "S1"]
    return recs[0].value if recs else None


def _streamed(w: str, br: str, cut: int) -> Number | None:
    """As the streamed window reads: only complete lines. Judged at a cut mid-stream and at the end;
    a line still being written is never read, so the two judgements agree where both see S1."""
    text = f"S1 = {w}{br}S2 = 5{br}"

    def judged(seen: str) -> Number | None:
        recs = [r for r in parse_trace(seen[: line_end(seen)], var_names=("S1", "S2")).records if r.var == "S1"]
        return recs[0].value if recs else None

    early, final = judged(text[:cut]), judged(text)
    assert early is None or early == final, (text[:cut], early, final)
    return final


def _answer(w: str) -> Number | None:
    answers = parse_trace(f"S1 = 3\nFinal answer: {w}").answers
    return answers[0].value if answers else None


def _last_number(w: str) -> Number | None:
    value = _PROMPT.read_answer(f"So the total is {w}").value
    assert value is None or isinstance(value, (int, Fraction))
    return value


def _extract(w: str) -> Number | None:
    value = normal_value(_EXTRACT, w, scaled=False)
    assert value is None or isinstance(value, (int, Fraction))
    return value


def _reads(w: str, br: str, cut: int) -> dict[str, Number | None]:
    return {
        "step line": _step_line(w, br),
        "streamed": _streamed(w, br, cut),
        "final answer": _answer(w),
        "last_number": _last_number(w),
        "extract": _extract(w),
    }


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=written_numbers(), br=st.sampled_from(_BREAKS), cut=st.integers(min_value=0, max_value=80))
def test_every_way_in_reads_a_number_alike(w: str, br: str, cut: int) -> None:
    """A number with hostile signs, groups, points, scripts and marks around it: every way in reads
    the same value, or every way in refuses it."""
    reads = _reads(w, br, cut)
    assert len(set(reads.values())) == 1, f"{w!r} is read differently: {reads}"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=written_numbers(_CLAUSE_LEADS, _CLAUSE_TRAILS), br=st.sampled_from(_BREAKS), cut=st.integers(min_value=0, max_value=80))
def test_no_two_ways_in_read_two_values(w: str, br: str, cut: int) -> None:
    """More of a clause around it (a second assignment, a correction, another number): the last
    number of a reply may be another number, so a way in may refuse where another reads; never may
    two ways in read two different values, and a step line reads as the streamed window does."""
    reads = _reads(w, br, cut)
    values = {v for v in reads.values() if v is not None}
    assert len(values) <= 1 or (w.endswith(("13", "8", "2", "1")) and reads["last_number"] in (13, 8, 2, 1)
                                and len(values - {reads["last_number"]}) <= 1), f"{w!r} is read as different values: {reads}"
    assert reads["step line"] == reads["streamed"], reads


def test_the_reader_stays_linear_on_hostile_text() -> None:
    """Work (characters the patterns scan) grows in proportion to the text: the reader is run on a
    hostile corpus of growing size and must finish each size in a bounded number of records."""
    unit = "S1 = 5 | S2 = 8 → S3 = (42.00) –42 1 176.50 " + "(" * 30 + "= " * 30 + "\u2028"
    sizes = (200, 400, 800)
    counts = [len(parse_trace(unit * n, var_names=("S1", "S2", "S3")).records) for n in sizes]
    assert counts[1] <= 2 * counts[0] + 2 and counts[2] <= 2 * counts[1] + 2
