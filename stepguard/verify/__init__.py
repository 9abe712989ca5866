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

from __future__ import annotations

from typing import TYPE_CHECKING

from stepguard._lazy import lazy_names

if TYPE_CHECKING:
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

_HOMES: dict[str, tuple[str, str]] = {
    "DEVIATION_KINDS": ("stepguard.verify._deviation", "DEVIATION_KINDS"),
    "Deviation": ("stepguard.verify._deviation", "Deviation"),
    "DeviationKind": ("stepguard.verify._deviation", "DeviationKind"),
    "Percent": ("stepguard.verify._source_numbers", "Percent"),
    "SourceNumbers": ("stepguard.verify._source_numbers", "SourceNumbers"),
    "after_label": ("stepguard.verify._source_numbers", "after_label"),
    "number_text": ("stepguard.verify._source_numbers", "number_text"),
    "scan_numbers": ("stepguard.verify._source_numbers", "scan_numbers"),
    "ChunkVerdict": ("stepguard.verify._stepwise", "ChunkVerdict"),
    "expected_value": ("stepguard.verify._stepwise", "expected_value"),
    "verify_chunk": ("stepguard.verify._stepwise", "verify_chunk"),
    "FAILURE_LABELS": ("stepguard.verify._taxonomy", "FAILURE_LABELS"),
    "SCORE_LABELS": ("stepguard.verify._taxonomy", "SCORE_LABELS"),
    "Score": ("stepguard.verify._taxonomy", "Score"),
    "ScoreLabel": ("stepguard.verify._taxonomy", "ScoreLabel"),
    "ScoringTarget": ("stepguard.verify._taxonomy", "ScoringTarget"),
    "score_generation": ("stepguard.verify._taxonomy", "score_generation"),
    "operand_leaves": ("stepguard.verify._values", "operand_leaves"),
    "read_raw_value": ("stepguard.verify._values", "read_raw_value"),
}
"""Where each name lives: a module loads on a name's first use (PEP 562), so that reading a procedure
(``stepguard check``, the kinds) does not load the stepwise verifier and the raw-mode scorer."""


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
