"""A breaker's faults in "one behaviour in every way in" (issue 32 item 5): the drop-in client and the
proxy on the same hostile call. Each test failed on the code before its fix."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from starlette.testclient import TestClient

from stepguard.adapters import GuardedOpenAI, InvalidGuardedCall

from .test_one_behaviour import PROCEDURES, client, proxy, stub  # noqa: F401  # the module's fixtures

pytestmark = pytest.mark.slow

IMAGE = {"type": "image_url", "image_url": {"url": "http://example.invalid/x.png"}}


@pytest.mark.parametrize(("messages", "stepguard"), [
    ([{"role": "user", "content": [IMAGE]}], {"procedure": "invoice"}),  # the inputs' message: was blamed on stepguard.inputs
    ([{"role": "user", "content": [{"type": "text", "text": "go"}, IMAGE]}], {"procedure": "invoice"}),
    ([{"role": "user", "content": [IMAGE]}], {"procedure": "invoice", "inputs": {"subtotal": "100.10", "rate": "0.1"}}),  # context
])
def test_a_part_the_guard_cannot_read_is_refused_where_it_is_both_ways(client: GuardedOpenAI, proxy: TestClient,  # noqa: F811
                                                                        messages: list[dict[str, Any]], stepguard: dict[str, Any]) -> None:
    with pytest.raises(InvalidGuardedCall) as err:
        client.chat.completions.create(model="sim", messages=messages, extra_body={"stepguard": stepguard})
    body = {"model": "stepguard/invoice", "messages": messages, "stepguard": {k: v for k, v in stepguard.items() if k != "procedure"}}
    reply = proxy.post("/v1/chat/completions", content=json.dumps(body), headers={"content-type": "application/json"})
    error = reply.json()["error"]
    where = f"messages[0].content[{len(messages[0]['content']) - 1}]"
    assert err.value.location == where and error["param"] == where
    assert "'image_url' part cannot be given to a guarded run" in str(err.value)
    assert str(err.value) == error["message"]
