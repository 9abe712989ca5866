"""Probe how the embedded model answers single operations in the forms the production rungs can ask.

Three probes, each a one-step prompt in the guard's chunk format, temperature 0 (no guard, no retries):

--compare  a comparison written as a boolean, as a yes/no question, and as the larger of the two
           (``max(a, b)``): 2026-12-01, the larger 14/14, the boolean 11/14.
--branch   a conditional over a literal boolean, over the comparison inline, and as two lines
           (the larger, then the branch): 6/6, 2/6, and the two-line chunk got the larger wrong once.
--product  decimal products asked alone: 8 of the first 10 right.
--ties     a rounding exactly halfway, half to even, in three forms (the rule named; the rule spelled
           out with the two candidates; the rule as arithmetic: the last kept digit's parity, a
           product and a sum, as the ``tie`` rung asks): 2026-12-01, 2/6 and 3/6 (every tie rounded
           up), and 16 of 16 of the arithmetic sub-steps right.
--point    the point of a whole number moved k places, three ways: ``/ 10**k``, ``* 0.0..1``, and
           ``/ 10`` k times (each move checked before the next): 2026-12-01, 3/8, 3/8 and 8/8
           (30 of 30 moves right); whole numbers times one digit (``993657 * 5``): 8/8.
--divide   quotients by one digit, of a decimal and of the same dividend made whole: 2026-12-01,
           4/5 and 5/5 (``1234.3412 / 4 = 308.585305``, ``12343412 / 4 = 3085853``).

--carry    whole numbers times one digit from 6 to 9 (``1595108 * 9``, the product the ``scale`` rung
           asked in a flagged currency case), three ways: alone; as ``decompose`` asks it (place-value
           products, then running sums such as ``13500000 + 810000``); and by thousands (``595 * 9``,
           then ``t * 1000 + ...`` as single operations). Each sub-step is asked over the right values.

--resample the operations the model got wrong at temperature 0 on every try (from the --carry probe and
           flagged production runs), each sampled 8 times at the guard's resample temperature with
           seeds 100..107, as the ``resample`` rung asks them: how often a new sample is right.

--columns  the sums the model gets wrong (``14355000 + 900``, ``690 + 6``) by written column addition: each
           column's digits and carry as literals in one chunk (``c2 = 0 + 9``, ``c5 = 5 + 8 + 1``), then the
           digits put back together one place at a time as single steps (``14355 * 10 + 9``): 2026-12-01,
           the columns 39 of 39 right; the putting back 10 of 14 (``69 * 10 + 6 = 756``,
           ``143559 * 10 + 7 = 1435607``), so no rung was built on it.

--digits   the sub-steps the digit rungs ask (``stepguard/guard/rungs/digits.py``), each form over operands
           from the sums, products and quotients that stopped runs (the 95-step store and the production
           suite): single-digit products (``7 * 4``), a product plus its carry (``56 + 3``), a column's two
           digits and carry (``5 + 8 + 1``), a column with a borrowed ten and its borrow in one
           sub-step (``14 - 8 - 1``, ``borrow3``: the form first built) and one subtraction a sub-step (``14 - 8``, then ``6 - 1``:
           ``borrow``, the form built), the choices
           (``max(472, 226)``, ``max(-472, 0)``) and quotient digits (``57 // 12``). Each form is one
           procedure of about 40 literal sub-steps run through the guard as a digit rung runs them
           (4 a call, a wrong one re-asked alone at the resample temperature up to 3 times): right at
           the first try, and right with resampling. Figures: docs/lab/production-suite-history.md, "Digit rungs".

Run: python benchmarks/probe_single_ops.py --compare --branch --product --ties --point --divide   (minutes on 2 idle cores)
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from fractions import Fraction as F

from stepguard.adapters import load_model
from stepguard.evaluator import format_number
from stepguard.guard._prompts import PromptSet
from stepguard.model import GenerationSettings

SYS = PromptSet().system()
CMPS = [("59.97", ">=", "500"), ("59.97", ">=", "1000"), ("551.25", ">=", "500"), ("1302.45", ">=", "1000"),
        ("0.9875", ">=", "1.25"), ("1.25", ">=", "1.25"), ("61000", "<", "50000"), ("38.5", ">", "40"), ("45", ">", "40"),
        ("300", "<=", "100"), ("7.3", ">", "5"), ("1.0625", ">=", "1"), ("12.4", "<", "100"), ("88.6", ">=", "90")]
BRANCHES = [("0.05", "59.97", ">=", "500", "0"), ("0.10", "1302.45", ">=", "1000", "0.05"), ("1.5", "45", ">", "40", "1"),
            ("500", "1.3", ">=", "1.25", "0"), ("4", "88.6", ">=", "90", "3"), ("0.20", "350", ">", "300", "0.15")]
PRODUCTS = [("3", "19.99"), ("25", "22.05"), ("15", "86.83"), ("72.5", "15"), ("6611.62", "0.05"), ("30250.5", "0.04"),
            ("4968.29", "0.05"), ("38.5", "22.75"), ("1302.45", "0.1"), ("551.25", "0.2"), ("53.7", "12.5"), ("70", "2.54")]
TIES = [("81.625", "81.62"), ("130.245", "130.24"), ("17.835", "17.84"), ("6.5", "6"), ("2.0125", "2.012"), ("45.675", "45.68")]
POINTS = [("4968285", 3), ("121002", 4), ("2484145", 3), ("38535", 3), ("12100200", 4), ("3265000", 4), ("9936570", 4), ("160575", 5)]
ONE_DIGIT = [("993657", "5"), ("653000", "5"), ("3025050", "4"), ("496829", "5"), ("1302445", "1"), ("12845", "3"), ("8575", "7"), ("4968285", "1")]
QUOTIENTS = [("1234.3412", "12343412", "4"), ("326.5", "326500", "4"), ("99365.7", "993657000", "8"), ("1302.45", "130245", "5"),
             ("6530", "653000", "8")]
WORDS = {">=": "greater than or equal to", ">": "greater than", "<": "less than", "<=": "less than or equal to"}


def _truth(a: str, op: str, b: str) -> bool:
    return {">=": F(a) >= F(b), ">": F(a) > F(b), "<": F(a) < F(b), "<=": F(a) <= F(b)}[op]


def ask(model, lines: str, fmt: str, n: int = 1) -> str:
    """One chunk prompt of ``n`` steps; the reply's text."""
    text = (f"Known values:\n(none)\n\nSteps:\n{lines}\n\nWrite {n} line{'s' if n > 1 else ''}, one for each step, "
            f"in order, each as\n{fmt}\nWrite nothing else.")
    settings = GenerationSettings(temperature=0, seed=0, max_tokens=60)
    return model.complete([{"role": "system", "content": SYS}, {"role": "user", "content": text}], settings).text.strip()


def compare(model) -> None:
    forms = {
        "boolean": lambda a, o, b: (f"t = {a} {o} {b}    (a boolean)", f"t = {a} {o} {b} = <result>"),
        "question": lambda a, o, b: (f"t: is {a} {WORDS[o]} {b}? (yes or no)", "t = <yes or no>"),
        "larger": lambda a, o, b: (f"t = max({a}, {b})", f"t = max({a}, {b}) = <result>"),
    }
    for name, form in forms.items():
        for a, o, b in CMPS:
            print(f"{name:<9} {a} {o} {b} ({_truth(a, o, b)}) -> {ask(model, *form(a, o, b))!r}", flush=True)


def branch(model) -> None:
    for x, a, o, b, y in BRANCHES:
        want, lit = (x if _truth(a, o, b) else y), _truth(a, o, b)
        print(f"literal  want {want} -> {ask(model, f't = {x} if {lit} else {y}', f't = {x} if {lit} else {y} = <result>')!r}")
        print(f"inline   want {want} -> {ask(model, f't = {x} if {a} {o} {b} else {y}', f't = {x} if {a} {o} {b} else {y} = <result>')!r}")
        two = f"t1 = max({a}, {b})\nt2 = {x} if t1 == {a} else {y}"
        print(f"two-line want {want} -> {ask(model, two, f't1 = max({a}, {b}) = <result>', 2)!r}", flush=True)


def product(model) -> None:
    right = 0
    for a, b in PRODUCTS:
        reply = ask(model, f"t = {a} * {b}", f"t = {a} * {b} = <result>")
        found = re.findall(r"-?\d+(?:\.\d+)?", reply.split("=")[-1])
        ok = bool(found) and F(found[-1]) == F(a) * F(b)
        right += ok
        print(f"{a} * {b} = {format_number(F(a) * F(b))} -> {reply!r} {'OK' if ok else ''}", flush=True)
    print(f"products right: {right}/{len(PRODUCTS)}")


def ties(model) -> None:
    from decimal import ROUND_FLOOR, Decimal

    def reply_value(reply: str) -> str:
        return reply.split("=")[-1].strip()

    for x, want in TIES:
        s = len(want.split(".")[1]) if "." in want else 0
        lo = Decimal(x).quantize(Decimal(1).scaleb(-s), rounding=ROUND_FLOOR)
        hi = lo + Decimal(1).scaleb(-s)
        named = ask(model, f"v = {x}    (round half to even to {s} decimal places)", "v = <result>")
        spelled = ask(model, f"v = {x}    (round half to even to {s} decimal places: {x} is exactly halfway between "
                             f"{lo} and {hi}; write whichever of the two ends in an even digit)", "v = <result>")
        print(f"tie {x} want {want}: named -> {reply_value(named)}, spelled out -> {reply_value(spelled)}", flush=True)
    right = total = 0
    digits = [2, 4, 5, 7, 8, 3]
    sums = [("81.62", "0"), ("130.24", "0"), ("17.83", "0.01"), ("2.012", "0"), ("45.67", "0.01"), ("6", "0")]
    products = [("0.01", "0"), ("0.01", "1"), ("0.001", "0"), ("1", "0")]
    for expr in [f"{d} % 2" for d in digits] + [f"{a} + {b}" for a, b in sums] + [f"{a} * {b}" for a, b in products]:
        got = reply_value(ask(model, f"t1 = {expr}", f"t1 = {expr} = <result>"))
        a, op, b = expr.split()
        want = format_number({"%": F(a) % F(b), "+": F(a) + F(b), "*": F(a) * F(b)}[op])
        ok = bool(re.fullmatch(r"-?\d+(?:\.\d+)?", got)) and F(got) == F(want)
        right, total = right + ok, total + 1
        print(f"{expr} = {want} -> {got} {'OK' if ok else ''}", flush=True)
    print(f"tie sub-steps right: {right}/{total}")


def _value_is(reply: str, want: F) -> bool:
    found = re.findall(r"-?\d+(?:\.\d*)?", reply.split("=")[-1].replace(",", ""))
    return bool(found) and F(found[-1].rstrip(".")) == want


def point(model) -> None:
    from decimal import Decimal

    for form in ("divide", "multiply", "one place"):
        right = 0
        for a, k in POINTS:
            want = F(a) / 10**k
            if form == "divide":
                ok = _value_is(ask(model, f"t1 = {a} / {10 ** k}", f"t1 = {a} / {10 ** k} = <result>"), want)
            elif form == "multiply":
                ok = _value_is(ask(model, f"t1 = {a} * 0.{'0' * (k - 1)}1", f"t1 = {a} * 0.{'0' * (k - 1)}1 = <result>"), want)
            else:
                x, ok = F(a), True
                for _ in range(k):
                    shown = str(Decimal(x.numerator) / Decimal(x.denominator))
                    x /= 10
                    if not _value_is(ask(model, f"t1 = {shown} / 10", f"t1 = {shown} / 10 = <result>"), x):
                        ok = False
                        break
            right += ok
            print(f"{form:<9} {a} moved {k}: {'OK' if ok else 'wrong'}", flush=True)
        print(f"{form}: {right}/{len(POINTS)}")
    right = sum(_value_is(ask(model, f"t1 = {a} * {b}", f"t1 = {a} * {b} = <result>"), F(a) * F(b)) for a, b in ONE_DIGIT)
    print(f"whole number x one digit: {right}/{len(ONE_DIGIT)}")


def divide(model) -> None:
    for form, col in (("decimal", 0), ("whole", 1)):
        right = 0
        for case in QUOTIENTS:
            a, m = case[col], case[2]
            ok = _value_is(ask(model, f"t1 = {a} / {m}", f"t1 = {a} / {m} = <result>"), F(a) / F(m))
            right += ok
            print(f"{form:<8} {a} / {m}: {'OK' if ok else 'wrong'}", flush=True)
        print(f"{form} dividends: {right}/{len(QUOTIENTS)}")


CARRY = [("1595108", 9), ("4706160", 8), ("5236900", 6), ("2552400", 7), ("3025050", 9), ("1435597", 8), ("993657", 9), ("86830", 7)]


def _place_value_chain(a: int, d: int) -> list[tuple[str, int]]:
    """``decompose``'s sub-steps for ``a * d``: each non-zero place times ``d``, then running sums."""
    parts = [int(c) * 10**i for i, c in enumerate(reversed(str(a))) if c != "0"][::-1]
    steps = [(f"{p} * {d}", p * d) for p in parts]
    total = parts[0] * d
    for p in parts[1:]:
        steps.append((f"{total} + {p * d}", total + p * d))
        total += p * d
    return steps


def _thousands_chain(a: int, d: int) -> list[tuple[str, int]]:
    """``a * d`` by groups of three digits, most significant first: ``1 * 9``, ``t * 1000``, ``+ 595 * 9`` ..."""
    groups = [int(str(a)[max(0, i - 3):i]) for i in range(len(str(a)), 0, -3)][::-1]
    steps, total = [(f"{groups[0]} * {d}", groups[0] * d)], groups[0] * d
    for g in groups[1:]:
        steps += [(f"{g} * {d}", g * d), (f"{total} * 1000", total * 1000), (f"{total * 1000} + {g * d}", total * 1000 + g * d)]
        total = total * 1000 + g * d
    return steps


def carry(model) -> None:
    alone = sum(_value_is(ask(model, f"t1 = {a} * {d}", f"t1 = {a} * {d} = <result>"), F(int(a) * d)) for a, d in CARRY)
    print(f"alone: {alone}/{len(CARRY)}", flush=True)
    for name, chain in (("place values", _place_value_chain), ("thousands", _thousands_chain)):
        whole = steps = right = 0
        for a, d in CARRY:
            ok_all = True
            for expr, want in chain(int(a), d):
                ok = _value_is(ask(model, f"t1 = {expr}", f"t1 = {expr} = <result>"), F(want))
                steps, right, ok_all = steps + 1, right + ok, ok_all and ok
                if not ok:
                    print(f"{name}: {expr} wrong", flush=True)
            whole += ok_all
        print(f"{name}: {whole}/{len(CARRY)} products with every sub-step right; {right}/{steps} sub-steps", flush=True)


COLUMN_SUMS = [(14355000, 900), (27000, 225), (14355900, 72), (1350, 81), (690, 6), (990, 8), (13500000, 810000)]
APPENDS = [(8370, 8), (143559, 7), (92778, 8), (14355, 9), (1435590, 0), (21153, 4), (99666, 8), (3999, 10), (9999, 10),
           (2115407, 3), (83708, 6), (1431000, 0), (7, 13), (69, 6)]


def columns(model) -> None:
    right = total = 0
    for a, b in COLUMN_SUMS:
        n = max(len(str(a)), len(str(b)))
        da, db = (int(c) for c in str(a).zfill(n)[::-1]), (int(c) for c in str(b).zfill(n)[::-1])
        lines, wants, carry_in = [], [], 0
        for i, (x, y) in enumerate(zip(da, db)):
            lines.append(f"c{i} = {x} + {y}" + (f" + {carry_in}" if i else ""))
            wants.append(x + y + carry_in)
            carry_in = wants[-1] // 10
        reply = ask(model, "\n".join(lines), "<name> = <expression> = <result>", len(lines))
        got = [line.split("=")[-1].strip() for line in reply.splitlines()]
        ok = sum(g == str(w) for g, w in zip(got, wants))
        right, total = right + ok, total + len(wants)
        print(f"columns of {a} + {b}: {ok}/{len(wants)} ({got})", flush=True)
    print(f"column sums right: {right}/{total}")
    right = 0
    for r, d in APPENDS:
        expr = f"{r} * 10 + {d}" if d < 10 else f"{r} * 10 + {d} % 10"
        ok = _value_is(ask(model, f"t1 = {expr}", f"t1 = {expr} = <result>"), F(r * 10 + d % 10))
        right += ok
        print(f"{expr}: {'OK' if ok else 'wrong'}", flush=True)
    print(f"digits put back right: {right}/{len(APPENDS)}")


RESAMPLED = [("677795 * 5", F(3388975)), ("1595108 * 9", F(14355972)), ("128455 / 8", F(128455, 8)),
             ("14355000 + 900", F(14355900)), ("13500000 + 810000", F(14310000)), ("6777.95 * 0.05", F("338.8975"))]


def resample(model) -> None:
    from stepguard.guard import GuardConfig

    temperature = GuardConfig().resample_temperature
    for expr, want in RESAMPLED:
        text = (f"Known values:\n(none)\n\nSteps:\nt1 = {expr}\n\nWrite 1 line, one for each step, in order, each as\n"
                f"t1 = {expr} = <result>\nWrite nothing else.")
        got = [model.complete([{"role": "system", "content": SYS}, {"role": "user", "content": text}],
                              GenerationSettings(temperature=temperature, seed=100 + s, max_tokens=60)).text.strip() for s in range(8)]
        right = sum(_value_is(g, want) for g in got)
        print(f"{expr}: {right}/8 right at temperature {temperature}; wrote {[g.split('=')[-1].strip() for g in got]}", flush=True)


# Operands of the steps that stopped runs: the 95-step store's six unverified sums and the sums,
# products and quotients of the production suite's stops (docs/lab/production-suite-history.md, docs/lab/fidelity-history.md).
STOPPED_SUMS = [(468, 228), (280, 14), (365, 633), (472, 226), (454, 144), (288, 8), (754, 25), (14355000, 900), (27000, 225),
                (14355900, 72), (1350, 81), (690, 6), (13500000, 810000), (204, 192), (168, 171)]
STOPPED_DIFFERENCES = [(715, 20), (504, 6), (219, 21), (633, 365), (472, 226), (454, 144), (1000, 999), (80000, 12845),
                       (17676, 1350), (3831, 235)]
STOPPED_PRODUCTS = [(677795, 5), (1767676, 72), (3831, 235), (3806, 75), (45359237, 1672), (1595108, 9), (993657, 5), (86830, 7)]
STOPPED_QUOTIENTS = [(128455, 8), (993657, 8), (1350432, 12), (677795, 4), (3265, 4), (130245, 5), (1234341, 12), (2752, 38)]
DIGIT_CASES = 40


def _digit_forms() -> dict[str, list[str]]:
    """Each sub-step form the digit rungs ask, as literal expressions over the stopped operands."""
    import random

    def digits(n: int) -> list[int]:
        return [int(c) for c in reversed(str(n))]

    columns, borrows, borrows3, products, carries, choices, quotients = [], [], [], [], [], [], []
    for a, b in STOPPED_SUMS:
        da, db, carry = digits(a), digits(b), 0
        for i in range(max(len(da), len(db))):
            x, y = (da[i] if i < len(da) else 0), (db[i] if i < len(db) else 0)
            columns.append(f"{x} + {y}" + (f" + {carry}" if carry else ""))
            carry = (x + y + carry) // 10
        choices += [f"max({a}, {b})", f"max({-a}, 0)", f"max({b}, 0)"]
    for a, b in STOPPED_DIFFERENCES:
        da, db, borrow = digits(a), digits(b), 0
        for i in range(len(da)):
            x, y = da[i], (db[i] if i < len(db) else 0)
            top = x if i == len(da) - 1 else 10 + x
            borrows3.append(f"{top} - {y}" + (f" - {borrow}" if borrow else ""))
            borrows.append(f"{top} - {y}")
            if borrow:
                borrows.append(f"{top - y} - {borrow}")
            borrow = 0 if i == len(da) - 1 or top - y - borrow >= 10 else 1
    for a, b in STOPPED_PRODUCTS:
        for d in digits(b):
            if d == 0:
                continue
            carry = 0
            for x in digits(a):
                products.append(f"{x} * {d}")
                if carry:
                    carries.append(f"{x * d} + {carry}")
                carry = (x * d + carry) // 10
    for a, d in STOPPED_QUOTIENTS:
        r = 0
        for x in [int(c) for c in str(a)] + [0, 0, 0]:
            r = 10 * r + x
            if r >= d or quotients:
                quotients.append(f"{r} // {d}")
            r %= d
    rng = random.Random(0)
    forms = {"product": products, "carry": carries, "column": columns, "borrow": borrows, "borrow3": borrows3, "choice": choices,
             "quotient": quotients}
    out = {}
    for name, cases in forms.items():  # a column with its carry or borrow first: the form the probe is about
        ordered = name in ("column", "borrow", "borrow3")
        cases = sorted(dict.fromkeys(cases), key=lambda e: -e.count(" ")) if ordered else cases
        out[name] = cases[:DIGIT_CASES] if ordered else rng.sample(cases, min(DIGIT_CASES, len(cases)))
    return out


DIGIT_FORMS = ("product", "borrow", "borrow3", "quotient", "choice", "column", "carry")


def digit_steps(model, forms: tuple[str, ...] = DIGIT_FORMS) -> None:
    """Each form as one procedure of literal sub-steps, guarded as a digit rung runs its sub-procedure."""
    from stepguard.guard import Guard, GuardConfig
    from stepguard.procedure import Procedure

    config = GuardConfig(chunk_size=4, ladder=("resample",), max_reprompts_per_step=3, on_exhausted="flag")
    every = _digit_forms()
    for name in forms:
        exprs = every[name]
        proc = Procedure.model_validate({"name": f"probe-{name}", "steps": [{"var": f"d{i}", "expr": e} for i, e in enumerate(exprs, 1)]})
        t0 = time.perf_counter()
        result = Guard(model, config).run(proc, {})
        first = sum(s.provenance == "model_verified" and s.reprompts == 0 for s in result.steps)
        right = sum(s.provenance == "model_verified" for s in result.steps)
        print(f"{name:<9} first try {first}/{len(exprs)}, with resampling {right}/{len(exprs)}; {result.usage.model_calls} calls, "
              f"{result.usage.input_tokens + result.usage.output_tokens} tokens, {time.perf_counter() - t0:.0f} s; "
              f"first-try misses: {[d.got for d in result.deviations if d.attempt == 0][:6]}", flush=True)


# The steps that stopped runs, with their committed operands: the 95-step store's six unverified
# sums and the production stops (docs/lab/production-suite-history.md, "Fourth figures").
STOPPED_STEPS = [("-280", "-", "14", None), ("-472", "+", "-226", None), ("-454", "+", "-144", None), ("-288", "+", "-8", None),
                 ("75.4", "+", "2.5", 1), ("23.5", "*", "38.31", 2), ("38.06", "*", "0.075", 2), ("12845.5", "/", "80000", 4),
                 ("468", "+", "228", None), ("365", "-", "-633", None)]


def digit_rungs(model, which: str = "") -> None:
    """Each stopped step through the ``digits`` rung alone, on the real model: its sub-procedure run
    as the guard runs it (the rung's nested configuration), then the value read by position."""
    from fractions import Fraction

    from stepguard.errors import BudgetExhausted
    from stepguard.guard import Guard, GuardConfig
    from stepguard.guard.rungs import get_rung
    from stepguard.procedure import Procedure, round_to_scale

    rung = get_rung("digits")
    chosen = [STOPPED_STEPS[int(i)] for i in which.split(",")] if which else STOPPED_STEPS
    for a, op, b, scale in chosen:
        step = {"var": "r", "expr": f"a {op} b", **({"type": "decimal", "scale": scale} if scale is not None else {})}
        proc = Procedure.model_validate({"name": "stopped", "inputs": ["a", "b"], "steps": [step]})
        env = {"a": F(a), "b": F(b)}
        sub = rung.derive(proc, 0, env)
        if sub is None:
            print(f"{a} {op} {b}: the rung does not apply", flush=True)
            continue
        t0 = time.perf_counter()
        try:
            result = Guard(model, rung.nested_config(GuardConfig(), 0, None, None)).run(sub, {})
        except BudgetExhausted as exc:  # the nested run stops at a sub-step no try verified (on_exhausted=raise)
            result = exc.result
        read = None if result.status != "verified" else rung.read(proc, 0, env, result.texts)
        exact = {"+": env["a"] + env["b"], "-": env["a"] - env["b"], "*": env["a"] * env["b"], "/": env["a"] / env["b"]}[op]
        places = scale or 0
        ok = read is not None and round_to_scale(Fraction(read.value), places, "ROUND_HALF_EVEN") == round_to_scale(
            exact, places, "ROUND_HALF_EVEN")
        u = result.usage
        first = sum(s.reprompts == 0 and s.provenance == "model_verified" for s in result.steps)
        told = f"read {read.value} ({'right' if ok else 'WRONG'})" if read else f"not verified: stopped at {result.first_unverified}"
        print(f"{a} {op} {b}: {len(sub.steps)} sub-steps, {first} right first try, {told}; {u.model_calls} calls, "
              f"{u.input_tokens + u.output_tokens} tokens, {time.perf_counter() - t0:.0f} s", flush=True)

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    for flag in ("--compare", "--branch", "--product", "--ties", "--point", "--divide", "--carry", "--resample", "--columns", "--digits",
                 "--digit-rungs"):
        ap.add_argument(flag, action="store_true")
    ap.add_argument("--forms", default=",".join(DIGIT_FORMS), help="--digits: the forms to probe, in order")
    ap.add_argument("--stopped", default="", help="--digit-rungs: indices into STOPPED_STEPS to run (default: all)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with load_model(args.model) as model:
        for name, fn in (("compare", compare), ("branch", branch), ("product", product), ("ties", ties), ("point", point),
                         ("divide", divide),
                         ("carry", carry), ("resample", resample), ("columns", columns),
                         ("digits", lambda m: digit_steps(m, tuple(args.forms.split(",")))),
                         ("digit_rungs", lambda m: digit_rungs(m, args.stopped))):
            if getattr(args, name):
                fn(model)
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
