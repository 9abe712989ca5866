"""A run folder's result rows as report and compare read them: checked row by row, errors naming file and line.

``bench run`` refuses a results.jsonl with a duplicate id when it opens the store; report and
compare read the same file and refuse it the same way, and refuse a row without a usable
``n_steps`` or ``lookback`` (what they group by), instead of counting it twice or stopping on a
``KeyError``. A torn last line (a write cut short) is skipped, as :func:`~stepguard.bench.store.iter_rows` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stepguard.bench._storefiles import RESULTS, _parse
from stepguard.errors import RunStoreError

__all__ = ["numbered_results", "row_error"]

_FLAGS = ("correct", "exact", "verified_correct", "simulated")
"""Row fields report and compare count as true or false."""

_FIX = "fix or delete that line (each instance has one row; `bench run` on the folder writes it again)"


def row_error(path: Path, lineno: int, problem: str) -> RunStoreError:
    """The error for one bad row: ``FILE:LINE: problem; fix or delete that line ...``."""
    return RunStoreError(f"{path}:{lineno}: {problem}; {_FIX}")


def numbered_results(rundir: str | Path) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """``(results.jsonl path, 1-based line, row)`` for each finished row of ``rundir``, in file order.

    Raises:
        RunStoreError: a line that is not a JSON object with a string ``id``; an id seen on an
            earlier line (both lines named); ``n_steps`` missing or not a whole number >= 1;
            ``lookback`` not a whole number >= 0 or null; ``correct``, ``exact``, ``verified_correct``
            or ``simulated`` not true or false. Each names the file and line.
    """
    path = Path(rundir) / RESULTS
    if not path.exists():
        return
    seen: dict[str, int] = {}
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                return  # a torn last line: the writer's next open cuts it
            if not line.strip():
                continue
            row = _parse(path, lineno, line)
            rid = row["id"]
            if rid in seen:
                raise row_error(path, lineno, f"duplicate id {rid!r} (also on line {seen[rid]})")
            seen[rid] = lineno
            if "n_steps" not in row:
                raise row_error(path, lineno, f"row {rid!r} has no 'n_steps' (required: id, n_steps, lookback)")
            n = row["n_steps"]
            if type(n) is not int or n < 1:
                raise row_error(path, lineno, f"row {rid!r}: 'n_steps' must be a whole number >= 1, not {n!r}")
            lb = row.get("lookback")
            if lb is not None and (type(lb) is not int or lb < 0):
                raise row_error(path, lineno, f"row {rid!r}: 'lookback' must be a whole number >= 0 or null, not {lb!r}")
            for key in _FLAGS:  # "correct": "false" is a true string: counted right, silently
                if key in row and type(row[key]) is not bool:
                    raise row_error(path, lineno, f"row {rid!r}: {key!r} must be true or false, not {row[key]!r}")
            yield path, lineno, row
