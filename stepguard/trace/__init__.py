"""Model text -> step records and final answers. Nothing here evaluates model text.

Public face: :func:`parse_trace` and the records it returns (:class:`Trace`, :class:`Record`,
:class:`Answer`).
"""

from stepguard.trace._parse import SCALE_AFTER as SCALE_AFTER, parse_trace  # SCALE_AFTER: for verify, not public
from stepguard.trace._records import Answer, Record, Trace

__all__ = ["Answer", "Record", "Trace", "parse_trace"]
