"""``python -m stepguard.adapters.lm_eval --instances FILE --out DIR [--name NAME]``: write the lm-eval task folder."""

from __future__ import annotations

import argparse

from . import TASK_NAME, write_task


def main(argv: list[str] | None = None) -> int:
    """Write the task folder and print the ``lm-eval run`` command that runs it; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m stepguard.adapters.lm_eval", description=__doc__)
    parser.add_argument("--instances", required=True, help="an instances file (stepguard bench generate)")
    parser.add_argument("--out", required=True, help="the task folder to write (lm-eval's --include_path)")
    parser.add_argument("--name", default=TASK_NAME, help=f"the task's name (default {TASK_NAME})")
    args = parser.parse_args(argv)
    path = write_task(args.instances, args.out, name=args.name)
    print(f"wrote {path}\nrun: lm-eval run --tasks {args.name} --include_path {args.out} --model local-chat-completions "
          "--model_args model=NAME,base_url=http://HOST/v1/chat/completions --apply_chat_template")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
