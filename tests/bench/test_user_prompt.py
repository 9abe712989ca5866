"""A user's own prompt as the raw baseline (issue 32): a prompt file beside the procedure, sent as
written with the inputs filled in, the answer read as declared (exactly or refused), recorded in
run.json; and the report over a user's suite (per-case table, per-procedure rates, no paper framing).

The must-show fixture is ``tests/data/shipping_user``: the five-step shipping procedure with the
messages its user sends today (the parcel as JSON in the user message, the final price at the end).
"""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.adapters import load_model
from stepguard.adapters.models.openai_compat import OpenAICompatibleModel
from stepguard.bench._raw import case_messages, score_case
from stepguard.bench.report import build_report
from stepguard.bench.run import run_benchmark
from stepguard.bench.store import RESULTS, iter_rows
from stepguard.bench.suites import load_suite
from stepguard.bench.user_prompt import load_user_prompt
from stepguard.cli._app import app
from stepguard.errors import ProcedureError, RunStoreError
from stepguard.procedure import load_procedure
from tests._fakes import DIGIT_SUB_STEPS, ScriptedModel
from tests._paths import DATA, ROOT
from tests._stub_server import StubServer

SHIPPING = DATA / "shipping_user"
PRODUCTION = ROOT / "benchmarks" / "production"


def _rows(rundir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in iter_rows(rundir / RESULTS)}


def _user_model(body: str) -> str:
    """The stub server's "model" for the shipping prompt: it shows its working as asked, but takes the
    actual weight as the billable one (it forgets the volumetric rule), so a bulky parcel comes out wrong."""
    parcel = json.loads(body, parse_float=Decimal, parse_int=Decimal)
    vol = (parcel["length_cm"] * parcel["width_cm"] * parcel["height_cm"] / 5000).quantize(Decimal("0.01"), "ROUND_HALF_UP")
    billable = Decimal(parcel["weight_kg"])
    base = Decimal("5.00") if billable <= 1 else Decimal("8.50") if billable <= 5 else Decimal("8.50") + (billable - 5) * Decimal("1.20")
    base = base.quantize(Decimal("0.01"), "ROUND_HALF_UP")
    zone = (base * {1: Decimal(1), 2: Decimal("1.15"), 3: Decimal("1.30")}[int(parcel["zone"])]).quantize(Decimal("0.01"), "ROUND_HALF_UP")
    price = (zone * Decimal("1.075")).quantize(Decimal("0.01"), "ROUND_HALF_UP")
    return (f"volumetric_kg = {vol}\nbillable_kg = {billable:.2f}\nbase_price = {base}\nzone_price = {zone}\nprice = {price}\n\n"
            f"The final price is ${price}.")


def test_the_users_messages_are_sent_as_written_with_the_inputs_as_json() -> None:
    case = load_suite(SHIPPING)[0]
    messages, max_tokens, prompt = case_messages(case)
    assert prompt == "user" and max_tokens is None
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == '{"weight_kg": 25.5, "length_cm": 70, "width_cm": 17, "height_cm": 6, "zone": 2}'
    assert messages[0]["content"].startswith("You are the shipping-cost calculator") and "$8.50" in messages[0]["content"]


@pytest.mark.parametrize(("reply", "answer", "refused"), [
    ("Billable 25.50 kg, so the final price is $40.93.", Fraction(4093, 100), None),
    ("Total: 1,176.50", Fraction(235300, 200), None),
    ("The price is 40,93", None, "is not one number"),   # a decimal comma: refused, never read as 93
    ("price 4.093e1", None, "exponent"),
    ("The levy is 7.5%", None, "percent"),
    ("I cannot compute that.", None, "no number"),
])
def test_the_last_number_is_read_exactly_or_refused(reply: str, answer: Fraction | None, refused: str | None) -> None:
    prompt = load_suite(SHIPPING)[0].raw_prompt
    assert prompt is not None
    read = prompt.read_answer(reply)
    assert read.value == answer
    assert (read.refused is None) if refused is None else (refused in str(read.refused))


def _prompt_file(tmp_path: Path, answer: str, user: str = "{inputs_json}") -> Path:
    p = tmp_path / "shipping.prompt.yaml"
    p.write_text(f"messages:\n  - {{role: user, content: {json.dumps(user)}}}\nanswer: {answer}\n", encoding="utf-8")
    return p


def test_json_field_and_regex_formats(tmp_path: Path) -> None:
    proc = load_procedure(SHIPPING / "shipping.yaml")
    js = load_user_prompt(_prompt_file(tmp_path, "{format: json_field, field: result.price}"), proc)
    assert js.read_answer('Here you go:\n```json\n{"result": {"price": 40.93}}\n```').value == Fraction(4093, 100)
    assert js.read_answer('{"result": {"price": "40.93"}} done').value == Fraction(4093, 100)
    assert "no field" in str(js.read_answer('{"price": 40.93}').refused)
    rx = load_user_prompt(_prompt_file(tmp_path, "{format: regex, pattern: 'Total: \\$?(\\S+)'}"), proc)
    assert rx.read_answer("Total: $40.93 incl. levy").value == Fraction(4093, 100)
    assert rx.read_answer("Total: 12,5").value is None


@pytest.mark.parametrize(("answer", "user", "says"), [
    ("{format: last_number}", "Parcel of {weigth_kg} kg", "did you mean {weight_kg}"),
    ("{format: regex, pattern: '(a)(b)'}", "{inputs_json}", "exactly one group"),
    ("{format: last}", "{inputs_json}", "format must be"),
    ("{format: json_field}", "{inputs_json}", "takes exactly"),
])
def test_a_prompt_file_that_does_not_fit_is_refused_naming_the_key(tmp_path: Path, answer: str, user: str, says: str) -> None:
    with pytest.raises(ProcedureError, match="shipping.prompt.yaml") as err:
        load_user_prompt(_prompt_file(tmp_path, answer, user), load_procedure(SHIPPING / "shipping.yaml"))
    assert says in str(err.value)


def test_a_literal_brace_and_a_dollar_stay_as_written(tmp_path: Path) -> None:
    prompt = load_user_prompt(_prompt_file(tmp_path, "{format: last_number}", 'Rate $1.20/kg; reply as {{price}}; zone {zone}; {"x": 1}'),
                              load_procedure(SHIPPING / "shipping.yaml"))
    assert prompt.render({"zone": 2})[0]["content"] == 'Rate $1.20/kg; reply as {price}; zone 2; {"x": 1}'


def test_a_prompt_file_without_its_procedure_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    shutil.copytree(SHIPPING, folder)
    (folder / "other.prompt.yaml").write_text("messages: []\n", encoding="utf-8")
    with pytest.raises(ProcedureError, match="a prompt file with no procedure file"):
        load_suite(folder)


@pytest.mark.slow
def test_shipping_raw_through_the_users_messages_guarded_on_sim_and_a_scripted_stub_and_the_report(tmp_path: Path) -> None:
    """Issue 32's must-show: raw sends the user's own messages (to an OpenAI-compatible stub server),
    guarded runs on sim:paper and on a scripted stub, and the report's per-case table names where raw went wrong."""
    with StubServer() as stub:
        stub.script = _user_model
        model = OpenAICompatibleModel("scripted", base_url=stub.base_url, api_key_env=None, timeout=20.0, max_retries=0)
        summary = run_benchmark(SHIPPING, "raw", model, tmp_path / "raw", progress=False, concurrency=1)
        sent = [r["messages"] for r in stub.requests]
    assert summary.written == 3 and summary.correct == 2
    system = (SHIPPING / "shipping.prompt.yaml").read_text(encoding="utf-8")
    assert all(m[0]["role"] == "system" and m[0]["content"].splitlines()[0] in system for m in sent)
    assert sorted(m[1]["content"] for m in sent)[0] == '{"weight_kg": 0.8, "length_cm": 20, "width_cm": 15, "height_cm": 10, "zone": 1}'
    raw = _rows(tmp_path / "raw")
    bulky = raw["shipping/bulky-zone-3"]
    assert bulky["raw_prompt"] == "user" and bulky["first_answer"] == "11.88" and not bulky["correct"]
    assert bulky["deviated_at"] == {"step": "billable_kg", "how": "step line", "wrote": "3.2", "expected": "14.40"}
    assert raw["shipping/light-zone-1"]["correct"] and raw["shipping/light-zone-1"]["deviated_at"] is None
    meta = json.loads((tmp_path / "raw" / "run.json").read_text(encoding="utf-8"))
    assert list(meta["raw_prompt"]) == ["shipping.prompt.yaml"]

    run_benchmark(SHIPPING, "guarded", load_model("sim:paper"), tmp_path / "guarded", progress=False)
    run_benchmark(SHIPPING, "guarded", ScriptedModel(always_wrong={"zone_price", *DIGIT_SUB_STEPS}), tmp_path / "stub", progress=False)
    assert all(r["status"] == "verified" for r in _rows(tmp_path / "guarded").values())
    stub_rows = _rows(tmp_path / "stub")
    assert {r["deviated_at"]["step"] for r in stub_rows.values()} == {"zone_price"}

    report = build_report([tmp_path / "raw", tmp_path / "guarded", tmp_path / "stub"], tmp_path / "rep")
    md = report.report_md.read_text(encoding="utf-8")
    assert "arXiv" not in md and "reconstruction" not in md and "paper's" not in md and "stars" not in md
    assert [p.name for p in report.plots] == ["procedures.png"]
    line = next(x for x in md.splitlines() if "| bulky-zone-3 |" in x)
    assert "weight_kg=3.2, length_cm=60, width_cm=40, height_cm=30, zone=3" in line and "| 27.64 |" in line
    assert "billable_kg: wrote 3.2, expected 14.40" in line                 # where raw went wrong
    assert "zone_price flagged: wrote 26.71, expected 25.71 (arithmetic_error)" in line  # where the stub did, caught
    assert "| `shipping` | 3 | 5 | 2/3 67% [21, 94] | 3/3 100% [44, 100]" in md  # per procedure, Wilson intervals
    summary_json = json.loads(report.summary_json.read_text(encoding="utf-8"))
    assert summary_json["suite"] is True and summary_json["runs"][0]["procedures"]["shipping"]["n"] == 3


def test_a_changed_prompt_file_is_another_raw_run_and_guarded_runs_ignore_it(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    shutil.copytree(SHIPPING, folder)
    model = load_model("sim:perfect")
    run_benchmark(folder, "raw", model, tmp_path / "raw", progress=False)
    run_benchmark(folder, "guarded", model, tmp_path / "guarded", progress=False)
    (folder / "shipping.prompt.yaml").write_text((folder / "shipping.prompt.yaml").read_text() + "# edited\n", encoding="utf-8")
    with pytest.raises(RunStoreError, match="raw_prompt"):
        run_benchmark(folder, "raw", model, tmp_path / "raw", progress=False)
    assert run_benchmark(folder, "guarded", model, tmp_path / "guarded", progress=False).skipped == 3
    (folder / "shipping.prompt.yaml").unlink()  # without it: stepguard's own prompt, another run again
    with pytest.raises(RunStoreError, match="raw_prompt"):
        run_benchmark(folder, "raw", model, tmp_path / "raw", progress=False)
    run_benchmark(folder, "raw", model, tmp_path / "raw2", progress=False)
    assert {r["raw_prompt"] for r in _rows(tmp_path / "raw2").values()} == {"stepguard"}


def test_the_simulator_cannot_read_a_users_prose_so_its_raw_answer_is_missing(tmp_path: Path) -> None:
    run_benchmark(SHIPPING, "raw", load_model("sim:paper"), tmp_path / "raw", progress=False)
    rows = _rows(tmp_path / "raw")
    assert not any(r["correct"] for r in rows.values())
    assert all(r["raw_prompt"] == "user" and r["deviated_at"] is not None for r in rows.values())


def test_the_production_suite_sends_shippings_own_prompt_and_stepguards_elsewhere(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(PRODUCTION), "--mode", "raw", "--model", "sim:perfect",
                                   "--out", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == 0, res.output
    rows = _rows(tmp_path / "r")
    assert {r["raw_prompt"] for i, r in rows.items() if i.startswith("shipping/")} == {"user"}
    assert {r["raw_prompt"] for i, r in rows.items() if not i.startswith("shipping/")} == {"stepguard"}
    assert all(r["correct"] for i, r in rows.items() if not i.startswith("shipping/"))  # sim:perfect on stepguard's prompt
    meta = json.loads((tmp_path / "r" / "run.json").read_text(encoding="utf-8"))
    assert list(meta["raw_prompt"]) == ["shipping.prompt.yaml"]


def test_a_reply_without_step_lines_names_the_first_step_whose_value_it_never_shows() -> None:
    bulky = next(c for c in load_suite(SHIPPING) if c.id == "shipping/bulky-zone-3")
    score, extra = score_case(bulky, "Volumetric weight 14.40 kg, so the final price is $11.88.")
    assert score.first_answer == "11.88" and not score.correct and score.labels == []
    assert extra["deviated_at"] == {"step": "base_price", "how": "not shown", "wrote": None, "expected": "19.78"}
    score, extra = score_case(bulky, "Final price: 27,64")
    assert score.labels == ["missing_answer"] and "is not one number" in extra["answer_read"]["refused"]


@pytest.mark.slow
def test_a_suites_pairs_are_grouped_by_procedure_in_compare_and_the_report(tmp_path: Path) -> None:
    """A suite varies procedures, not step counts: its paired table has one line per procedure (two
    five-step procedures would share one "5 steps" line if grouped by configuration)."""
    from stepguard.bench.compare import compare_runs

    folder = tmp_path / "suite"
    shutil.copytree(SHIPPING, folder)
    for name in ("commission.yaml", "commission.inputs.yaml"):
        shutil.copy(PRODUCTION / name, folder / name)
    model = load_model("sim:perfect")
    run_benchmark(folder, "raw", model, tmp_path / "raw", progress=False)        # shipping's raw: the user's prose, unread
    run_benchmark(folder, "guarded", model, tmp_path / "guarded", progress=False)
    commission = sum(1 for i in _rows(tmp_path / "raw") if i.startswith("commission/"))
    cmp = compare_runs(tmp_path / "raw", tmp_path / "guarded", "verified")
    by = {p.procedure: p for p in cmp.configs}
    assert set(by) == {"commission", "shipping"} and {p.n_steps for p in cmp.configs} == {5}
    assert (by["shipping"].n, by["shipping"].raw_right, by["shipping"].only_guarded) == (3, 0, 3)
    assert (by["commission"].n, by["commission"].both_right) == (commission, commission)
    assert cmp.overall.n == 3 + commission and cmp.overall.procedure is None
    table = cmp.table().splitlines()
    assert table[1].startswith("procedure ") and [line.split()[0] for line in table[2:]] == ["commission", "shipping", "overall"]
    assert len({len(line) for line in table[1:]}) == 1  # columns aligned past the longest procedure name

    md = build_report([tmp_path / "raw", tmp_path / "guarded"], tmp_path / "rep").report_md.read_text(encoding="utf-8")
    paired = md[md.index("Paired:"):]
    assert "| procedure | steps | pairs |" in paired
    assert f"| `commission` | 5 | {commission} | {commission}/{commission}" in paired
    assert "| `shipping` | 5 | 3 | 0/3 0% [0, 56] | 3/3 100% [44, 100] | 0 | 0 | 0 | 3 |" in paired
    assert f"| **all** | - | {3 + commission} |" in paired


@pytest.mark.slow
def test_run_json_records_the_max_tokens_a_prompt_file_sent(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    shutil.copytree(SHIPPING, folder)
    (folder / "shipping.prompt.yaml").write_text((folder / "shipping.prompt.yaml").read_text() + "max_tokens: 300\n", encoding="utf-8")
    with StubServer() as stub:
        stub.script = _user_model
        model = OpenAICompatibleModel("scripted", base_url=stub.base_url, api_key_env=None, timeout=20.0, max_retries=0)
        run_benchmark(folder, "raw", model, tmp_path / "raw", progress=False, concurrency=1)
        sent = {r.get("max_tokens") for r in stub.requests}
    assert sent == {300}
    meta = json.loads((tmp_path / "raw" / "run.json").read_text(encoding="utf-8"))
    assert meta["generation"]["max_tokens"] == 300 and "max_tokens_by_prompt" not in meta["generation"]
    # the suite beside procedures without a prompt file: the allowance for them, the file's own for its cases
    mixed = tmp_path / "mixed"
    shutil.copytree(PRODUCTION, mixed)
    (mixed / "shipping.prompt.yaml").write_text((folder / "shipping.prompt.yaml").read_text(), encoding="utf-8")
    run_benchmark(mixed, "raw", load_model("sim:perfect"), tmp_path / "mixed_raw", progress=False)
    generation = json.loads((tmp_path / "mixed_raw" / "run.json").read_text(encoding="utf-8"))["generation"]
    assert generation["max_tokens"] == "40*n_steps+64" and generation["max_tokens_by_prompt"] == {"shipping.prompt.yaml": 300}
    run_benchmark(SHIPPING, "raw", load_model("sim:perfect"), tmp_path / "plain", progress=False)  # no max_tokens in the file
    plain = json.loads((tmp_path / "plain" / "run.json").read_text(encoding="utf-8"))["generation"]
    assert plain["max_tokens"] == "40*n_steps+64" and "max_tokens_by_prompt" not in plain
