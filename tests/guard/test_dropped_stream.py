"""A run's iterator dropped half-read must not keep the process from exiting (stepguard/guard/_open_streams.py).

LangGraph waits for a run's streamed reports in a worker thread until the graph's stream is closed; a
``Guard.stream`` iterator dropped where no reference count reaches zero (a cycle) was never closed, and the
interpreter, which joins worker threads before it collects garbage, waited for ever (the test suite's own
exit hung so, in CI). Neighbours: chunked and streamed runs, a run that raised with its error kept, and a
run read to the end or closed leaving nothing open.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from stepguard import Guard, GuardConfig, parse_procedure
from stepguard.guard import _open_streams
from tests._fakes import ScriptedModel
from tests._paths import ROOT

PROC_TEXT = "name: p\ninputs: [a, b]\nsteps:\n" + "".join(f"  - {{var: s{i}, expr: a + b + {i}}}\n" for i in range(8))

CHILD = """
import gc, sys
from stepguard import Guard, GuardConfig, parse_procedure
from tests._fakes import ScriptedModel
gc.disable()  # as when a cycle has not been collected yet
proc = parse_procedure({text!r}, "p.yaml")
config = GuardConfig(**{config!r})
if {raised!r}:
    try:
        wrong = ScriptedModel(faults={{"s0": ["wrong"] * 9}})
        Guard(wrong, GuardConfig(**{config!r}, max_reprompts_per_step=0)).run(proc, {{"a": 2, "b": 3}})
    except Exception as exc:
        KEPT = [exc]; KEPT.append(KEPT)  # the error, its traceback and the run's frames kept in a cycle
else:
    run = Guard(ScriptedModel(), config).stream(proc, {{"a": 2, "b": 3}})
    next(run)
    held = [run]; held.append(held)  # dropped half-read, in a cycle
print("done", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("config", [{"chunk_size": 2}, {"streamed": True, "window": 3}, {"follow": True}],
                         ids=["chunked", "streamed", "follow"])
@pytest.mark.parametrize("raised", [False, True], ids=["dropped", "raised"])
def test_a_process_holding_a_half_read_run_exits(config: dict[str, object], raised: bool) -> None:
    child = CHILD.format(text=PROC_TEXT, config=config, raised=raised)
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
                          capture_output=True, text=True, timeout=120)  # hung for ever before
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr


def test_a_run_read_to_the_end_or_closed_leaves_no_stream_open() -> None:
    proc = parse_procedure(PROC_TEXT, "p.yaml")
    assert Guard(ScriptedModel(), GuardConfig(chunk_size=2)).run(proc, {"a": 2, "b": 3}).status == "verified"
    assert len(_open_streams._OPEN) == 0
    run = Guard(ScriptedModel(), GuardConfig(chunk_size=2)).stream(proc, {"a": 2, "b": 3})
    next(run)
    assert len(_open_streams._OPEN) == 1  # open while the run is
    run.close()
    assert len(_open_streams._OPEN) == 0
