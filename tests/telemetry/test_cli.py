"""Tracing from the command line: ``bench run --otel / --trace-file``, and a dead OTLP endpoint.

A dead endpoint is said once, on one line of stderr, with no Python warning or traceback, and
costs a bounded number of export attempts however many batches a run makes (asserted by
counting connections, not by timing).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig
from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import write_instances
from stepguard.cli._app import app
from stepguard.telemetry import OtelObserver, configure_telemetry, read_trace_file, shutdown
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure
from tests._otlp_server import OtlpReceiver, ResettingEndpoint

MAX_CONNECTIONS_PER_EXPORT = 4
"""One OTLP/HTTP export to a dead endpoint within the 1 s default timeout: a request and its
immediate retry, and at most one backed-off retry of both (the exporter's backoff is 1 s +- 20 %)."""


@pytest.fixture(autouse=True)
def _no_otel_env(monkeypatch):
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TIMEOUT",
                "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def instances(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("inst") / "instances.jsonl"
    write_instances(generate_grid([5, 23], [1], 4, seed=0), path)  # 8 instances
    return path


def _names(path: Path) -> list[str]:
    return [s.name for r in read_trace_file(path) for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


@pytest.mark.slow
def test_bench_run_trace_file_holds_one_trace_per_instance(instances, tmp_path):
    trace = tmp_path / "bench.otlp.jsonl"
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(instances), "--mode", "guarded", "--model", "sim:perfect",
                                   "--out", str(tmp_path / "run"), "--no-progress", "--trace-file", str(trace)])
    assert res.exit_code == 0, res.output
    names = _names(trace)
    assert sum(n.startswith("invoke_workflow ") for n in names) == 8
    assert "stepguard.chunk" in names and "chat sim:perfect" in names


@pytest.mark.slow
def test_bench_run_otel_exports_to_the_endpoint(instances, tmp_path, monkeypatch):
    with OtlpReceiver() as rx:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url)
        res = CliRunner().invoke(app, ["bench", "run", "--instances", str(instances), "--mode", "guarded", "--model", "sim:perfect",
                                       "--out", str(tmp_path / "run"), "--no-progress", "--otel"])
        assert res.exit_code == 0, res.output
        runs = [s for s in rx.spans() if s.name.startswith("invoke_workflow ")]
    assert len(runs) == 8 and len({s.trace_id for s in runs}) == 8


def test_bench_run_raw_mode_says_it_makes_no_spans(instances, tmp_path):
    trace = tmp_path / "raw.otlp.jsonl"
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(instances), "--mode", "raw", "--model", "sim:perfect",
                                   "--out", str(tmp_path / "run"), "--no-progress", "--trace-file", str(trace)])
    assert res.exit_code == 0, res.output
    assert "raw mode makes no spans" in res.stderr and not trace.exists()


@pytest.mark.slow
def test_a_dead_endpoint_is_one_line_and_a_bounded_number_of_attempts(instances, tmp_path, monkeypatch):
    """Eight instances make several span batches; the endpoint sees one export's connections."""
    with ResettingEndpoint() as dead:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead.url)
        res = CliRunner().invoke(app, ["bench", "run", "--instances", str(instances), "--mode", "guarded", "--model", "sim:perfect",
                                       "--out", str(tmp_path / "run"), "--no-progress", "--otel", "--concurrency", "2"])
        connections = dead.connections
    assert res.exit_code == 0, res.output
    said = [line for line in res.stderr.splitlines() if "could not export" in line]
    assert len(said) == 1, res.stderr
    assert said[0].startswith("stepguard: could not export spans to " + dead.url)
    assert "Traceback" not in res.output and "Warning" not in res.stderr
    assert 1 <= connections <= MAX_CONNECTIONS_PER_EXPORT


def test_after_a_failure_exports_pause_so_attempts_stay_bounded(tmp_path):
    """Five runs, each flushed on its own (five batches): one export is tried, the rest skipped."""
    said: list[str] = []
    with ResettingEndpoint() as dead:
        tp, mp = configure_telemetry(otlp_endpoint=dead.url, otlp_from_env=False, on_export_failure=said.append)
        for _ in range(5):
            Guard(ScriptedModel(), GuardConfig(chunk_size=5), observer=OtelObserver(tp, mp)).run(_procedure(), INPUTS)
            tp.force_flush(5000)
        shutdown(timeout_s=5)
        connections = dead.connections
    assert len(said) == 1 and "\n" not in said[0]
    assert 1 <= connections <= MAX_CONNECTIONS_PER_EXPORT


@pytest.mark.slow
def test_run_otel_to_a_dead_endpoint_says_one_line(tmp_path, monkeypatch):
    proc = tmp_path / "p.yaml"
    proc.write_text("name: cli_demo\ninputs: [x, y]\nsteps:\n  - {var: S1, expr: x}\n  - {var: S2, expr: S1 + y}\n")
    with ResettingEndpoint() as dead:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead.url)
        res = CliRunner().invoke(app, ["run", str(proc), "-i", "x=7", "-i", "y=3", "--model", "sim:perfect", "--otel", "-q"])  # -q: no progress lines
    assert res.exit_code == 0, res.output
    assert [line for line in res.stderr.splitlines() if line.strip()] == [
        line for line in res.stderr.splitlines() if line.startswith("stepguard: could not export spans to ")]
    assert len(res.stderr.strip().splitlines()) == 1
