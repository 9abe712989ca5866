"""Which instances a run takes: configuration filter, per-configuration limit, one row per id."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["count_lines", "light", "parse_configs", "select"]


def parse_configs(text: str | Iterable[tuple[int, int]] | None) -> frozenset[tuple[int, int]] | None:
    """``"95x7,23x2"`` -> ``{(95, 7), (23, 2)}`` (steps x look-back); ``None``/``""`` -> ``None`` (all).

    Raises:
        ValueError: an item is not ``<steps>x<lookback>`` with positive integers.
    """
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        return frozenset((int(n), int(lb)) for n, lb in text)
    out = set()
    for item in text.replace(" ", "").split(","):
        n, sep, lb = item.lower().partition("x")
        if not sep or not n.isdigit() or not lb.isdigit() or int(n) < 1 or int(lb) < 1:
            raise ValueError(f"configuration {item!r} is not <steps>x<lookback>, e.g. 95x7")
        out.add((int(n), int(lb)))
    return frozenset(out)


def select(source: Iterable[Any], configs: frozenset[tuple[int, int]] | None, limit: int | None) -> Iterator[Any]:
    """Instances of the wanted configurations, at most ``limit`` per configuration, each id once, in order.

    Works on :class:`Instance` objects and on the plain dicts of :func:`light` alike.
    """
    taken: dict[tuple[int, int], int] = {}
    seen: set[str] = set()
    for inst in source:
        rid, n_steps, lookback = (
            (inst["id"], inst["n_steps"], inst["lookback"]) if isinstance(inst, dict) else (inst.id, inst.n_steps, inst.lookback)
        )
        key = (n_steps, lookback)
        if configs is not None and key not in configs:
            continue
        if limit is not None and taken.get(key, 0) >= limit:
            continue
        if rid in seen:
            continue
        seen.add(rid)
        taken[key] = taken.get(key, 0) + 1
        yield inst


def light(path: str | Path) -> Iterator[dict[str, Any]]:
    """``{id, n_steps, lookback}`` of each line of an instances file, without validating the rest:
    the counting pass that sizes the progress bar (the run itself validates every line)."""
    from stepguard.bench.instances import read_jsonl

    for _, data in read_jsonl(path):
        if isinstance(data, dict):
            yield {"id": data.get("id"), "n_steps": data.get("n_steps"), "lookback": data.get("lookback")}


def count_lines(path: str | Path) -> int:
    """Lines of a file (an instance is one line; blank lines, rare, make this an overestimate)."""
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")
