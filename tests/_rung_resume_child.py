"""Child process for the kill-inside-a-derived-rung test (tests/guard/test_rung_crash.py): ``478 * 36``
asked wrong until the ``digits`` rung's nested run asks it digit by digit, on a sqlite checkpointer;
each asked variable is appended to LOG (one line a call) before the reply.

Usage: python -m tests._rung_resume_child DB LOG DELAY OUT
"""

from __future__ import annotations

import sys
import time

from stepguard import Guard, GuardConfig, sqlite_checkpointer
from tests._fakes import DIGIT_PRODUCT as PRODUCT, ScriptedModel, asked_steps as _asked_steps

INPUTS = {"a": 478, "b": 36}


class LoggedModel(ScriptedModel):
    def __init__(self, log: str, delay: float) -> None:
        super().__init__(always_wrong={"r"})
        self.log, self.delay = log, delay

    def complete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        with open(self.log, "a") as fh:
            fh.write(" ".join(_asked_steps(messages)) + "\n")
        time.sleep(self.delay)
        return super().complete(messages, settings)


if __name__ == "__main__":
    db, log, delay, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    cfg = GuardConfig(ladder=("digits",), max_reprompts_per_step=1)
    result = Guard(LoggedModel(log, delay), cfg, sqlite_checkpointer(db)).run(PRODUCT, INPUTS, thread_id="rung-kill")
    with open(out, "w") as fh:
        fh.write(result.model_dump_json())
