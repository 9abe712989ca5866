"""A quotient no model can write (issue 45): ``expr: a / b`` on a ``number`` step gives ``1/3`` for
a = 1, b = 3, which no reply can hold as a value, so every run failed "unevaluated expression".
``stepguard check`` now warns with the fix, and a run whose inputs give such a value is refused
before any call, by every way in. Neighbours: a quotient with a finite decimal form (1 / 4), a
decimal step with a scale, ``round(a / b, 2)``, ``//``, a hidden check that divides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, ProcedureError, parse_procedure
from stepguard.adapters import load_model
from stepguard.cli import app
from tests._fakes import ReplyModel

RATIO = "name: ratio\ninputs: [a, b]\nsteps:\n  - {var: r, expr: a / b}\n"
WARNING = "warning: '/' can give a quotient with no finite decimal form"
REFUSED = "its expr 'a / b' gives 1/3 on these inputs, which has no finite decimal form, so no model can write it"


def _check(tmp_path: Path, text: str) -> str:
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(tmp_path / "p.yaml")])
    assert out.exit_code == 0, out.output
    return out.output


@pytest.mark.parametrize(("steps", "warned"), [
    ("{var: r, expr: a / b}", True),
    ("{var: r, instruction: Divide a by b., check: a / b}", True),  # a hidden check is the expected value
    ("{var: r, expr: a / b, type: decimal, scale: 2}", False),
    ("{var: r, expr: 'round(a / b, 2)'}", False),
    ("{var: r, expr: a // b}", False),
    ("{var: r, expr: a * b, check: 'value / 2 >= 0'}", False),  # a predicate: its value is the model's
])
def test_check_warns_where_a_quotient_may_have_no_decimal_form(tmp_path: Path, steps: str, warned: bool) -> None:
    out = _check(tmp_path, f"name: p\ninputs: [a, b]\nsteps:\n  - {steps}\n")
    assert (WARNING in out) is warned, out
    if warned:
        assert "declare type: decimal with a scale" in out and "round(..., 2)" in out


def test_a_run_whose_quotient_has_no_decimal_form_is_refused_before_any_call() -> None:
    model = ReplyModel([])
    with pytest.raises(ProcedureError, match=REFUSED) as info:
        Guard(model).run(parse_procedure(RATIO, "ratio.yaml"), {"a": 1, "b": 3})
    assert model.prompts == [] and "round(a / b, 2)" in str(info.value)
    assert Guard(load_model("sim:perfect")).run(parse_procedure(RATIO, "ratio.yaml"), {"a": 1, "b": 4}).answer_text == "0.25"


def test_the_cli_and_the_proxy_refuse_it_too(tmp_path: Path) -> None:
    (tmp_path / "ratio.yaml").write_text(RATIO, encoding="utf-8")
    out = CliRunner().invoke(app, ["run", str(tmp_path / "ratio.yaml"), "-i", "a=1", "-i", "b=3", "--model", "sim:perfect"])
    assert out.exit_code == 5 and REFUSED in out.output
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from stepguard.serve import create_app
    from stepguard.serve._upstream import Upstream

    with TestClient(create_app(Upstream("sim:perfect"), {"ratio": parse_procedure(RATIO, "ratio.yaml")})) as proxy:
        reply = proxy.post("/v1/chat/completions", json={"model": "stepguard/ratio", "messages": [],
                                                          "stepguard": {"inputs": {"a": 1, "b": 3}}})
    assert reply.status_code == 400 and REFUSED in reply.json()["error"]["message"]


def test_a_streamed_call_is_refused_before_its_stream_starts() -> None:
    """Refused where every way in reads expected values (Procedure.expected_values): the proxy answers a
    stream=true request 400, not an error event after the stream began."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from stepguard.serve import create_app
    from stepguard.serve._upstream import Upstream

    with TestClient(create_app(Upstream("sim:perfect"), {"ratio": parse_procedure(RATIO, "ratio.yaml")})) as proxy:
        reply = proxy.post("/v1/chat/completions", json={"model": "stepguard/ratio", "messages": [], "stream": True,
                                                          "stepguard": {"inputs": {"a": 1, "b": 3}}})
    assert reply.status_code == 400 and REFUSED in reply.json()["error"]["message"]
    with pytest.raises(ProcedureError, match=REFUSED):
        parse_procedure(RATIO, "ratio.yaml").expected_values({"a": 1, "b": 3})
