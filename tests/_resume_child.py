"""Child process for the kill-and-resume test: a guarded run with a slow scripted model."""

from __future__ import annotations

import sys
import time

from stepguard import Guard, GuardConfig, sqlite_checkpointer
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_procedure as _procedure


class SlowModel(ScriptedModel):
    def __init__(self, log: str, delay: float) -> None:
        super().__init__()
        self.log, self.delay = log, delay

    def complete(self, messages, settings=None):
        time.sleep(self.delay)
        reply = super().complete(messages, settings)
        with open(self.log, "a") as f:
            f.write(messages[-1]["content"].split("Steps:\n")[1].split(" = ")[0] + "\n")
        return reply


if __name__ == "__main__":
    db, log, delay, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    guard = Guard(SlowModel(log, delay), GuardConfig(chunk_size=3), sqlite_checkpointer(db))
    result = guard.run(_procedure(30), INPUTS, thread_id="resume-test")
    with open(out, "w") as f:
        f.write(result.model_dump_json())
