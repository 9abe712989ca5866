"""What a model wrote, after parsing: step records and answers. Nothing here evaluates model text."""

from __future__ import annotations

from dataclasses import dataclass, field

from stepguard.evaluator import Number

__all__ = ["Answer", "Record", "Trace"]


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed step line, e.g. ``S11 = S10 - S4 = -159 - (-12) = -147``.

    Attributes:
        var: the variable on the left (``"S11"``).
        value: the last number on the line (``-147``), exact; ``None`` if absent or unreadable.
        operands: the numbers of a substituted middle part, in order (``(-159, -12)``), or ``()``.
        expression: the symbolic part the model wrote (``"S10 - S4"``), or ``""``.
        line: 0-based line number in the text.
        offset: character offset of the line's start.
        text: the line, capped at 200 characters.
        error: why the value is ``None`` (``"too many digits"``, ``"no number"``), else ``None``.
        rhs: this record's own right-hand side, from after its ``=`` (or ``:``) to the next
            clause that assigns a variable or the line's end (``"small"`` in ``a = small, b = large``);
            ``""`` when it is longer than 1,000 characters (then not read at all); ``None`` for a
            record built by hand. Not compared: two records of one line are equal as before.
    """

    var: str
    value: Number | None
    operands: tuple[Number, ...] = ()
    expression: str = ""
    line: int = 0
    offset: int = 0
    text: str = ""
    error: str | None = None
    rhs: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Answer:
    """One final-answer mention (``Final answer: 42``, ``Answer: 42``, ``\\boxed{42}``).

    Attributes:
        value: the number, exact, or ``None`` if unreadable.
        offset: character offset in the text (generation order).
        line: 0-based line number.
        text: the matched text, capped at 200 characters.
        error: why the value is ``None`` (``"too many digits"``, ``"no number"``), else ``None``.
    """

    value: Number | None
    offset: int
    line: int = 0
    text: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    """A parsed generation.

    Attributes:
        records: step records in generation order (repeats kept).
        answers: final-answer mentions in generation order; ``answers[0]`` is the first answer.
        chars: length of the text read, characters.
        capped: True if the text was longer than the parser's cap and only its head was read.
        has_code: True if the text contains code fences or program-like lines (``print(``, ``def ``).
    """

    records: tuple[Record, ...]
    answers: tuple[Answer, ...]
    chars: int = 0
    capped: bool = False
    has_code: bool = False

    @property
    def first_answer(self) -> Answer | None:
        """The first final answer in generation order, or ``None``."""
        return self.answers[0] if self.answers else None
