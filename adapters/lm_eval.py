"""``python -m stepguard.adapters.lm_eval``: the documented path of the lm-eval integration.

The integration lives in :mod:`stepguard.adapters.integrations.lm_eval`; this path stays because
docs/lm-eval.md runs it and every task folder written so far imports ``process_results`` from it.
"""

from __future__ import annotations

from stepguard.adapters.integrations.lm_eval import TASK_NAME, process_results, write_task
from stepguard.adapters.integrations.lm_eval.__main__ import main

__all__ = ["TASK_NAME", "main", "process_results", "write_task"]

if __name__ == "__main__":
    raise SystemExit(main())
