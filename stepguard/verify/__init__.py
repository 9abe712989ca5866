"""Records vs procedure -> deviations: one vocabulary for raw-mode scoring and the guard.

Public face:

* the vocabulary: :class:`Deviation`, :data:`DeviationKind`, :data:`DEVIATION_KINDS`;
* raw-mode scoring (the failure taxonomy of benchmark.md): :func:`score_generation` -> :class:`Score`,
  its labels :data:`SCORE_LABELS` and :data:`FAILURE_LABELS` (the one label list every report uses);
* stepwise verification for the guard: :func:`verify_chunk`, :func:`expected_value`,
  :func:`operand_leaves`, :func:`read_raw_value`, :class:`ChunkVerdict`;
* numbers in a source document, read exactly or not at all: :func:`scan_numbers` ->
  :class:`SourceNumbers`, :func:`after_label`, :func:`number_text`, :data:`Percent` (the ``extract`` kind's check);
* the checks of the other step kinds live with each kind: :mod:`stepguard.kinds`.
"""

from stepguard.verify._deviation import DEVIATION_KINDS, Deviation, DeviationKind
from stepguard.verify._source_numbers import Percent, SourceNumbers, after_label, number_text, scan_numbers
from stepguard.verify._stepwise import ChunkVerdict, expected_value, verify_chunk
from stepguard.verify._taxonomy import FAILURE_LABELS, SCORE_LABELS, Score, ScoreLabel, ScoringTarget, score_generation
from stepguard.verify._values import operand_leaves, read_raw_value

__all__ = [
    "DEVIATION_KINDS",
    "FAILURE_LABELS",
    "SCORE_LABELS",
    "ChunkVerdict",
    "Percent",
    "SourceNumbers",
    "Deviation",
    "DeviationKind",
    "Score",
    "ScoreLabel",
    "ScoringTarget",
    "after_label",
    "expected_value",
    "number_text",
    "operand_leaves",
    "read_raw_value",
    "scan_numbers",
    "score_generation",
    "verify_chunk",
]
