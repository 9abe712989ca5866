"""Record guarded runs on a real model into a cassette, and the results they gave, so a later
change to the guard can be replayed against them: same prompts (a replay miss is an error) and the
same results.

Usage:
    python benchmarks/record_guarded_cassette.py --model local:qwen2.5-coder-1.5b \
        --out tests/data/guarded_qwen    # writes guarded_qwen.cassette.jsonl and guarded_qwen.results.json

The instances are generated (benchmark.md's generator): by default two of 5 steps and one of 14 and
one of 23 steps at look-back 2, which exercise first tries, re-prompts and the derived rungs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from stepguard import Guard, GuardConfig
from stepguard.adapters import RecordingModel, load_model
from stepguard.bench.generate import generate_instance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, default=Path("tests/data/guarded_qwen"))
    ap.add_argument("--sizes", default="5:2,14:1,23:1", help="steps:count,... at look-back 2")
    args = ap.parse_args()
    cassette = args.out.with_suffix(".cassette.jsonl")
    cassette.unlink(missing_ok=True)
    results = []
    with load_model(args.model) as inner:
        model = RecordingModel(inner, cassette)
        guard = Guard(model, GuardConfig(on_exhausted="flag"))
        for part in args.sizes.split(","):
            n, count = (int(v) for v in part.split(":"))
            for index in range(count):
                inst = generate_instance(n, 2, index=index)
                result = guard.run(inst.to_procedure(), inst.inputs, thread_id=inst.id)
                print(inst.id, result.status, result.reprompts, result.usage.model_calls, flush=True)
                results.append({"id": inst.id, "n_steps": n, "index": index,
                                "result": result.model_dump(mode="json", exclude={"usage"})})
    args.out.with_suffix(".results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
