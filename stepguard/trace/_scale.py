"""Words that scale a number or make it a fraction, right after it (``12 thousand``, ``3 Mio``, ``5 k``).

Shared by the step reader and the free-text number lexer: a number followed by one is not the
number alone, and both refuse it as a ``number word``.
"""

from __future__ import annotations

import re

__all__ = ["SCALE_AFTER"]

_W0, _W1 = r"(?<![A-Za-z])(?:", r")(?![A-Za-z])"
# words that scale a number (12 thousand, 5 k, 3 Mio, 2 lakh) or make it a fraction (3 fifths)
_SCALE_WORDS = (  # English, and the scale words of the languages a reply or a document is likely in
    "hundreds?|thousands?|thou|millions?|billions?|trillions?|dozens?|doz|grand|score|gross|myriads?|"
    "k|kk|bn|mn|mln|mio|mrd|mld|md|mds|tn|trn|mmm|mil|mill|bil|bio|tsd|tausend|mille|milliards?|milliarden?|"
    "millionen|billionen|billiarden?|millones|mill[oó]n|mila|milion[ei]|miliard[io]|milj|miljoen|miljard|"
    "lakhs?|lacs?|crores?|squared|cubed|"
    "half|halves|thirds?|quarters?|fourths?|fifths?|sixths?|sevenths?|eighths?|ninths?|tenths?|elevenths?|twelfths?|"
    "[a-z]+teenths?|(?:twent|thirt|fort|fift|sixt|sevent|eight|ninet)ieths?|(?:hundred|thousand|million|billion|trillion)ths?|"
    "bps?|basis[ \t]+points?"
)
# single capital letters that scale a number in finance (12 M, 3 B, 4 T, 2 MM, 5 G); matched in their case only
_SCALE_LETTERS = r"(?-i:M|MM|B|G|T)(?!-)"  # not 12 T-shirts, 12 B-trees
SCALE_AFTER = re.compile(r"[ \t\u00a0\u2009\u202f-]*+(?:" + _W0 + _SCALE_WORDS + "|" + _SCALE_LETTERS + _W1 + ")", re.IGNORECASE)
"""A scale or fraction word right after a number (``12 thousand``, ``3 Mio``, ``5 k``, ``2 fifths``):
the number alone is not the value written. Match at the number's end with ``.match(text, end)``."""
