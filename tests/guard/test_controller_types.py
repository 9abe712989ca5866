"""One deviation type and one usage type from detection to result (issue 42.1).

The :class:`~stepguard.verify.Deviation` the check finds is carried as it is into the run's events
and result (a :class:`~stepguard.guard.DeviationEvent` holds it beside what the policy did), and the
result's JSON keeps its flat form; usage is one type, :class:`stepguard.model.Usage`, from a reply's
token counts to a checkpoint's and a result's totals.
"""

from __future__ import annotations

import json

from stepguard import Guard, GuardConfig, GuardResult
from stepguard.guard import DeviationEvent, UsageTotals
from stepguard.guard._state import RunUsage
from stepguard.model import Usage
from stepguard.procedure import parse_procedure
from stepguard.verify import Deviation
from tests._fakes import FixedReplies

PROC = parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: b, expr: a * 2}\n")


def test_the_deviation_the_check_found_is_the_events_and_its_json_stays_flat() -> None:
    result = Guard(FixedReplies(["a = 3\nb = 7", "b = 6"]), GuardConfig(ladder=("restate",))).run(PROC, {"x": 2})
    event = result.deviations[0]
    assert isinstance(event.deviation, Deviation) and type(event.deviation) is Deviation
    assert (event.kind, event.step, event.got) == (event.deviation.kind, "b", event.deviation.got) == ("arithmetic_error", "b", "b = 7")
    written = json.loads(result.model_dump_json())["deviations"][0]
    assert list(written) == ["kind", "step", "detail", "got", "attempt", "chunk", "action", "rung"]
    assert GuardResult.model_validate_json(result.model_dump_json()) == result  # the flat form reads back the same


def test_an_event_reads_its_flat_form_its_nested_form_and_keywords_alike() -> None:
    dev = Deviation(kind="arithmetic_error", step="b", detail="b was computed as 7", got="b = 7")
    nested = DeviationEvent(deviation=dev, attempt=1, chunk=2, action="reprompt", rung="restate")
    flat = {"kind": "arithmetic_error", "step": "b", "detail": "b was computed as 7", "got": "b = 7", "attempt": 1, "chunk": 2,
            "action": "reprompt", "rung": "restate"}
    assert nested.deviation is dev  # carried as it is
    assert DeviationEvent.model_validate(flat) == nested == DeviationEvent(**flat)
    assert nested.model_dump() == flat and nested.model_dump_json() == json.dumps(flat, separators=(",", ":"))


def test_usage_is_one_type_from_a_reply_to_the_result() -> None:
    assert RunUsage is UsageTotals is Usage
    reply = Usage(40, 9, 8)  # an adapter's token counts, by position
    assert (reply.input_tokens, reply.output_tokens, reply.cached_tokens, reply.model_calls) == (40, 9, 8, 0)
    total = reply + Usage(1, 1, model_calls=2, model_s=0.5)
    assert total == Usage(41, 10, 8, model_calls=2, model_s=0.5)
    result = Guard(FixedReplies(["a = 3", "b = 6"])).run(PROC, {"x": 2})
    assert type(result.usage) is Usage and result.usage.model_calls == 2
    assert list(json.loads(result.model_dump_json())["usage"]) == ["model_calls", "input_tokens", "output_tokens", "cached_tokens",
                                                                   "wall_s", "model_s"]
