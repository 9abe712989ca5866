"""Model text -> step records, final answers and numbers: the one reader of what a model writes.

Nothing here evaluates model text. Public face: :func:`parse_trace` and the records it returns
(:class:`Trace`, :class:`Record`, :class:`Answer`); :func:`numbers_in`, the numbers of free text
read by the same rules; :func:`line_end`, where the last complete line of a text ends (every line
break :meth:`str.splitlines` knows). The grammar and its refusals: docs/reading.md.
"""

from stepguard.trace._numbers import DASHES, WrittenNumber, numbers_in
from stepguard.trace._parse import NOT_ONE_VALUE, line_end, parse_trace
from stepguard.trace._records import Answer, Record, Trace
from stepguard.trace._scale import SCALE_AFTER as SCALE_AFTER  # for verify, not public

__all__ = ["DASHES", "NOT_ONE_VALUE", "Answer", "Record", "Trace", "WrittenNumber", "line_end", "numbers_in", "parse_trace"]
