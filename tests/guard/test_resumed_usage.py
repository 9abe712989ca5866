"""A resumed run says it was resumed and what this call spent; the thread's usage stays the original run's.

``stepguard run ... --checkpoint ck.sqlite --thread-id X`` run twice printed, the second time, the
first run's calls and tokens as if it had made them (the finished thread is given back from its
checkpoint: no model call). The result now says ``resumed`` (``finished``/``unfinished``) and
``spent`` (this call's calls and tokens); ``usage`` stays the thread's. The neighbours: a new run
(``spent`` is its usage), a thread stopped mid-run and gone on with (``spent`` is the new calls
only), ``--json``, the async twin, and the OpenAI ``usage`` of the proxy and of ``GuardedOpenAI``
(what the call spent, so a finished thread's answer is not billed twice).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig
from stepguard.cli import app
from stepguard.errors import ModelError
from stepguard.guard import GuardResult, sqlite_checkpointer
from stepguard.procedure import load_procedure
from tests._fakes import FailsAt, ScriptedModel
from tests._paths import ROOT

pytestmark = pytest.mark.slow

INVOICE = load_procedure(ROOT / "examples" / "invoice.yaml")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}


def _argv(ck: Path, *more: str) -> list[str]:
    return ["run", str(ROOT / "examples" / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1",
            "--model", "sim:perfect", "--checkpoint", str(ck), "--thread-id", "inv-7", *more]


def test_the_cli_run_twice_says_the_second_was_resumed_and_spent_nothing(tmp_path: Path) -> None:
    ck = tmp_path / "ck.sqlite"
    first = CliRunner().invoke(app, _argv(ck))
    assert first.exit_code == 0, first.output
    assert "resumed" not in first.stdout
    status = next(line for line in first.stdout.splitlines() if line.startswith("status "))
    calls = int(status.split("calls ")[1].split()[0])
    tokens = status.split("tokens in/out ")[1].split()[0]
    assert calls > 0 and tokens != "0/0"
    again = CliRunner().invoke(app, _argv(ck))
    assert again.exit_code == 0, again.output
    status2 = next(line for line in again.stdout.splitlines() if line.startswith("status "))
    assert "calls 0  tokens in/out 0/0" in status2  # this run made no call
    resumed = next(line for line in again.stdout.splitlines() if line.startswith("resumed "))
    assert "resumed thread inv-7" in resumed and "nothing asked again" in resumed
    assert f"calls {calls}  tokens in/out {tokens}" in resumed  # the original run's, as the thread's


def test_the_cli_json_of_a_resumed_run_holds_both(tmp_path: Path) -> None:
    ck = tmp_path / "ck.sqlite"
    first = json.loads(CliRunner().invoke(app, _argv(ck, "--json")).stdout)
    again = json.loads(CliRunner().invoke(app, _argv(ck, "--json")).stdout)
    assert first["resumed"] is None and first["spent"]["model_calls"] == first["usage"]["model_calls"] > 0
    assert again["resumed"] == "finished"
    assert again["spent"]["model_calls"] == 0 and again["spent"]["input_tokens"] == 0
    assert again["usage"]["model_calls"] == first["usage"]["model_calls"]
    assert again["usage"]["input_tokens"] == first["usage"]["input_tokens"]
    assert GuardResult.model_validate(again).spent.model_calls == 0


def test_a_new_run_spent_its_usage_and_a_result_without_spent_reads_as_one() -> None:
    result = Guard(ScriptedModel(), GuardConfig(chunk_size=2)).run(INVOICE, INPUTS)
    assert result.resumed is None and result.spent == result.usage and result.usage.model_calls == 2
    data = result.model_dump(mode="json")
    del data["spent"], data["resumed"]  # a result written before these were recorded
    assert GuardResult.model_validate(data).spent == result.usage


def test_a_thread_stopped_mid_run_and_gone_on_spends_only_the_new_calls(tmp_path: Path) -> None:
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    cfg = GuardConfig(chunk_size=2)
    with pytest.raises(ModelError):  # the model fails at the second chunk: the first stays committed
        Guard(FailsAt(2), cfg, saver).run(INVOICE, INPUTS, thread_id="t")
    before = saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"]["progress"]["usage"]
    done = Guard(ScriptedModel(), cfg, saver).run(INVOICE, INPUTS, thread_id="t")
    assert done.status == "verified" and done.resumed == "unfinished"
    assert before["model_calls"] == 1
    assert done.spent.model_calls == done.usage.model_calls - before["model_calls"] == 1
    assert done.spent.input_tokens == done.usage.input_tokens - before["input_tokens"] > 0
    again = asyncio.run(Guard(ScriptedModel(), cfg, saver).arun(INVOICE, INPUTS, thread_id="t"))
    assert again.resumed == "finished" and again.spent.model_calls == 0 and again.usage == done.usage.model_copy(
        update={"wall_s": again.usage.wall_s})


def test_the_drop_in_clients_usage_is_what_the_call_spent(tmp_path: Path) -> None:
    import openai

    from stepguard.adapters import GuardedOpenAI
    from tests._stub_server import StubServer

    with StubServer() as stub:
        real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
        client = GuardedOpenAI(real, {"invoice": INVOICE}, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
        body = {"stepguard": {"procedure": "invoice", "inputs": INPUTS, "thread_id": "order-42"}}
        first = client.chat.completions.create(model="sim", messages=[], extra_body=body)
        again = client.chat.completions.create(model="sim", messages=[], extra_body=body)
    assert first.usage is not None and first.usage.prompt_tokens > 0
    assert again.usage is not None and again.usage.prompt_tokens == 0 and again.usage.completion_tokens == 0
    report = again.stepguard  # type: ignore[attr-defined]  # the guarded report: an attribute openai's type does not declare
    assert report.resumed == "finished" and report.usage.input_tokens == first.usage.prompt_tokens


def test_the_proxys_usage_is_what_the_call_spent(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    import openai

    from stepguard.serve import BackgroundServer, Upstream, create_app, open_checkpointer

    app = create_app(Upstream("sim:perfect"), {"invoice": INVOICE}, checkpointer=open_checkpointer(tmp_path / "ck.sqlite"))
    with BackgroundServer(app) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        body = {"stepguard": {"inputs": INPUTS, "thread_id": "inv-1"}}
        first = client.chat.completions.create(model="stepguard/invoice", messages=[], extra_body=body)
        again = client.chat.completions.create(model="stepguard/invoice", messages=[], extra_body=body)
    assert first.usage is not None and first.usage.prompt_tokens > 0
    assert again.usage is not None and again.usage.prompt_tokens == 0
    report = (again.model_extra or {})["stepguard"]
    assert report["resumed"] == "finished" and report["spent"]["model_calls"] == 0
    assert report["usage"]["input_tokens"] == first.usage.prompt_tokens
