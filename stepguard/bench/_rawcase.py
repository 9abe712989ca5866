"""Raw mode's one request for a case and the row its reply makes: what ``bench run --mode raw``, the
re-ask mode and the harnesses (Inspect AI, lm-eval) send and write alike.

Re-exported by :mod:`stepguard.bench.case`, which runs a case in any mode; kept apart from it so the
re-ask mode (:mod:`stepguard.bench.reask`), which that module calls, reads them without importing it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepguard.bench._raw import case_messages, score_case
from stepguard.bench._runmeta import RAW_SEED, RAW_TEMPERATURE, RAW_TOKENS_PER_STEP
from stepguard.bench.rows import raw_row
from stepguard.model import ChatResponse, GenerationSettings

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase

__all__ = ["raw_case_row", "raw_max_tokens", "raw_request"]


def raw_max_tokens(n_steps: int, per_step: int = RAW_TOKENS_PER_STEP) -> int:
    """Raw-mode cap on generated tokens: ``per_step`` per step plus 64. A reply cut there is
    recorded with ``finish_reason == "length"`` and counted in the report's truncation rate."""
    return per_step * n_steps + 64


def raw_request(inst: Instance | ProcedureCase, raw_tokens_per_step: int = RAW_TOKENS_PER_STEP
                ) -> tuple[list[Any], GenerationSettings]:
    """Raw mode's one request for ``inst``: ``(messages, settings)``, temperature 0, seed 0, the
    token cap of :func:`raw_max_tokens` (or the one a suite's prompt file declares)."""
    messages, max_tokens, _ = case_messages(inst)
    return messages, GenerationSettings(temperature=RAW_TEMPERATURE, seed=RAW_SEED,
                                        max_tokens=max_tokens or raw_max_tokens(inst.n_steps, raw_tokens_per_step))


def raw_case_row(inst: Instance | ProcedureCase, resp: ChatResponse, wall_s: float = 0.0) -> dict[str, Any]:
    """The raw-mode row of a reply to :func:`raw_request`: scored as ``bench run --mode raw`` scores it
    (:func:`stepguard.verify.score_generation`; a suite's prompt file read as it declares).

    Args:
        inst: the case.
        resp: the reply (a harness that keeps only the text: ``ChatResponse(text)``).
        wall_s: seconds from the request to the score.
    """
    score, extra = score_case(inst, resp.text)
    return {**raw_row(inst, resp, score, wall_s), **extra}
