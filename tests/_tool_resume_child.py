"""Child process for the tool kill-and-resume tests (tests/guard/test_tool_crashes.py): the refund
procedure on ``sim:perfect`` with a sqlite checkpointer; its ``issue_refund`` appends the key it
was given (or ``-``) to a log, one line per execution.

    python -m tests._tool_resume_child DB LOG OUT MODE TOOL

MODE: ``hang`` (the refund sleeps after logging, for the parent to kill -9 during the call),
``commit`` (the process kills itself -9 in the commit after the refund ran), ``run`` (nothing).
TOOL: ``plain``, ``idempotent`` or ``keyed`` (the refund takes the guard's idempotency key).
OUT gets the result's JSON, or ``refused: <message>`` (exit 3) when the resume is refused.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from stepguard import Guard, load_procedure
from stepguard.adapters import load_model
from stepguard.errors import CheckpointError
from stepguard.guard import NullObserver, sqlite_checkpointer
from stepguard.tools import Tool
from tests._paths import ROOT


class KillInCommit(NullObserver):
    """Kills the process -9 when the refund step is committed (after its result was checkpointed)."""

    def step_checked(self, var: Any = None, outcome: Any = None, *args: Any, **kwargs: Any) -> None:
        if var == "refund_ref" and outcome == "pass":
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    db, log, out, mode, kind = sys.argv[1:6]

    def issue_refund(order_id: str, amount: Decimal, request_id: str = "-") -> str:
        with open(log, "a") as f:
            f.write(f"{request_id} {amount}\n")
            f.flush()
            os.fsync(f.fileno())
        if mode == "hang":
            time.sleep(120)
        return f"RF-{order_id}"

    opts: dict[str, Any] = {"idempotent": {"idempotent": True}, "keyed": {"idempotency_key": "request_id"}}.get(kind, {})
    proc = load_procedure(ROOT / "examples" / "refund.yaml")
    tools = [Tool("catalog_lookup", lambda sku: "ORD-7"), Tool("issue_refund", issue_refund, **opts)]
    guard = Guard(load_model("sim:perfect", procedure=proc), checkpointer=sqlite_checkpointer(db), tools=tools,
                  observer=KillInCommit() if mode == "commit" else None)
    try:
        result = guard.run(proc, {"sku": "A-12", "amount": "25.00"}, thread_id="refund-1")
    except CheckpointError as exc:
        Path(out).write_text(f"refused: {exc}")
        sys.exit(3)
    Path(out).write_text(result.model_dump_json())
