"""Child process for the streamed kill-and-resume test: a streamed guarded run of a slow streaming
model, wrong once at S10 (so the run has a cut and a re-ask before it is killed)."""

from __future__ import annotations

import sys
import time

from stepguard import Guard, GuardConfig, sqlite_checkpointer
from stepguard.model import WrittenReply
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_procedure as _procedure


class SlowStreams(ScriptedModel):
    def __init__(self, log: str, delay: float) -> None:
        super().__init__(faults={"S10": ["wrong"]})
        self.log, self.delay = log, delay

    def _note(self, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(text + "\n")

    def complete(self, messages, settings=None):
        self._note("ask " + messages[-1]["content"].split("Steps:\n")[1].split(" = ")[0])
        return super().complete(messages, settings)

    def stream(self, messages, settings=None):
        reply = WrittenReply(self.complete(messages, settings))
        child = self

        class Slow:
            @property
            def response(self):
                return reply.response

            def __iter__(self):
                for line in reply:
                    time.sleep(child.delay)
                    child._note("line " + line.split(" = ")[0])
                    yield line

            def close(self):
                reply.close()

        return Slow()


if __name__ == "__main__":
    db, log, delay, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    guard = Guard(SlowStreams(log, delay), GuardConfig(streamed=True, ladder=("restate",)), sqlite_checkpointer(db))
    result = guard.run(_procedure(30), INPUTS, thread_id="stream-resume")
    with open(out, "w") as f:
        f.write(result.model_dump_json())
