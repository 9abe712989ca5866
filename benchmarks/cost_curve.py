"""The cost curve (issue 43): what the guard costs against the model's per-step accuracy p. SIMULATED.

    PYTHONPATH=. .venv/bin/python benchmarks/cost_curve.py [--per-length 6] [--png docs/img/cost_curve.png]

Not a test: it prints a table and draws a figure. For each p of ``--p`` two seeded simulated models
(:meth:`stepguard.adapters.models.sim.SimPreset.at_accuracy`, nothing else wrong) execute every case in each mode:
``sim:p=<p>``, each computed step right with probability p, independently of where it stands; and
``sim:p=<p>,decay=<DECAY>`` (the modes marked ``+decay``), right with probability p at a reply's first
step line and ``DECAY`` less at each line after it, a model that errs more in long windows (``raw``,
``chunked``, ``streamed`` and ``follow`` only):

- ``raw``: one request (:func:`stepguard.bench.case.arun_case`, raw mode);
- ``chunked``: the guard with the benchmark's chunked settings (``streamed=False`` given alone, which turns
  following off; :func:`stepguard.bench.run.resolve_guard_config`: 5 steps a call for generated instances,
  one for the production procedures; ``on_exhausted=flag``);
- ``streamed``: the same, ``streamed=True``;
- ``follow``: the benchmark's defaults, every run's (following the model; docs/policies.md, "Follow the model");
- ``reask``: Instructor's re-ask loop (:mod:`stepguard.bench.reask`), generated instances only (a
  suite's decimals need a schema per step); its JSON is the simulator's step lines written as JSON
  (:class:`JsonSim`), each attempt an independent draw at p.

The cases: generated 5-, 23- and 95-step instances (look-back 2 and 7, ``--per-length`` of each
length) and the production procedures (benchmarks/production, each one's first input set). Per case:
model calls, prompt and output tokens (the simulator counts 4 characters a token) and a modelled
wall, ``CALL_S`` seconds a call plus ``TOKEN_S`` seconds an output token (calls in sequence, as the
guard makes them). A mode *meets raw* on a measure (calls, prompt tokens, modelled wall) from the
lowest p of the grid at which its mean, and every p above it, is within ``MEETS`` times raw's. The
first model's errors do not depend on how many steps a call asks, the second's do: these figures are the controller's
cost, never a model's accuracy.

The embedded model's measured points (``--stores``, the committed stores of :data:`MEASURED`: at 95 steps
``curve/raw``, chunked ``curve/digits``, ``curve/streamed-digits`` and the default's ``curve/follow-together``;
on the production suite ``prod-digits/raw``, chunked ``prod-digits/forms6`` and the default's
``prod-follow/forms9``) go on those panels, marked apart: their p is the first-try accuracy measured there
(1 - the share of steps that needed a re-ask, repair or flag), their calls and wall the measured ones
against raw's on the same cases, not the model above.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stepguard.adapters import load_model
from stepguard.bench.case import arun_case
from stepguard.bench.generate import generate_instance
from stepguard.bench.instances import Instance
from stepguard.bench.reask import arun_reask
from stepguard.bench.run import GUARDED_DEFAULTS
from stepguard.bench.suites import ProcedureCase, load_suite
from stepguard.guard._options import GuardOptions
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage

ROOT = Path(__file__).resolve().parents[1]
P_GRID = (0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999)
CALL_S = 0.5
"""Modelled seconds a call costs before its first output token (a round trip and the prompt's prefill)."""
TOKEN_S = 0.02
"""Modelled seconds an output token costs (50 tokens a second)."""
MEETS = 1.1
"""Within this many times raw's modelled wall, a mode meets raw."""
DECAY = 0.01
"""The decaying model's loss of per-step accuracy per step line already written in a reply."""
MODES = ("raw", "chunked", "streamed", "follow", "reask", "raw+decay", "chunked+decay", "streamed+decay", "follow+decay")
GUARDED = {"chunked": {"streamed": False}, "streamed": {"streamed": True}, "follow": {}}
"""Each guarded mode's options: ``chunked`` and ``streamed`` asked alone (a mode given alone turns following
off), ``follow`` every run's default (following the model, sub-steps together)."""


def raw_of(mode: str) -> str:
    """The raw mode a mode's figures are held against: raw on the same model."""
    return "raw+decay" if mode.endswith("+decay") else "raw"


class JsonSim:
    """The simulator answering Instructor's JSON request: it executes the procedure of the first user
    message (raw mode) and writes its step values and final answer as the JSON Instructor asks for.
    Each attempt (the assistant turns before it) is a fresh draw; usage counts every message sent."""

    simulated = True
    provider = "stepguard.sim"

    def __init__(self, sim: Any, answer: str) -> None:
        self.sim, self.answer = sim, answer
        self.model_name = self.spec = f"{sim.model_name}+json"

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        first = next(m for m in messages if m.get("role") == "user")
        attempt = sum(1 for m in messages if m.get("role") == "assistant")
        reply = await self.sim.acomplete([first], GenerationSettings(seed=attempt, temperature=0.0))
        values = dict(re.findall(r"^(S\d+) = (\S+)$", reply.text, re.M))
        data = {"steps": [{"var": var, "value": value} for var, value in values.items()],
                "final_answer": values.get(self.answer, "0")}
        text = "```json\n" + json.dumps(data, separators=(",", ":")) + "\n```"
        sent = sum(len(str(m.get("content") or "")) for m in messages) // 4
        return ChatResponse(text, Usage(sent, len(text) // 4), "stop", reply.latency_s, self.model_name, True)

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return asyncio.run(self.acomplete(messages, settings))


def cases(per_length: int) -> dict[str, list[Instance | ProcedureCase]]:
    """The cases by family: ``"5"``, ``"23"``, ``"95"`` (generated) and ``"production"``."""
    out: dict[str, list[Instance | ProcedureCase]] = {}
    for n in (5, 23, 95):
        out[str(n)] = [generate_instance(n, lb, seed=0, index=i) for lb in (2, 7) for i in range(per_length // 2)]
    files = sorted(p for p in (ROOT / "benchmarks" / "production").glob("*.yaml") if ".inputs" not in p.name and ".prompt" not in p.name)
    out["production"] = [load_suite(f)[0] for f in files]
    return out


async def measure(case: Instance | ProcedureCase, mode: str, p: float) -> dict[str, float] | None:
    """One case in one mode at accuracy ``p``: calls, tokens, modelled wall and whether it came out right;
    ``None`` where the mode does not run the case (reask on a suite's case). A mode ending ``+decay`` runs
    on the decaying model."""
    mode, decayed = mode.removesuffix("+decay"), mode.endswith("+decay")
    sim = load_model(f"sim:p={p},decay={DECAY}" if decayed else f"sim:p={p}", seed=0)
    if mode == "reask":
        if not isinstance(case, Instance):
            return None
        row = await arun_reask(case, JsonSim(sim, case.to_procedure().answer_var))
    elif mode == "raw":
        row = await arun_case(case, "raw", sim)
    else:
        # as the benchmark resolves it: a suite's procedure picks the defaults by procedure; generated integer sums none
        procedure = case.to_procedure() if isinstance(case, ProcedureCase) else None
        config = GuardOptions.parse(GUARDED[mode]).resolve(procedure, defaults=GUARDED_DEFAULTS)
        row = await arun_case(case, "guarded", sim, guard_config=config)
    usage = row["usage"]
    calls, out = usage["model_calls"], usage["output_tokens"]
    right = row["correct"] if mode in ("raw", "reask") else row["status"] == "verified" and row["correct"]
    return {"calls": calls, "prompt": usage["input_tokens"], "output": out, "wall": CALL_S * calls + TOKEN_S * out,
            "right": float(bool(right))}


def run(per_length: int, grid: Sequence[float]) -> dict[str, dict[str, dict[float, dict[str, float]]]]:
    """``{family: {mode: {p: means}}}``."""
    table: dict[str, dict[str, dict[float, dict[str, float]]]] = {}
    for family, group in cases(per_length).items():
        for mode in MODES:
            for p in grid:
                rows = [r for r in (asyncio.run(measure(c, mode, p)) for c in group) if r is not None]
                if rows:
                    table.setdefault(family, {}).setdefault(mode, {})[p] = {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}
    return table


MEASURES = {"calls": "calls", "prompt": "prompt tokens", "wall": "modelled wall"}


def meets(curve: dict[float, dict[str, float]], raw: dict[float, dict[str, float]], measure: str = "wall") -> float | None:
    """The lowest p from which the mode's ``measure`` stays within :data:`MEETS` times raw's, or ``None``."""
    found = None
    for p in sorted(curve, reverse=True):
        if curve[p][measure] > MEETS * raw[p][measure]:
            break
        found = p
    return found


def print_table(table: dict[str, dict[str, dict[float, dict[str, float]]]]) -> None:
    print(f"SIMULATED (sim:p=<p>, the controller's cost, never a model's accuracy); modelled wall = {CALL_S} s a call "
          f"+ {TOKEN_S} s an output token")
    print("| cases | p | mode | right | calls | prompt tokens | output tokens | modelled wall s | wall / raw's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for family, modes in table.items():
        for p in sorted(modes["raw"]):
            for mode, curve in modes.items():
                if p in curve:
                    m, raw = curve[p], modes[raw_of(mode)][p]["wall"]
                    print(f"| {family} | {p:g} | {mode} | {m['right']:.0%} | {m['calls']:.1f} | {m['prompt']:,.0f} | {m['output']:,.0f} "
                          f"| {m['wall']:.1f} | {m['wall'] / raw:.2f} |")
    print(f"\nWhere each mode meets raw (within {MEETS}x of raw's calls / prompt tokens / modelled wall from this p up):")
    print("| cases | " + " | ".join(m for m in MODES if not m.startswith("raw")) + " |")
    print("|---|" + "---|" * (len(MODES) - 2))
    for family, modes in table.items():
        cells = ["-" if mode not in modes else " / ".join(_at(meets(modes[mode], modes[raw_of(mode)], k)) for k in MEASURES)
                 for mode in MODES if not mode.startswith("raw")]
        print(f"| {family} | " + " | ".join(cells) + " |")


def _at(found: float | None) -> str:
    return f"{found:g}" if found else "never"


BAD = ("repaired", "flagged")
MEASURED: dict[str, tuple[str, dict[str, str]]] = {
    "95": ("curve/raw", {"chunked": "curve/digits", "streamed": "curve/streamed-digits", "follow": "curve/follow-together"}),
    "production": ("prod-digits/raw", {"chunked": "prod-digits/forms6", "follow": "prod-follow/forms9"}),
}
"""The embedded model's committed stores under benchmarks/stores, by panel: the raw store, and each guarded
store by the mode it ran (95 steps: its 95-step rows; production: the suite's 47 cases)."""


def measured(stores: Path) -> dict[str, dict[str, dict[str, float]]]:
    """The embedded model's points: ``{panel: {mode: {p, calls, wall, n}}}`` (calls and wall against raw's
    on the same cases: those every store of the panel has finished), from the committed stores under
    ``stores``; a panel or mode whose stores are absent is left out. ``p`` is the first-try accuracy:
    1 - the share of a case's steps that needed a re-ask, repair or flag, averaged over the cases."""
    def rows(name: str, panel: str) -> dict[str, dict[str, Any]]:
        path = stores / name / "results.jsonl"
        if not path.exists():
            return {}
        got = map(json.loads, path.read_text(encoding="utf-8").splitlines())
        return {r["id"]: r for r in got if panel != "95" or r.get("n_steps") == 95}

    out: dict[str, dict[str, dict[str, float]]] = {}
    for panel, (raw_name, sides) in MEASURED.items():
        raw = rows(raw_name, panel)
        guarded = {mode: got for mode, name in sides.items() if (got := rows(name, panel))}
        ids = set(raw).intersection(*guarded.values()) if raw and guarded else set()
        if not ids:
            continue
        raw_calls = statistics.fmean(raw[i]["usage"]["model_calls"] for i in ids)
        raw_wall = statistics.fmean(raw[i]["usage"]["wall_s"] for i in ids)
        out[panel] = {}
        for mode, got in guarded.items():
            wrong = statistics.fmean(
                sum(1 for s in got[i]["guard"]["steps"] if s.get("reprompts", 0) > 0 or s.get("provenance") in BAD)
                / len(got[i]["guard"]["steps"]) for i in ids)
            out[panel][mode] = {"p": 1 - wrong, "calls": statistics.fmean(got[i]["usage"]["model_calls"] for i in ids) / raw_calls,
                                "wall": statistics.fmean(got[i]["usage"]["wall_s"] for i in ids) / raw_wall, "n": len(ids)}
    return out


def draw(table: dict[str, dict[str, dict[float, dict[str, float]]]], png: Path,
         points: dict[str, dict[str, dict[str, float]]] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"raw": "black", "chunked": "tab:blue", "streamed": "tab:orange", "follow": "tab:green", "reask": "tab:red"}
    fig, grid = plt.subplots(2, len(table), figsize=(4.4 * len(table), 13), sharey="row", squeeze=False)
    for row, measure in enumerate(("calls", "wall")):
        for ax, (family, modes) in zip(grid[row], table.items(), strict=True):
            for mode, curve in modes.items():
                if mode == "raw+decay":
                    continue  # raw is one call on either model: one line for both
                raw, base, dashed = modes[raw_of(mode)], mode.removesuffix("+decay"), mode.endswith("+decay")
                ps = sorted(curve)
                found = meets(curve, raw, measure) if base != "raw" else None
                label = mode if base == "raw" else f"{mode} (meets raw: {'p >= ' + _at(found) if found else 'never'})"
                ax.plot([1 - p for p in ps], [curve[p][measure] / raw[p][measure] for p in ps], marker="o", ms=3,
                        color=colours[base], ls="--" if dashed else "-", label=label,
                        lw=3.2 if base == "streamed" else 1.2)  # follow drawn over streamed, which shows around it
                if found:
                    ax.plot([1 - found], [curve[found][measure] / raw[found][measure]], marker="*", ms=12, color=colours[base])
            for mode, point in (points or {}).get(family, {}).items():
                ax.plot([1 - point["p"]], [point[measure]], marker="X", ms=10, ls="none", color=colours[mode], markeredgecolor="black",
                        label=f"{mode}, embedded 1.5B, MEASURED (first-try p {point['p']:.3f}, {point['n']:g} cases)")
            ax.axhline(MEETS, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.invert_xaxis()
            ax.set_title(f"{family + ' steps' if family.isdigit() else 'production procedures'}: {MEASURES[measure]} (SIMULATED)",
                         fontsize=9)
            ax.set_xlabel("per-step error rate 1 - p (more accurate to the right)", fontsize=8)
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below: never over a curve
    grid[0][0].set_ylabel("model calls / raw's (raw: 1 call)")
    grid[1][0].set_ylabel(f"modelled wall / raw's ({CALL_S} s a call + {TOKEN_S} s an output token)")
    fig.suptitle("What the guard costs against the model's per-step accuracy: seeded simulator, SIMULATED; solid: errors "
                 f"independent of the position, dashed (+decay): accuracy {DECAY:g} lower per step line written\n"
                 "(X: the embedded 1.5B model's committed runs, MEASURED: calls, and measured seconds against raw's, on the same cases)",
                 fontsize=10)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-length", type=int, default=6, help="generated instances a length (half look-back 2, half 7)")
    ap.add_argument("--p", default=",".join(map(str, P_GRID)), help="per-step accuracies, comma-separated")
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "img" / "cost_curve.png")
    ap.add_argument("--json", type=Path, default=None, help="also write the means as JSON here")
    ap.add_argument("--table", type=Path, default=None, help="draw from means a run wrote with --json, running nothing")
    ap.add_argument("--stores", type=Path, default=ROOT / "benchmarks" / "stores",
                    help="the folder of the embedded model's committed stores (MEASURED), drawn as measured points")
    args = ap.parse_args(argv)
    logging.getLogger("instructor").setLevel(logging.CRITICAL)  # its given-up attempts are counted in the table
    if args.table is not None:
        saved = json.loads(args.table.read_text(encoding="utf-8"))
        table = {f: {m: {float(p): v for p, v in c.items()} for m, c in ms.items()} for f, ms in saved.items()}
    else:
        table = run(args.per_length, [float(p) for p in args.p.split(",")])
    print_table(table)
    points = measured(args.stores)
    for panel, modes in points.items():
        for mode, point in modes.items():
            print(f"embedded model, {panel}, {mode} (measured, {args.stores}, {point['n']:g} cases): first-try p {point['p']:.3f}, "
                  f"calls {point['calls']:.1f}x raw's, wall {point['wall']:.2f}x raw's (measured seconds)")
    draw(table, args.png, points)
    if args.json is not None:
        args.json.write_text(json.dumps({f: {m: {str(p): v for p, v in c.items()} for m, c in ms.items()} for f, ms in table.items()},
                                        indent=1), encoding="utf-8")
    print(f"\nfigure: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
