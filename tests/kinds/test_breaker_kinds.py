"""A step kind of one's own that overrides some parts or raises inside them (issue 42, breaker round).

A kind's own code that raises (a ``ValueError``, a ``KeyError``, ...) stopped the run with that bare
error, naming neither the kind nor the step. It stops it with a :class:`KindError` that names the kind,
its method and the step; what the run committed before stays checkpointed, and the thread resumes
once the kind is fixed, without asking the committed steps again. An error the protocol gives a
meaning (``value_of``'s ``ValueError``: no value of the step's type; a :class:`ToolError`) is read as
before. A kind that overrides one part only runs on the defaults of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from stepguard import Guard
from stepguard.errors import KindError, StepguardError
from stepguard.kinds import Kind, StepContext, register_kind, step_kinds, unregister_kind
from stepguard.procedure import Step, parse_procedure
from tests._fakes import FixedReplies

FILE = "name: p\ninputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: b, kind: odd}\n  - {var: c, expr: a * 2}\n"


class _OddStep(Step):
    kind: Literal["odd"]
    type: Literal["string"] = "string"


def _kind(method: str | None = None, exc: Exception | None = None) -> type[Kind]:
    """The kind ``odd`` (a string step), whose ``method`` raises ``exc``."""

    class Odd(Kind):
        name = "odd"
        step_model = _OddStep

    if method is not None:
        def raiser(self: Kind, *args: Any, **kwargs: Any) -> Any:
            raise exc  # type: ignore[misc]

        setattr(Odd, method, raiser)
    return Odd


@pytest.fixture
def odd() -> Iterator[None]:
    yield
    if any(k.name == "odd" for k in step_kinds()):
        unregister_kind("odd")


@pytest.mark.usefixtures("odd")
@pytest.mark.parametrize("method", ["check", "line", "notes", "example", "provenance", "grade", "result_shape", "value_of"])
@pytest.mark.parametrize("exc", [KeyError("k"), ZeroDivisionError("zero"), AttributeError("no such")], ids=lambda e: type(e).__name__)
def test_a_kind_that_raises_stops_the_run_naming_the_kind_method_and_step(method: str, exc: Exception) -> None:
    register_kind(_kind(method, exc))
    saver = InMemorySaver()
    with pytest.raises(KindError) as info:
        Guard(FixedReplies(["a = 3", "b = hi", "c = 6"]), checkpointer=saver).run(parse_procedure(FILE), {"x": 2}, thread_id="t")
    err = info.value
    assert (err.kind, err.method, err.step) == ("odd", method, "b")
    assert "step kind 'odd'" in str(err) and f"in {method} at step b" in str(err) and type(exc).__name__ in str(err)
    assert isinstance(err.__cause__, type(exc))
    committed = saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"]["progress"]["values"]
    assert committed["a"] == "3"  # committed before the kind raised: kept


@pytest.mark.usefixtures("odd")
def test_the_thread_resumes_once_the_kind_is_fixed_without_asking_the_committed_step_again() -> None:
    register_kind(_kind("check", KeyError("k")))
    saver, proc = InMemorySaver(), parse_procedure(FILE)
    with pytest.raises(KindError):
        Guard(FixedReplies(["a = 3", "b = hi"]), checkpointer=saver).run(proc, {"x": 2}, thread_id="t")
    unregister_kind("odd")
    register_kind(_kind())
    model = FixedReplies(["b = hi", "c = 6"])
    result = Guard(model, checkpointer=saver).run(parse_procedure(FILE), {"x": 2}, thread_id="t")
    assert result.values == {"a": 3, "b": "hi", "c": 6}
    assert result.usage.model_calls == 4 and result.spent.model_calls == 2  # each call counted once; a asked once
    assert not any("a = ?" in p for p in model.prompts)


@pytest.mark.usefixtures("odd")
def test_an_async_run_names_the_kind_too() -> None:
    register_kind(_kind("check", KeyError("k")))
    with pytest.raises(KindError, match="in check at step b"):
        asyncio.run(Guard(FixedReplies(["a = 3", "b = hi"])).arun(parse_procedure(FILE), {"x": 2}))


@pytest.mark.usefixtures("odd")
def test_value_of_refusing_a_text_is_still_a_type_error_re_asked() -> None:
    """``value_of``'s ValueError says the reply is no value of the step's type: a deviation, re-asked."""
    register_kind(_kind("value_of", ValueError("not one")))
    proc = parse_procedure(FILE.replace("  - {var: c, expr: a * 2}\n", ""))
    with pytest.raises(StepguardError) as info:
        Guard(FixedReplies(["a = 3", *["b = hi"] * 10])).run(proc, {"x": 2})
    assert not isinstance(info.value, KindError)
    assert [e.kind for e in info.value.result.deviations][:1] == ["type_error"]  # type: ignore[attr-defined]


@pytest.mark.usefixtures("odd")
def test_a_stepguard_error_of_the_kind_passes_as_it_is() -> None:
    from stepguard.errors import ToolError

    register_kind(_kind("check", ToolError("the tool is down", "catalog")))
    with pytest.raises(ToolError, match="the tool is down"):
        Guard(FixedReplies(["a = 3", "b = hi"])).run(parse_procedure(FILE), {"x": 2})


@pytest.mark.usefixtures("odd")
def test_a_kind_that_overrides_one_part_runs_on_the_others_defaults() -> None:
    class OnlyNotes(Kind):
        name = "odd"
        step_model = _OddStep

        def notes(self, ctx: StepContext) -> list[str]:
            return ["any text"]

    register_kind(OnlyNotes)
    model = FixedReplies(["a = 3", "b = hello", "c = 6"])
    result = Guard(model).run(parse_procedure(FILE), {"x": 2})
    assert result.values == {"a": 3, "b": "hello", "c": 6}
    assert any("any text" in p for p in model.prompts)


@pytest.mark.usefixtures("odd")
def test_a_method_changed_after_registration_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    Odd = _kind()
    register_kind(Odd)
    monkeypatch.setattr(Odd, "grade", lambda self, ctx: "exact", raising=False)
    result = Guard(FixedReplies(["a = 3", "b = hi", "c = 6"])).run(parse_procedure(FILE), {"x": 2})
    assert result.grades["b"] == "exact"


@pytest.mark.parametrize("name", ["ｕpper", "ﬁx", "upper\u0301"])
def test_a_kind_name_outside_ascii_is_refused_naming_it(name: str) -> None:
    """Python folds ``ｕpper`` to ``upper`` as a name (NFKC), so a kind of that name would be a second kind
    that a procedure file's ``kind: upper`` could never reach, or could reach by accident."""
    from stepguard.errors import ProcedureError

    step = type("FoldStep", (Step,), {"__annotations__": {"kind": Literal[name]}, "kind": name})  # type: ignore[valid-type]  # a name from the parameter
    cls = type("Fold", (Kind,), {"name": name, "step_model": step})
    with pytest.raises(ProcedureError, match="ASCII identifier"):
        register_kind(cls)
    assert name not in {k.name for k in step_kinds()}
