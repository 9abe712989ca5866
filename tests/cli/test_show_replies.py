"""``stepguard run --show-replies`` (issue 32 item 3): the model's raw replies of a run, seen without
turning on content capture; spans still hold no prompt or reply text."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from stepguard.cli import app
from stepguard.telemetry import read_trace_file
from tests._paths import ROOT

ARGV = ["run", str(ROOT / "examples" / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:paper"]


def test_show_replies_prints_each_reply_as_written_on_stderr(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    trace = tmp_path / "t.jsonl"
    out = CliRunner().invoke(app, [*ARGV, "--chunked", "--show-replies", "--json", "--trace-file", str(trace)])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["status"] == "verified"  # stdout is still the result alone
    assert "--- reply (chunk 0, step 1, attempt 0; finish stop) ---" in out.stderr
    assert "total = 95.09 + 9.51 = 104.6" in out.stderr  # as the model wrote it (the result says 104.60)
    keys = {a.key for r in read_trace_file(trace) for rs in r.resource_spans for ss in rs.scope_spans
            for s in ss.spans for a in s.attributes}
    assert "gen_ai.output.messages" not in keys and "gen_ai.input.messages" not in keys  # content capture still off


def test_without_the_flag_no_reply_is_printed() -> None:
    out = CliRunner().invoke(app, ARGV)
    assert out.exit_code == 0, out.output
    assert "--- reply" not in out.output and "104.6\n" not in out.stderr
