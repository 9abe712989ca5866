"""Rung coverage: which forms of the expression language the default ladders verify, on a SIMULATED model.

Generates N random one-step procedures over the whole expression language
(:mod:`stepguard.bench.stepgen`), runs each under its default ladder (``GuardConfig.for_procedure``,
on_exhausted flag) on :class:`stepguard.adapters.models.sim_slips.SlippingExecutor`, a SIMULATED model that
is wrong on its first answer wherever the step holds a weak form of the embedded model (a product
or a column with carries, a quotient's digits, a comparison) and slips on those forms at a fixed
rate after, and prints:

- the share of steps each ladder verifies;
- a table of forms (operator, function, conditional, percentage, quotient position, rounding,
  scale, sign, type) by outcome: verified at the first try, verified by rung X, exhausted;
- every refusal of a derived rung, by rung and named reason (``Rung.refusal``).

A verified step here shows that a rung can re-ask the form over a model that slips as the embedded
one does; it is never a model's accuracy.

Run: python benchmarks/rung_coverage.py --n 500 --seed 0   (docs/rung-coverage.md holds the table)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

from stepguard.adapters.models.sim_slips import SlippingExecutor
from stepguard.bench.stepgen import GeneratedStep, generate_steps
from stepguard.guard import Guard, GuardConfig, GuardResult, get_rung

FIRST_TRY = "first try"
EXHAUSTED = "exhausted"


@dataclass
class Outcome:
    """What the ladder did with one generated step.

    Attributes:
        step: the generated step.
        ladder: the ladder it ran under.
        outcome: ``first try``, ``verified by <rung>`` or ``exhausted``.
        refusals: ``(rung, reason)`` for each derived rung of the ladder that does not apply to the step.
        wrong_verified: the step verified with a value other than the evaluator's (a silent error; must be 0).
        calls: model calls the run made.
    """

    step: GeneratedStep
    ladder: tuple[str, ...]
    outcome: str
    refusals: list[tuple[str, str]] = field(default_factory=list)
    wrong_verified: bool = False
    calls: int = 0


def refusals(step: GeneratedStep, ladder: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(rung, reason)`` for each derived rung of ``ladder`` that does not apply to ``step`` over its inputs."""
    proc = step.procedure
    env = proc.bind_inputs({k: Fraction(v) for k, v in step.inputs.items()})
    out = []
    for name in dict.fromkeys(ladder):
        rung = get_rung(name)
        if rung.derives and rung.derive(proc, 0, env) is None:
            out.append((name, rung.refusal(proc, 0, env)))
    return out


def run_step(step: GeneratedStep, seed: int, slip_rate: float, whole_step: str = "first") -> Outcome:
    """Run ``step`` under its default ladder on a fresh :class:`SlippingExecutor`."""
    proc = step.procedure
    config = GuardConfig.for_procedure(proc, on_exhausted="flag")
    model = SlippingExecutor(seed, slip_rate, proc, whole_step)  # type: ignore[arg-type]
    result: GuardResult = Guard(model, config).run(proc, step.inputs)
    expected = proc.expected_values({k: Fraction(v) for k, v in step.inputs.items()})["v"]
    verified = result.status == "verified"
    if verified and not result.deviations:
        outcome = FIRST_TRY
    elif verified:
        fixes = result.rung_fixes()
        outcome = f"verified by {next(iter(fixes))}" if fixes else "verified by a re-ask"
    else:
        outcome = EXHAUSTED
    value = result.values.get("v")
    wrong = verified and not _equal(value, expected)
    return Outcome(step, config.ladder, outcome, refusals(step, config.ladder), wrong, result.usage.model_calls)


def _equal(value: object, expected: object) -> bool:
    if isinstance(expected, (bool, str)) or isinstance(value, (bool, str)):
        return value == expected
    try:
        return Fraction(str(value)) == Fraction(expected)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return False


def share(k: int, n: int) -> str:
    """``k/n (p%)``."""
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "-"


def report(outcomes: list[Outcome], skipped: Counter[str], out=sys.stdout) -> None:
    """Print the ladder shares, the forms-by-outcome table and the refusals (Markdown)."""
    p = lambda s="": print(s, file=out)  # noqa: E731
    n = len(outcomes)
    p(f"{n} generated steps; draws skipped (refused by the evaluator over their inputs): "
      + (", ".join(f"{r} {c}" for r, c in skipped.most_common()) or "none"))
    p()
    p("| ladder | steps | verified | first try | by a rung | exhausted | silent errors |")
    p("|---|---|---|---|---|---|---|")
    by_ladder: dict[tuple[str, ...], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_ladder[o.ladder].append(o)
    for ladder, os_ in sorted(by_ladder.items()):
        k = len(os_)
        ok = sum(o.outcome != EXHAUSTED for o in os_)
        first = sum(o.outcome == FIRST_TRY for o in os_)
        p(f"| {', '.join(ladder)} | {k} | {share(ok, k)} | {first} | {ok - first} | {k - ok} | {sum(o.wrong_verified for o in os_)} |")
    columns = [FIRST_TRY, *sorted({o.outcome for o in outcomes} - {FIRST_TRY, EXHAUSTED}), EXHAUSTED]
    p()
    p("| form | steps | " + " | ".join(columns) + " | verified |")
    p("|---|---|" + "---|" * len(columns) + "---|")
    per_form: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        for form in o.step.forms:
            per_form[form][o.outcome] += 1
    for form in sorted(per_form):
        c = per_form[form]
        k = sum(c.values())
        p(f"| {form} | {k} | " + " | ".join(str(c[col]) for col in columns) + f" | {share(k - c[EXHAUSTED], k)} |")
    p()
    p("Derived rungs that do not apply, by reason (the guard asks the step alone in that rung's place, "
      "narrow or resample, and its event names the reason):")
    p()
    p("| rung | reason | steps | of them exhausted |")
    p("|---|---|---|---|")
    reasons: Counter[tuple[str, str]] = Counter()
    lost: Counter[tuple[str, str]] = Counter()
    for o in outcomes:
        for r in o.refusals:
            reasons[r] += 1
            lost[r] += o.outcome == EXHAUSTED
    for (rung, why), c in sorted(reasons.items(), key=lambda x: (x[0][0], -x[1])):
        p(f"| {rung} | {why} | {c} | {lost[(rung, why)]} |")
    exhausted = [o for o in outcomes if o.outcome == EXHAUSTED]
    if exhausted:
        p()
        p("Steps no rung verified:")
        p()
        for o in exhausted:
            why = "; ".join(f"{r}: {w}" for r, w in o.refusals) or "every rung applied; none verified within the budget"
            p(f"- `v = {o.step.expr}` over {o.step.inputs}: {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500, help="generated steps")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generator and the simulated model")
    ap.add_argument("--slip-rate", type=float, default=0.25, help="the simulated model's slip rate after its first answer")
    ap.add_argument("--whole-step", choices=("first", "always"), default="first",
                    help="first: the model's first answer is wrong where the step holds a weak form, later asks slip at "
                         "the rate; always: every ask of the whole step is wrong there (only a rung can verify it)")
    args = ap.parse_args()
    generated = generate_steps(args.n, args.seed)
    outcomes = [run_step(s, args.seed, args.slip_rate, args.whole_step) for s in generated.steps]
    print(f"SIMULATED model: sim:slips, slip rate {args.slip_rate}, whole step wrong: {args.whole_step}, seed {args.seed}")
    report(outcomes, generated.skipped)


if __name__ == "__main__":
    main()
