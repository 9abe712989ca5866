"""The run store: durable appends, resume, torn and corrupt lines, the lock, identity checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stepguard.bench.store import ERRORS, RESULTS, RunStore, iter_rows, read_meta
from stepguard.errors import RunStoreError
from tests._paths import ROOT

META = {"model": {"spec": "sim:paper"}, "mode": "raw", "guard_config": None, "generation": {"temperature": 0.0},
        "instances_sha256": "abc"}


def _fill(rundir: Path, ids: list[str]) -> None:
    with RunStore.open(rundir, META) as store:
        for i in ids:
            store.add_result({"id": i, "correct": True})


def test_rows_are_durable_and_resume_skips_finished(tmp_path: Path) -> None:
    _fill(tmp_path, ["a", "b"])
    with RunStore.open(tmp_path, META) as store:
        assert store.resumed and store.finished == {"a", "b"}
        store.add_result({"id": "c"})
        with pytest.raises(RunStoreError, match="already has a row"):
            store.add_result({"id": "a"})
    assert [r["id"] for r in iter_rows(tmp_path / RESULTS)] == ["a", "b", "c"]
    assert read_meta(tmp_path)["mode"] == "raw"
    assert (tmp_path / RESULTS).read_bytes().endswith(b"\n")


def test_error_rows_are_retried_not_finished(tmp_path: Path) -> None:
    with RunStore.open(tmp_path, META) as store:
        store.add_error({"id": "a", "error": "boom"})
        store.add_result({"id": "b"})
    with RunStore.open(tmp_path, META) as store:
        assert store.finished == {"b"} and store.failed == {"a"}
        store.add_result({"id": "a"})
        assert store.failed == set()
    assert len(list(iter_rows(tmp_path / ERRORS))) == 1


def test_torn_last_line_is_cut_and_reported(tmp_path: Path) -> None:
    _fill(tmp_path, ["a", "b"])
    path = tmp_path / RESULTS
    good = path.read_bytes()
    with path.open("ab") as fh:
        fh.write(b'{"id": "c", "correct": tr')  # SIGKILL mid-write: no newline
    assert [r["id"] for r in iter_rows(path)] == ["a", "b"]  # readers skip it too
    with RunStore.open(tmp_path, META) as store:
        assert store.finished == {"a", "b"}
        assert len(store.torn) == 1 and store.torn[0].line == 3 and "torn" in str(store.torn[0])
        store.add_result({"id": "c"})
    assert path.read_bytes().startswith(good)
    assert [r["id"] for r in iter_rows(path)] == ["a", "b", "c"]


def test_corrupt_middle_line_raises_with_line_number_and_keeps_the_file(tmp_path: Path) -> None:
    _fill(tmp_path, ["a"])
    path = tmp_path / RESULTS
    with path.open("ab") as fh:
        fh.write(b"{not json\n" + json.dumps({"id": "b"}).encode() + b"\n")
    before = path.read_bytes()
    with pytest.raises(RunStoreError, match=rf"{RESULTS}:2: corrupt line"):
        RunStore.open(tmp_path, META)
    assert path.read_bytes() == before
    with pytest.raises(RunStoreError, match=":2:"):
        list(iter_rows(path))
    # the lock was released: fixing the line lets the run resume
    path.write_bytes(before.replace(b"{not json\n", b""))
    with RunStore.open(tmp_path, META) as store:
        assert store.finished == {"a", "b"}


def test_duplicate_ids_in_the_file_are_refused(tmp_path: Path) -> None:
    _fill(tmp_path, ["a"])
    with (tmp_path / RESULTS).open("ab") as fh:
        fh.write(b'{"id":"a"}\n')
    with pytest.raises(RunStoreError, match=":2: duplicate id 'a'"):
        RunStore.open(tmp_path, META)


@pytest.mark.parametrize("key, value", [("model", {"spec": "sim:perfect"}), ("mode", "guarded"),
                                        ("guard_config", {"chunk_size": 3}), ("instances_sha256", "def")])
def test_a_different_run_is_refused(tmp_path: Path, key: str, value: object) -> None:
    _fill(tmp_path, ["a"])
    with pytest.raises(RunStoreError, match=f"different run.*{key}"):
        RunStore.open(tmp_path, {**META, key: value})
    with RunStore.open(tmp_path, META) as store:  # unchanged, and not locked
        assert store.finished == {"a"}


@pytest.mark.parametrize("stored, flags", [({"chunk_size": 1}, "--no-follow --substeps-one-at-a-time"),
                                           ({"chunk_size": 1, "follow": False, "substeps_together": True}, "--no-follow"),
                                           ({"chunk_size": 1, "follow": True}, "--substeps-one-at-a-time")])
def test_a_store_made_before_the_default_followed_names_the_flags_that_resume_it(
        tmp_path: Path, stored: dict[str, object], flags: str) -> None:
    _fill(tmp_path, ["a"])
    (tmp_path / "run.json").write_text(json.dumps({**read_meta(tmp_path), "guard_config": stored}))
    now = {"chunk_size": 1, "follow": True, "substeps_together": True}
    with pytest.raises(RunStoreError, match=rf"resume it with {flags} \(GuardConfig: "):
        RunStore.open(tmp_path, {**META, "guard_config": now})
    with pytest.raises(RunStoreError) as other:  # a store that differs otherwise gets no such hint
        RunStore.open(tmp_path, {**META, "guard_config": {**stored, "chunk_size": 2}})
    assert "followed" not in str(other.value)


@pytest.mark.slow
def test_lock_refuses_a_second_process_and_names_the_holder(tmp_path: Path) -> None:
    code = ("import sys\nfrom stepguard.bench.store import RunStore\nfrom stepguard.errors import RunStoreError\n"
            f"try:\n    RunStore.open(sys.argv[1], {META!r})\nexcept RunStoreError as e:\n    print(e); sys.exit(3)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with RunStore.open(tmp_path, META) as store:
        store.add_result({"id": "a"})
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 3, proc.stderr
        assert f"PID {os.getpid()}" in proc.stdout
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # released on close


def test_a_different_run_names_the_fields_that_changed_not_whole_settings(tmp_path: Path) -> None:
    old = {**META, "guard_config": {"chunk_size": 5, "ladder": ["bridge"], "seed": 0}}
    with RunStore.open(tmp_path / "g", old):
        pass
    with pytest.raises(RunStoreError) as err:
        RunStore.open(tmp_path / "g", {**old, "guard_config": {"chunk_size": 1, "ladder": ["bridge"], "seed": 0}})
    assert "guard_config.chunk_size: stored 5, now 1" in str(err.value) and "ladder" not in str(err.value)
