"""Model text -> :class:`Trace`: step records and final answers, by linear-time regexes only.

Nothing here evaluates model text. Every regex is free of nested or overlapping quantifiers (the
adjacent ones are possessive, Python 3.11+), so matching is linear in the text length; the text is
capped at ``max_chars`` and numbers at ``max_digits`` before any ``int()``.

Line rules (benchmark.md lists the canonical forms; the rest are *ours*, see docs/benchmark.md):

* A step line starts, after optional indentation, ``>``, a list marker (``-``, ``*``, ``+``,
  ``•``, ``7.``, ``7)``), emphasis/code/math marks (``*``, ``_``, `````, ``$``), an optional
  correction word (``Actually,``, ``Wait,``, ``(wait,``, ``Sorry,``, ``I mean``: the step written
  again, so a withdrawn value is seen as one) and an optional ``Step 7:`` prefix, with a
  variable name, then ``=`` (or ``:``), then the right-hand side.
* Variable names: ``S<digits>`` (also ``S_7``, ``S_{7}``; all read as ``S7``) plus ``var_names``.
* The right-hand side is split at ``=``: the value is the number that *starts* the last part
  (``S7 = S6 + S2 = 40 + 2 = 42`` -> 42), read whole or not at all; a last part that is an
  unevaluated expression (an operator then a name, a number or nothing: ``40 + 2``, ``7 - b``,
  ``7 + S3``, ``7 *``, ``12/5``, ``2**10``) or has no number gives ``value=None``. The first part with letters is the
  ``expression``; the first all-numeric middle part (the substitution) gives the ``operands``.
* ``S7: 42`` is a step line only if a number is read (so ``S7: add S6 and S2`` is prose).
* Several assignments on one line: a clause runs from ``var =`` (or ``var:``) to the next clause
  that assigns another variable or the line's end. A clause starts after ``,``/``;``
  (``S1 = 3, S2 = 5``), or after a value with only blanks (and ``and``/``then``) between
  (``S1 = 3 S2 = 5``, ``a = small b = large``); a name after an operator (``S6 + S2 = 42``)
  continues the chain. Each record is read from its own clause only (:attr:`Record.rhs`).
* Numbers (:func:`stepguard.evaluator.read_number`, docs/hostile-input.md): sign (``-``, ``+``,
  U+2212), decimal digits of one script, thousands groups (``1,234``, ``1{,}234``, ``1\\,234``,
  thin spaces; a first group of 1-3 digits not starting with 0, then groups of exactly 3),
  decimals (``3.50`` -> 7/2 exactly, ``42.0`` -> 42). A number is read exactly or not at all,
  never its prefix: ``12,5``, ``1176,50``, ``1,17`` give ``value=None`` with ``error``
  ``"ambiguous number"``; ``12.5.3``, ``1e5``, ``0x1F``, ``12 500``, ``1٢`` give
  ``"unreadable number"``; ``12%`` gives ``"percentage"``.
* The rest of the clause after the value may hold only plain text (``42.``, ``**42**``,
  ``42 apples``, ``3, which is odd``): no digit (``12 (carry 1)``: ``"more than one number"``;
  ``12\\;000``, ``12 ,5``: ``"unreadable number"``), no number word or multiplier (``12
  thousand``, ``12 k``, ``12 dozen``, ``12 squared``: ``"number word"``), no percent (``12 pct``),
  no operator (``12 x 2``, ``12 mod 5``, ``12 R 1``, ``12:5``, ``*``, ``-``: ``"unevaluated
  expression"``), no arrow, relation or hedge (``12 -> 13``, ``12 or 13``, ``12 ≈ 12.4``,
  ``12?``, ``12 (approx)``: ``"correction or hedge"``), no combining mark or invisible format
  character (``12\\u0338``, ``12\\u200b``). Such a record has ``value=None`` and is kept even when a
  later line gives the step a value (the guard re-asks); a valueless working line (``S3 = S1 - S2``,
  ``S3 = 12 - 12``) before the value is a restatement and dropped.
* Final answers: ``Final answer:`` / ``Final answer is`` / ``Answer:`` / ``\\boxed{...}``,
  case-insensitive, in generation order; the value follows on the same line (or the next, if
  the rest of the line is blank); ``Final answer: S95 = 42`` reads 42. The value follows the
  same rules as a record's: ``Final answer: 12 or 13`` has no value.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from fractions import Fraction
from functools import lru_cache

from stepguard.errors import EvaluationError
from stepguard.evaluator import NUMBER_BODY, SIGNS, Number, read_number
from stepguard.trace._numbers import DASHES
from stepguard.trace._records import Answer, Record, Trace
from stepguard.trace._scale import _SCALE_LETTERS, _SCALE_WORDS, _W0, _W1

__all__ = ["NOT_ONE_VALUE", "line_end", "parse_trace"]

_S_NAME = r"S(?:_\{(?P<k1>\d{1,9}+)\}|_?(?P<k2>\d{1,9}+))"
_IDENT = r"[A-Za-z][A-Za-z0-9_]{0,63}+"
_NAME_TAIL = r"(?![A-Za-z0-9_])[*_`$ \t]*+"
# a correction word may open a step line ("Actually, S3 = 13", "(wait, S3 = 13)"): the step written
# again, read as a record, so a value it withdraws is never committed as the model's
_CORRECTION_OPENER = (
    r"(?:\(?(?i:actually|wait|correction|corrected|sorry|oops|no|i[ \t]mean|rather|instead)(?![A-Za-z])"
    r"[*_`$ \t]*+[,:;.!]?[*_`$ \t]*+)?"
)
_PREFIX = (
    r"^[ \t>]*+(?:(?:[-*+•]|\d{1,9}+[.)])[ \t]++)?[*_`$ \t]*+" + _CORRECTION_OPENER +
    r"(?:(?i:step)[ \t]*+\d{1,9}+[ \t]*+[:.)\-–]?[*_`$ \t]*+)?"
)
_NUM = re.compile(
    r"[ \t*_`$]*+(?:\\[(\[][ \t]*+)?(?:\\boxed[ \t]*+\{)?[ \t*_`$]*+(?P<paren>\([ \t]*+)?"
    rf"(?P<sign>[{SIGNS}]?)[ \t]*+{NUMBER_BODY}"
)
# a value whose sign is a dash that is no minus sign (–42, ‐42, －42): refused as "unknown dash"
_DASHED = re.compile(rf"[ \t*_`$]*+(?:\\[(\[][ \t]*+)?(?:\\boxed[ \t]*+\{{)?[ \t*_`$]*+\(?[ \t]*+[{DASHES}][ \t]*+\d")
# every line break str.splitlines knows but "\n" (a "\r" before "\n" stays: "\r\n" is one break)
_PAREN_CLOSE = re.compile(r"[ \t*_`$]*+\)")
_BREAKS = re.compile("\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# What may not follow a number's last digit: more of a number it did not read exactly.
_AMBIGUOUS = re.compile(r"(?:,|\{,\}|\\,|[\u00a0\u2009\u202f])\d")  # 12,5  1176,50  1,17  12{,}5
_RUN_ON = re.compile(r"[^\W_]|_\w|[.'’]\d|[ \t]++\d")  # 1e5 0x1F 4٢ 1_000 12.5.3 1'000 12 500
_PERCENT = re.compile(r"[ \t]*+(?:\\?%|‰|‱|(?i:per[ \t]?cent)(?![a-z]))")
_CLOSE = re.compile(r"(?:[*_`$)\]}]|\\[)\]])*+")  # closing marks right after the digits: **42**, (40), $7$
# an operator followed by an operand (a number, a name, a bracket): 7 - b, 40 + 2, 2**10; or by nothing: 7 *
_OPERATOR = r"[ \t]*+(?:(?:\*\*|[-+*/×÷^−–·⋅]|\\(?:cdot|times|div)(?![A-Za-z]))[ \t]*+)++"  # 7 - -2, 7 -/ 3
_EXPR_TAIL = re.compile(_OPERATOR + r"[*_`$]*+(?:[\w(\\]|\.\d|[-+−–][ \t]*+[\d(])")  # 40 + **2**
_TIGHT = re.compile(r"\*{1,2}+[\w(]")  # 2**10, 7*b; while **42** and *42* (carry) close emphasis
_DANGLING = re.compile(_OPERATOR + r"(?:[ \t\r*_`$)\]}]|\\[)\]])*+\Z")
_PLAIN = re.compile(r"[ \t]*+(-?[0-9]++)[ \t\r]*+")  # fast path: " 42", the requested format
_BINARY = re.compile(  # fast path: "40 + 2", "-159 - (-12)"
    r"[ \t]*+\(?[ \t]*+(-?[0-9]++)[ \t]*+\)?[ \t]*+[-+*/×÷][ \t]*+\(?[ \t]*+(-?[0-9]++)[ \t]*+\)?[ \t\r]*+"
)
# What the rest of a value's clause may not hold (the value must be all the clause says): the
# leftmost offender names the error. Words match whole and in any case (ASCII letters around them).
_NUMBER_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|point|"
    + _SCALE_WORDS
)
_TAIL = re.compile(
    r"(?P<digit>\d)"
    r"|(?P<percent>[%％٪‰‱⁒]|" + _W0 + r"per[ \t]?cent|per[ \t]?mille|pct|pc|pp|percentage[ \t]+points?|prozent|"
    r"pour[ \t]?cent|por[ \t]?ciento|per[ \t]?cento|procent|percento" + _W1 + ")"
    r"|(?P<word>" + _W0 + _NUMBER_WORDS + "|" + _SCALE_LETTERS + _W1 + ")"
    r"|(?P<hedge>->|=>|<-|[→⇒⟶⟹←↦~∼≈≃≅±∓<>≤≥≠?…]|!=|\.\.|\\(?:approx|sim|simeq|pm|mp|to|rightarrow|Rightarrow|"
    r"ne|neq|le|leq|ge|geq|lt|gt)(?![A-Za-z])|" + _W0 + r"or|approx|approximately|about|around|roughly|nearly|"
    r"almost|circa|ca|maybe|perhaps|possibly|wait" + _W1 + ")"
    r"|(?P<op>[*×✕✖∗/⁄∕÷\-‒–—―−+^·⋅:]|\\(?:times|cdot|div|bmod|pmod|mod|frac)(?![A-Za-z])|"
    + _W0 + r"x|times|plus|minus|over|mod|(?-i:R)" + _W1 + ")"
    # every other arrow or mathematical relation sign, negated ones too (12 ↛, 12 ≯, 12 ⇏, 12 ⬄): Unicode's
    # Arrows, Mathematical Operators, Supplemental Arrows A and B, Miscellaneous Mathematical Symbols B,
    # Supplemental Mathematical Operators and Miscellaneous Symbols and Arrows blocks
    r"|(?P<relation>[\u2190-\u21ff\u2200-\u22ff\u27c0-\u27ff\u2900-\u2aff\u2b00-\u2bff])",
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(r"[ \t\u00a0\u2009\u202f]*+([^\W\d_]+)")


def _latin(word: str) -> bool:
    """Is ``word`` written in Latin letters (``kg``, ``Euro``, ``Stück``)? Letters of other scripts are not."""
    return all(c.isascii() or "LATIN" in unicodedata.name(c, "") for c in word)


_TAIL_WHY = {
    "percent": "percentage",
    "word": "number word",
    "hedge": "correction or hedge",
    "op": "unevaluated expression",
    "relation": "correction or hedge",
}
_LETTER_BEFORE = re.compile(r"[^\W\d_]")


def _tail_problem(tail: str) -> str | None:
    """Why ``tail``, the rest of a value's clause, makes the value unreadable; None if it is plain text.

    Read in NFKC form (``﹪`` is ``%``, ``Ｋ`` is ``K``, ``½`` is ``1⁄2``). Refused: a digit
    (``"unreadable number"`` when only separators come between, ``12\\;000``, ``12 ,5``; ``"more
    than one number"`` after words, ``12 (wait, it's 13)``), a percent or per-mille sign or word, a
    number word, multiplier or fraction word (``12 thousand``, ``12 k``, ``3 Mio``, ``12 M``, ``2
    fifths``) or a numeric character of any script (``6 万``), a correction, relation or
    hedge (``12 -> 13``, ``12 or 13``, ``12 ≈ 12.4``, ``12?``), an operator (``12 x 2``,
    ``12 mod 5``, ``12:5``), a combining mark or an invisible format character (``12̸``).
    """
    if not tail:
        return None
    if not tail.isascii():
        word = _FIRST_WORD.match(tail)
        if word and any(c > "\x7f" and unicodedata.numeric(c, None) is not None for c in word.group(1)):
            return "number word"  # Ⅻ, before NFKC makes it XII
        if word and not _latin(word.group(1)):
            return "number word"  # 12 тыс., 12 만, 12 ألف: a word of another script may scale it; not read
        # compatibility forms read as what they stand for: ﹪ is %, Ｋ is K, ² is 2, ½ is 1⁄2
        tail = unicodedata.normalize("NFKC", tail)
    m = _TAIL.search(tail)
    end = m.start() if m is not None else len(tail)
    if not tail.isascii():
        for c in tail[:end]:
            if c > "\x7f" and unicodedata.category(c) in ("Mn", "Mc", "Me", "Cf"):
                return "combining or invisible mark"
            if c > "\x7f" and unicodedata.numeric(c, None) is not None:
                return "number word"  # 6 万, 3 億: a number of another script
    if m is None:
        return None
    if m.lastgroup == "digit":
        return "more than one number" if _LETTER_BEFORE.search(tail, 0, end) else "unreadable number"
    assert m.lastgroup is not None  # every alternative of the pattern is a named group
    return _TAIL_WHY[m.lastgroup]


_TOKEN = re.compile(rf"{NUMBER_BODY}|(?P<minus>[-−])|(?P<op>[(+*/×÷^])|[A-Za-z_]")
_LETTER = re.compile(r"[A-Za-z_]")
# Final answers are searched in an ASCII-lowercased copy of the text (same length, same offsets).
_ANSWER = re.compile(r"answer(?![a-z0-9_])[ \t*_]*+(?:[:=]|(?P<is>is(?![a-z0-9_])))|\\boxed[ \t]*+\{")
_FINAL_BEFORE = re.compile(r"(?<![a-z0-9_])final[ \t]++\Z")
_FINAL_WINDOW = 32
_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}
_S_STYLE = re.compile(r"S[1-9]\d{0,8}")
_BLANK = re.compile(r"[ \t*_`$]*+")
_NON_BLANK = re.compile(r"[^\s*_`$]")
_PRINT = re.compile(r"\bprint\(")
_CODE_LINE = re.compile(r"^[ \t]*+(?:def |>>>)", re.MULTILINE)

_MAX_DIGITS = 4_000  # ceiling on max_digits: Python refuses int() of strings over 4,300 digits
_MAX_OPERANDS = 32
_MAX_SEGMENT = 1_000
_TEXT_CAP = 200
_REGION_SLACK = 1_000  # characters of an answer's region beyond max_digits
# a number was written but not read: the record stays (the guard re-asks), even if a later line gives a value
_WRITTEN_UNREAD = frozenset({
    "too many digits", "ambiguous number", "unreadable number", "percentage", "more than one number",
    "number word", "correction or hedge", "combining or invisible mark", "more than one value", "unknown dash",
    "accounting parentheses",
})
NOT_ONE_VALUE = frozenset({"more than one value", "correction or hedge"})
"""A record's errors that say its line holds more than its own value (``S1 = 5 | S2 = 8``, ``S3 = 12 → 13``):
whatever else reads that line's words (a boolean, a choice, an extract) refuses it too."""


class _Patterns:
    """The step-line regex: S-names only, or (``generic``) any identifier, filtered by name afterwards."""

    def __init__(self, generic: bool) -> None:
        name = f"(?P<var>{_S_NAME}|{_IDENT})" if generic else f"(?P<var>{_S_NAME})"
        # the right-hand side: a lone integer (the requested format, read without further work) or anything
        rhs = r"(?:[ \t]*+(?P<num>-?[0-9]++)[ \t\r]*+(?=\n|\Z)|[^\n]*+)"
        self.line = re.compile(f"{_PREFIX}{name}{_NAME_TAIL}(?P<sep>=|:)(?!=){rhs}", re.MULTILINE)


_S_ONLY, _GENERIC = _Patterns(False), _Patterns(True)
_ANY_NAME = f"(?P<var>{_S_NAME}|{_IDENT})"
# Where the next assignment on a line starts: after "," or ";", or after a value (a digit, a word
# or a closing mark, "**3**" but not "S11 *") with only blanks between ("S1 = 3 S2 = 5",
# "a = small b = large", "S1 = 3 and S2 = 5"), so "S7 = S6 + S2 = 42" (a name after an operator)
# stays one chain. "name =" with an unknown name ends the clause but makes no record, except after
# a word ("the value of x = 5"); "name:" counts only for a variable ("S1: 3, S2: 5").
_CLAUSE = re.compile(
    f"(?:[,;][ \\t]*+(?:and[ \\t]++)?|(?:(?<=[\\d.)\\]}}`$])|(?<=\\d\\*)|(?<=\\d\\*\\*)|(?P<word>(?<=[^\\W\\d_])))"
    f"[ \\t]++(?:(?:and|then)[ \\t]++)?)"
    f"[*_`$]*+{_ANY_NAME}{_NAME_TAIL}(?P<csep>=(?!=)|:)"
)
_OPERATOR_WORD = re.compile(r"(?<![A-Za-z])(?:times|cdot|div|x|plus|minus|over|mod|bmod)\Z")
_LEAD = re.compile(f"[ \\t*_`$]*+(?:\\\\boxed[ \\t]*+\\{{)?[ \\t*_`$]*+{_ANY_NAME}{_NAME_TAIL}=")


@lru_cache(maxsize=256)
def _known(var_names: tuple[str, ...]) -> frozenset[str]:
    """The names the S-name pattern does not read as written (``total``, ``S07``)."""
    return frozenset(n for n in var_names if isinstance(n, str) and not _S_STYLE.fullmatch(n))


def _var(m: re.Match[str], known: frozenset[str]) -> str | None:
    """The variable a match names: a known name as written, an S-name as ``S<k>``, else None."""
    if known:
        raw = m.group("var")
        if raw in known:
            return raw
    k1, k2 = m.group("k1", "k2")
    k = k1 or k2
    if k is None:
        return None  # an identifier that is not a variable of the procedure
    return "S" + k if k[0] != "0" else f"S{int(k)}"


def _to_number(sign: str, m: re.Match[str], max_digits: int) -> tuple[Number | None, str | None]:
    """The exact number of a ``NUMBER_BODY`` match (separators dropped), or ``(None, "too many digits")``,
    or ``(None, "unreadable number")`` where :func:`read_number` refuses its digits (``0０``: the digits
    of two scripts)."""
    whole, frac = m.group("int"), m.group("frac") or ""
    digits = whole if whole.isdecimal() else re.sub(r"\D", "", whole)
    if len(digits) + len(frac) > max_digits:
        return None, "too many digits"
    try:
        value = read_number(digits + ("." + frac if frac else ""), _MAX_DIGITS)
    except EvaluationError:
        return None, "unreadable number"
    return (-value if sign in ("-", "−") else value), None


def _run_on(seg: str, end: int) -> str | None:
    """Why the digits ending at ``end`` are only part of a number (``12`` of ``12,5``), or None."""
    if end >= len(seg):
        return None
    if _AMBIGUOUS.match(seg, end):
        return "ambiguous number"
    if _RUN_ON.match(seg, end):
        return "unreadable number"
    if _PERCENT.match(seg, end):
        return "percentage"
    return None


def _clauses(rhs: str, known: frozenset[str]) -> list[tuple[str | None, str, int, int]]:
    """The further assignments in a line's right-hand side: ``(variable or None, separator, where
    its right-hand side starts, where its clause starts)``, offsets into ``rhs``."""
    out: list[tuple[str | None, str, int, int]] = []
    for c in _CLAUSE.finditer(rhs):
        if c.group("word") is not None and _OPERATOR_WORD.search(rhs, max(0, c.start() - 8), c.start()):
            continue  # S2 \times S1 = 40, S2 x S1 = 40: an operator, then the chain's next operand
        name = _var(c, known)
        if name is None and (c.group("csep") == ":" or c.group("word") is not None):
            continue  # "note: x", "the value of x = 5": prose; "S1 = 3, x = 5", "S1 = 3 x = 5" assign x (no step)
        out.append((name, c.group("csep"), c.end(), c.start()))
    return out


def _value(seg: str, max_digits: int) -> tuple[Number | None, str | None]:
    """The number that starts ``seg`` and is all its value, or ``(None, why)``.

    ``why``: ``"no number"``; ``"too many digits"``; ``"ambiguous number"`` (``12,5``, ``1,17``);
    ``"unreadable number"`` (``12.5.3``, ``1e5``, ``0x1F``, ``12 500``); ``"percentage"``
    (``12%``); ``"unevaluated expression"`` (``7 - b``, ``40 + 2``, ``12/5``, ``7 *``); or what
    :func:`_tail_problem` finds in the rest (``12 -> 13``, ``12 thousand``, ``12 (carry 1)``).
    Plain text after the number (``42.``, ``42 apples``, ``**42**``) is allowed.
    """
    plain = _PLAIN.fullmatch(seg)
    if plain is not None and len(plain.group(1).lstrip("-")) <= max_digits:
        return int(plain.group(1)), None
    m = _NUM.match(seg)
    if m is None:
        return None, "unknown dash" if _DASHED.match(seg) else "no number"
    end = m.end()
    why = _run_on(seg, end)
    if why is None and (_TIGHT.match(seg, end) if seg.startswith("*", end) else _EXPR_TAIL.match(seg, end)):
        why = "unevaluated expression"
    if why is None:
        marks = _CLOSE.match(seg, end)
        assert marks is not None  # the pattern is a starred group: it matches at least ""
        close = marks.end()
        if close > end:
            why = _run_on(seg, close)  # **42**apples, (40)2
        if why is None and (_EXPR_TAIL.match(seg, close) or _DANGLING.match(seg, close)):
            why = "unevaluated expression"  # **40** + 2, (40) - b, 7 -
        if why is None:
            why = _tail_problem(seg[close:])  # 12 -> 13, 12 thousand, 12 (carry 1)
        if why is None and m.group("paren") is not None and not m.group("sign") and _PAREN_CLOSE.match(seg, end):
            why = "accounting parentheses"  # (42.00): an accountant's negative or a bracket; which is not written
    if why is not None:
        return None, why if len(m.group("int")) + len(m.group("frac") or "") <= max_digits else "too many digits"
    return _to_number(m.group("sign"), m, max_digits)


def _operands(seg: str, max_digits: int) -> tuple[Number, ...] | None:
    """The numbers of an all-numeric segment (``-159 - (-12)`` -> (-159, -12)); None if it has letters.

    ``()`` when a number in it is not read exactly (too many digits, ``12,5``) or there are too many.
    """
    out: list[Number] = []
    expect_operand, negative = True, False
    for m in _TOKEN.finditer(seg):
        if m.group("int") is not None:
            if len(out) >= _MAX_OPERANDS or _run_on(seg, m.end()) is not None:
                return ()
            value, _ = _to_number("-" if negative else "", m, max_digits)
            if value is None:
                return ()
            out.append(value)
            expect_operand, negative = False, False
        elif m.group("minus") is not None:
            if expect_operand:
                negative = not negative
            expect_operand = True
        elif m.group("op") is not None:
            expect_operand = True
        else:
            return None
    return tuple(out)


def _without_restatements(records: list[Record]) -> tuple[Record, ...]:
    """Drop valueless lines for a step whose value a later line gives.

    Models often write ``Step 3: S3 = S1 - S2`` and ``S3 = 12 - 12`` before ``S3 = 0``: those are
    restatements of one executed step, not wrong values or repeats. A valueless line with no
    later value (``S3 = S1 - S2`` alone, ``big = true`` for a boolean step) is kept.
    """
    if all(r.value is not None for r in records):
        return tuple(records)
    valued_after: set[str] = set()
    keep: list[Record] = []
    for rec in reversed(records):
        if rec.value is None and rec.error not in _WRITTEN_UNREAD and rec.var in valued_after:
            continue
        if rec.value is not None:
            valued_after.add(rec.var)
        keep.append(rec)
    return tuple(reversed(keep))


# What a chain's links (the parts of a right-hand side before its value: "S6 + S2 = 40 + 2" of
# "S7 = S6 + S2 = 40 + 2 = 42") may not hold: a correction or hedge, a markup tag, or a character that
# no expression writes (a separator: "S1 = 5 | S2 = 8" is two values, not a chain that ends in 8).
_LINK_BAD = re.compile(
    r"(?P<hedge>->|=>|<-|[→⇒⟶⟹←↦~∼≈≃≅±∓?✓✔✗✘]|\\(?:approx|sim|to|rightarrow|Rightarrow)(?![A-Za-z])"
    r"|(?<![A-Za-z])(?:or|approx|approximately|about|around|roughly|nearly|almost|circa|maybe|perhaps|possibly|"
    r"wait|actually|oops|sorry|correction|corrected|instead|rather)(?![A-Za-z]))"
    r"|(?P<tag></?[A-Za-z][^<>\n]{0,64}+>)"
    r"|(?P<latex_break>\\\\|\\(?:newline|par|cr|hline)(?![A-Za-z]))"  # LaTeX's line break: S_3 = 13 \\ S_1 = 5
    r"|(?P<other>[^\w \t.,:+\-*/×÷^−–·⋅∗%()\[\]{}<>!=\\$`'’\"…≤≥≠])",
    re.IGNORECASE,
)
# a name in a link: after anything but a letter (5_S2, _5_S2, 5\\_S2 and 5S2 name S2: markup, an
# underscore or a digit glued to it); an identifier that is no name is searched for a name glued
# after an underscore (false_ok2: the value false, then the name ok2)
_LINK_NAME = re.compile(f"(?<![A-Za-z]){_ANY_NAME}(?![A-Za-z0-9_])")
_GLUED_NAME = re.compile(f"_{_ANY_NAME}\\Z")
# a link that ends in a value, blanks and a name in letters the grammar's names are not written in
# (5 Ｓ2, 5 Ѕ2, 5 é): the shape of a clause boundary ("S1 = 5 x = 8") with a name no clause reads
# (matched on the link's last characters reversed, so the match is anchored and its cost bounded)
_FOREIGN_NAME_END = re.compile(r"[*_`$ \t]*+(?P<name>\w{1,64}+)[*_`$]*+[ \t]++[\d.)\]}`$*]")
_VALUE_END = frozenset("0123456789)*`$\\_")  # before "_name": a value glued to a name (5.00_subtotal, 5\\_S2, _5_S2)
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_CHAIN_EQ = re.compile(r"(?<![=<>!])=(?!=)")  # an "=" of a chain, not of ==, <=, >=, !=
_BRACKET_OR_EQ = re.compile(f"{_CHAIN_EQ.pattern}|[()\\[\\]{{}}]")


@lru_cache(maxsize=256)
def _order(var_names: tuple[str, ...]) -> dict[str, int]:
    """``{name: position}`` of the procedure's own names (not ``S<k>``, which their number orders)."""
    known = _known(var_names)
    return {n: i for i, n in enumerate(var_names) if n in known}


def _after(name: str, var: str, order: dict[str, int]) -> bool:
    """Is ``name`` the variable ``var`` itself or one the procedure defines after it?"""
    if name == var:
        return True
    if name in order and var in order:
        return order[name] > order[var]
    if name[0] == "S" and var[0] == "S" and name[1:].isdigit() and var[1:].isdigit():
        return int(name[1:]) > int(var[1:])
    return False


def _in_brackets(chain: str) -> bool:
    """Does an ``=`` of ``chain`` stand inside brackets (``5 (S1 = 8)``), or a bracket close that was never opened?"""
    depth = 0
    for m in _BRACKET_OR_EQ.finditer(chain):
        c = m.group()
        if c == "=":
            if depth:
                return True
        else:
            depth += _BRACKETS[c]
            if depth < 0:
                return True
    return False


def _link_problem(head: str, var: str, known: frozenset[str], order: dict[str, int]) -> str | None:
    """Why the chain before a value (``head``) is not an expression that derives ``var``, or None.

    ``"correction or hedge"``: an arrow, a hedge or a correction word (``12 → S3``, ``12 (wait, 5 +
    8``); ``"more than one value"``: a separator or tag no expression writes (``5 | S2``, ``5 <br>
    S2``), an ``=`` inside brackets (``5 (S1 = 8)``), a name glued to a value (``5_S2``, ``5S2``), a
    value then a name in other letters (``5 Ｓ2``), or a name of ``var`` itself or of a later
    variable (``5 / S2`` for S1: the next step's assignment, not a derivation of this one).
    """
    bad = _LINK_BAD.search(head)
    if bad is not None:
        return "correction or hedge" if bad.lastgroup == "hedge" else "more than one value"
    if _in_brackets(head + "="):
        return "more than one value"  # 5 (S1 = 8): an aside that assigns, not a link of the chain
    if not head.isascii():
        foreign = _FOREIGN_NAME_END.match(head[-_TEXT_CAP:][::-1])
        name = foreign.group("name")[::-1] if foreign is not None else ""
        if name and not name.isascii() and not (name[0].isdigit() or name[0] == "_"):
            return "more than one value"  # S1 = 5 Ｓ2 = 8: the value, then another name's assignment
    for m in _LINK_NAME.finditer(head):
        names = [_var(m, known)]
        if names[0] is None and "_" in m.group():  # false_ok2, tax_total: a name glued after an underscore?
            ident = m.group()
            names = [_var(g, known) for i, c in enumerate(ident) if c == "_" and (g := _GLUED_NAME.match(ident, i))]
        glued = m.start() >= 2 and head[m.start() - 1] == "_" and head[m.start() - 2] in _VALUE_END
        for name in names:
            if name is not None and (_after(name, var, order) or glued):
                return "correction or hedge" if name == var else "more than one value"  # glued: 5.00_subtotal
    return None


_LONE_MARKS = " \t*_`$()[]{}\\"


def _two_results(head: str, value: Number, seg: str) -> bool:
    """Is a link of the chain ``head`` a lone number that the value (written at the start of ``seg``)
    is not a rounding of (``12`` of ``S3 = 5 + 8 = 12 = 13``)? A number within half a unit of the
    value's last written place is its rounding (``1.649175`` of ``= 1.649175 = 1.65``); one further off
    is a second result. Links are split at the chain's ``=``, not at ``==``, ``<=``, ``>=`` or ``!=``."""
    m = _NUM.match(seg)
    half = Fraction(1, 2 * 10 ** len(m.group("frac") or "")) if m is not None else Fraction(1, 2)
    for link in _CHAIN_EQ.split(head):
        if len(link) > 2 * _TEXT_CAP or _LETTER.search(link):
            continue  # an expression or words, not a lone number
        try:
            lone = read_number(link.strip(_LONE_MARKS), _MAX_DIGITS)
        except EvaluationError:
            continue
        if abs(Fraction(lone) - Fraction(value)) > half:
            return True
    return False


def _record(
    var: str, sep: str, rhs: str, max_digits: int, line: int, offset: int, text: str,
    known: frozenset[str] = frozenset(), order: dict[str, int] | None = None,
) -> Record | None:
    parts = rhs.split("=")
    value, error = _value(parts[-1], max_digits)
    if value is None and sep == ":" and error == "no number":
        return None  # "S7: add S6 and S2" is prose, not a step line; "S7: 12,5" and "S7: 7 - b" are
    if len(parts) > 1 and (value is not None or error == "no number"):  # a number, or a word (true, gold)
        head = rhs[: len(rhs) - len(parts[-1]) - 1]
        why = _link_problem(head, var, known, order or {})
        if why is None and value is not None and _two_results(head, value, parts[-1]):
            why = "correction or hedge"  # S3 = 5 + 8 = 12 = 13: the model wrote two results
        if why is not None:
            value, error = None, why
    expression = ""
    operands: tuple[Number, ...] = ()
    if len(parts) > 1:
        for seg in parts[:-1]:
            if _LETTER.search(seg):
                expression = seg.strip(" \t*_`$")[:_TEXT_CAP]
                break
        for seg in parts[:-1]:  # the first all-numeric part: the substitution itself
            if len(seg) > _MAX_SEGMENT or _LETTER.search(seg):
                continue
            b = _BINARY.fullmatch(seg)
            if b is not None and max(len(b.group(1)), len(b.group(2))) <= max_digits:
                operands = (int(b.group(1)), int(b.group(2)))
                break
            found = _operands(seg, max_digits)
            if found:
                operands = found
                break
    if value is None and not expression and _LETTER.search(parts[-1]):
        expression = parts[-1].strip(" \t*_`$")[:_TEXT_CAP]
    own = rhs if len(rhs) <= _MAX_SEGMENT else ""
    return Record(var, value, operands, expression, line, offset, text, error, own)


def _answer_region(text: str, start: int, boxed: bool, cap: int) -> tuple[int, int]:
    """Where an answer's value is: the rest of the line, the next non-blank line if that is blank,
    or ``{...}``; at most ``cap`` characters (enough to see that a number has too many digits)."""
    end = text.find("\n", start, start + cap)
    end = min(len(text), start + cap) if end < 0 else end
    if boxed:
        close = text.find("}", start, end)
        while close >= start + 2 and text.startswith("{,", close - 2):
            close = text.find("}", close + 1, end)  # \\boxed{1{,}176}: the group's brace is not the end
        return start, close if close >= 0 else end
    blank = _BLANK.match(text, start, end)
    assert blank is not None  # the pattern is a starred class: it matches at least ""
    if blank.end() == end:
        nxt = _NON_BLANK.search(text, end)
        if nxt is not None:
            stop = text.find("\n", nxt.start(), nxt.start() + cap)
            return nxt.start(), min(len(text), nxt.start() + cap) if stop < 0 else stop
    return start, end


def _answer_matches(low: str) -> Iterator[re.Match[str]]:
    """``_ANSWER`` matches in order, tried only where ``str.find`` sees "answer" or "\\boxed" (fast)."""
    i, j = low.find("answer"), low.find("\\boxed")
    while i >= 0 or j >= 0:
        if j < 0 or 0 <= i < j:
            pos, i = i, low.find("answer", i + 1)
        else:
            pos, j = j, low.find("\\boxed", j + 1)
        m = _ANSWER.match(low, pos)
        if m is not None:
            yield m


def _answers(text: str, max_digits: int) -> list[Answer]:
    low = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
    out: list[Answer] = []
    consumed = line = last = 0
    for m in _answer_matches(low):
        begin = m.start()
        boxed = low.startswith("\\", begin)
        if not boxed:
            if begin and (low[begin - 1].isalnum() or low[begin - 1] == "_"):
                continue  # "canswer:" is not an answer
            final = _FINAL_BEFORE.search(low, max(0, begin - _FINAL_WINDOW), begin)
            if final is not None:
                begin = final.start()
            elif m.group("is") is not None:
                continue  # "answer is" counts only as "final answer is"
        if begin < consumed:
            continue  # a \boxed{} inside "Final answer: $\boxed{42}$" is the same answer
        start, end = _answer_region(text, m.end(), boxed, max_digits + _REGION_SLACK)
        region = text[start:end]
        chain = ""
        if _LEAD.match(region):
            chain, _, region = region.rpartition("=")
            chain = chain.partition("=")[2]  # "S3 = 12 = 13": the links after the name
        value, error = _value(region, max_digits)
        if value is not None and chain and _two_results(chain, value, region):
            value, error = None, "correction or hedge"
        line += text.count("\n", last, begin)
        last = begin
        out.append(Answer(value, begin, line, text[begin : min(end, begin + _TEXT_CAP)], error))
        consumed = end if start == m.end() else m.end()
    return out


def _has_code(text: str) -> bool:
    if "```" in text:
        return True
    if "print(" in text and _PRINT.search(text):
        return True
    return ("def " in text or ">>>" in text) and _CODE_LINE.search(text) is not None


def line_end(text: str) -> int:
    """Where the last complete line of ``text`` ends (just past its line break; 0 when no line is
    complete). A line break is any that :meth:`str.splitlines` knows (``\\n``, ``\\r``, U+2028, ...)."""
    i = text.rfind("\n")
    for m in _BREAKS.finditer(text, i + 1):  # only the text after the last "\n": the line being written
        i = m.start()
    return i + 1


def parse_trace(
    text: str,
    *,
    var_names: Iterable[str] | None = None,
    max_chars: int = 1_000_000,
    max_digits: int = 400,
    max_records: int = 20_000,
) -> Trace:
    """Parse a model's generation into step records and final answers. Never raises on odd text.

    Args:
        text: what the model wrote.
        var_names: the procedure's variable names; ``S<digits>`` names are always recognised
            (so ``S96`` in a 95-step trace is seen as an extra step). ``None``: only ``S<digits>``.
        max_chars: only the first ``max_chars`` characters are read (``Trace.capped`` then True).
        max_digits: a number with more digits gets ``value=None``, ``error="too many digits"``
            (at most 4,000: Python itself refuses ``int()`` of longer digit strings).
        max_records: at most this many step records are read (``Trace.capped`` then True): a
            reply of 200,000 step lines costs bounded time. Procedures longer than this need more.

    Returns:
        A :class:`Trace`; records and answers in generation order, repeats kept.

    Raises:
        TypeError: ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    max_digits = min(max_digits, _MAX_DIGITS)
    capped = len(text) > max_chars
    if capped:
        text = text[:max_chars]
    names = tuple(var_names) if var_names is not None else ()
    known = _known(names) if names else frozenset()
    order = _order(names) if known else {}
    pats = _GENERIC if known else _S_ONLY
    text = _BREAKS.sub("\n", text)  # a line is what str.splitlines makes it; offsets unchanged
    records: list[Record] = []
    line = last = 0
    for m in pats.line.finditer(text):
        if len(records) >= max_records:
            capped = True
            text = text[: m.start()]  # answers too are read only from what was parsed
            break
        start, end = m.start(), m.end()
        var, num = _var(m, known), m.group("num")
        if num is not None and var is not None and len(num) - (num[0] == "-") <= max_digits:
            line += text.count("\n", last, start)
            last = start
            records.append(Record(var, int(num), (), "", line, start, text[start : min(end, start + _TEXT_CAP)], None, num))
            continue  # the requested format, "S7 = 42": nothing more to read
        rhs = text[m.end("sep") : end]
        clauses = _clauses(rhs, known) if ("=" in rhs or ":" in rhs) else []
        if var is None and not clauses:
            continue
        line += text.count("\n", last, start)
        last = start
        snippet = text[start : min(end, start + _TEXT_CAP)]
        # one or more assignments: (variable, separator, where its right-hand side starts, where its clause starts)
        base = m.end("sep")
        parts = [(var, m.group("sep"), base, start)]
        parts += [(name, csep, base + c_end, base + c_start) for name, csep, c_end, c_start in clauses]
        for i, (name, sep, rhs_start, _) in enumerate(parts):
            if name is None:
                continue
            rhs_end = parts[i + 1][3] if i + 1 < len(parts) else end
            rec = _record(name, sep, text[rhs_start:rhs_end], max_digits, line, start, snippet, known, order)
            if rec is not None:
                records.append(rec)
    return Trace(
        records=_without_restatements(records),
        answers=tuple(_answers(text, max_digits)),
        chars=len(text),
        capped=capped,
        has_code=_has_code(text),
    )
