"""A committed run store's results file replaced or removed under a running measurement (``git
stash``, ``checkout`` or ``pull`` while a run writes it) loses no row: the rows the store wrote to
the file it still held open are written again to the file now at the path.

Found measuring: a ``git stash`` and ``stash pop`` during a 95-step run left the runner appending to
an unlinked file; four finished instances (about 20 minutes of model time) reached no path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stepguard.bench.store import RESULTS, RunStore

META = {"mode": "guarded", "model": {"spec": "sim:paper"}, "instances_sha256": "x"}


def _ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


@pytest.mark.parametrize("sync", [None, 0.01])
def test_a_results_file_put_back_to_an_older_version_gets_the_rows_written_since(tmp_path: Path, sync: float | None) -> None:
    store = RunStore.open(tmp_path / "run", META, sync_interval_s=sync)
    path = tmp_path / "run" / RESULTS
    store.add_result({"id": "a"})
    older = path.read_bytes()  # what a commit holds
    store.add_result({"id": "b"})
    staged = path.with_suffix(".old")
    staged.write_bytes(older)
    os.replace(staged, path)  # as git writes a file: a new one renamed over it
    with pytest.warns(RuntimeWarning, match=r"results.jsonl was replaced.*1 of its rows"):
        store.add_result({"id": "c"})
    store.add_result({"id": "d"})
    store.close()
    assert _ids(path) == ["a", "b", "c", "d"]
    assert RunStore.open(tmp_path / "run", META).finished == {"a", "b", "c", "d"}


def test_a_removed_results_file_is_written_again_whole(tmp_path: Path) -> None:
    store = RunStore.open(tmp_path / "run", META)
    path = tmp_path / "run" / RESULTS
    store.add_result({"id": "a"})
    store.add_result({"id": "b"})
    path.unlink()
    with pytest.warns(RuntimeWarning, match="2 of its rows"):
        store.add_result({"id": "c"})
    store.close()
    assert _ids(path) == ["a", "b", "c"]


def test_a_file_left_in_place_is_appended_to_without_a_warning(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    with RunStore.open(tmp_path / "run", META) as store:
        for rid in "abc":
            store.add_result({"id": rid})
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert _ids(tmp_path / "run" / RESULTS) == ["a", "b", "c"]
