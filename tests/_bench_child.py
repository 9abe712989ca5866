"""Child process for the crash and concurrency tests: ``stepguard bench run`` on sim:paper, with
every model call slowed by LATENCY seconds (argv[1]); the remaining argv are the CLI's."""

from __future__ import annotations

import sys

import stepguard.adapters as adapters

_load = adapters.load_model


def _slow(spec: str, **options):  # noqa: ANN003, ANN202
    """load_model with a latency for the simulated executor."""
    return _load(spec, latency_s=float(sys.argv[1]), **options)


if __name__ == "__main__":
    adapters.load_model = _slow
    from stepguard.cli import bench, bench_run
    from stepguard.cli._app import app

    if not any(c.name == "run" for c in bench.app.registered_commands):  # while bench.py does not mount it yet
        bench_run.register(bench.app)

    app(["bench", "run", *sys.argv[2:]], prog_name="stepguard")
