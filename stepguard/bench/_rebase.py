"""Move run folders onto a new instances file that keeps every instance they finished (the demo's larger sizes).

A run's identity includes the sha256 of its instances file, so a file with instances added is
another run and ``bench run`` refuses to resume into the old folder. Instance ids of the generated
grid are stable (``n23-l2-s0-i1`` is the same instance in every grid that holds it), so a folder
whose finished rows all name instances the new file holds unchanged can go on with the new file:
:func:`rebase_runs` checks that for every folder first, and only then records the new file's
sha256 in each run.json (the earlier one kept in ``instances_sha256_earlier``). The caller
replaces the instances file only after that, so a refusal leaves every file as it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stepguard.bench._runmeta import _sha256
from stepguard.bench._storefiles import META, RESULTS, iter_rows, lock, unlock
from stepguard.bench.instances import read_jsonl
from stepguard.bench.store import read_meta
from stepguard.errors import RunStoreError

__all__ = ["rebase_runs", "runs_of"]


def runs_of(root: str | Path, instances: str | Path) -> list[Path]:
    """The run folders directly under ``root`` whose run.json names ``instances`` as their instances file."""
    target = str(Path(instances).resolve())
    found = []
    for d in sorted(p for p in Path(root).iterdir() if (p / META).is_file()):
        try:
            if read_meta(d).get("instances") == target:
                found.append(d)
        except RunStoreError:
            continue  # not a run of ours; opening it later says what is wrong
    return found


def _by_id(path: Path) -> dict[str, Any]:
    return {row["id"]: row for _, row in read_jsonl(path) if isinstance(row, dict) and isinstance(row.get("id"), str)}


def rebase_runs(rundirs: list[Path], old: Path, new: Path) -> list[Path]:
    """Let ``rundirs``, made from instances file ``old``, resume on ``new``; returns the folders changed.

    Every folder is checked before any is changed: its run.json records ``old``'s sha256 (or
    already ``new``'s: nothing to do), and each id it finished is in ``new`` with the same content
    as in ``old``.

    Raises:
        RunStoreError: a folder holds a run of other instances, is in use, or finished instances
            that ``new`` drops or changes (names the folder, how many and the first ids); nothing
            is changed then.
    """
    old_sha, new_sha = _sha256(old), _sha256(new)
    before, after = _by_id(old), _by_id(new)
    todo = []
    for d in rundirs:
        stored = read_meta(d).get("instances_sha256")
        if stored == new_sha:
            continue
        if stored != old_sha:
            raise RunStoreError(f"{d / META}: holds a run of other instances than {old} (instances_sha256 {str(stored)[:12]}..., "
                                f"the file's {old_sha[:12]}...); nothing was changed: use another --out directory")
        lost = [r["id"] for r in iter_rows(d / RESULTS) if r["id"] not in after or after[r["id"]] != before.get(r["id"])]
        if lost:
            raise RunStoreError(f"{d}: {len(lost)} finished instances are not in the new instance set, or differ there "
                                f"({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''}); nothing was changed: give sizes "
                                "that include the earlier ones, or use another --out directory")
        todo.append(d)
    for d in todo:
        fd = lock(d)
        try:
            meta = read_meta(d)
            meta["instances_sha256_earlier"] = [*meta.get("instances_sha256_earlier", []), meta.get("instances_sha256")]
            meta["instances_sha256"] = new_sha
            tmp = d / (META + ".tmp")
            tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, d / META)
        finally:
            unlock(fd)
    return todo
