"""`kcodec analyze` beside tshark (benchmarks/analyze_bench.py's suite ``analyze``, `make bench-analyze`): the
table and the targets of issue 32 in docs/analyze.md."""

from __future__ import annotations

import statistics
from typing import Callable, Optional

from figures import store
from figures.sections import provenance, section, verdict

TOOLS = {"kcodec": "kcodec analyze", "tshark": "tshark"}
SMALL_TARGET_S = 15.0
TARGET_SIZE = "1g"  # the wall-time target's capture (issue 32's "done when"); larger ones show memory and CPU at scale


def _spread(values: list[float], fmt: str) -> str:
    if not values:
        return ""
    if min(values) == max(values):
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def _sizes(kept: list[dict]) -> list[str]:
    """The capture sizes measured, smallest first."""
    sizes: dict[str, int] = {}
    for run in kept:
        for c in run["cases"]:
            sizes[c["params"]["size"]] = c["bytes"]
    return sorted(sizes, key=sizes.__getitem__)


def _impl(run: dict, size: str, tool: str) -> Optional[dict]:
    c = store.case(run, f"analyze[{size}]")
    return c["impls"].get(tool) if c else None


def _all(kept: list[dict], size: str, tool: str, key: str) -> list[float]:
    """Every round's figure over the kept runs."""
    out: list[float] = []
    for run in kept:
        f = _impl(run, size, tool)
        if f:
            out += f["samples"] if key == "wall_s" else f.get(key, [])
    return out


def _pairs(kept: list[dict], size: str, key: str) -> list[tuple[float, float]]:
    """(kcodec, tshark) figures of each round, the two measured one right after the other."""
    out = []
    for run in kept:
        k, t = _impl(run, size, "kcodec"), _impl(run, size, "tshark")
        if k and t:
            ks, ts = (k["samples"], t["samples"]) if key == "wall_s" else (k.get(key, []), t.get(key, []))
            out += list(zip(ks, ts))
    return out


def _bytes(kept: list[dict], size: str) -> int:
    return next(c["bytes"] for run in kept for c in run["cases"] if c["params"]["size"] == size)


def table(kept: list[dict]) -> list[str]:
    rows = ["| capture | tool | wall s | CPU s | MB per CPU second | frames per CPU second | peak memory MB |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for size in _sizes(kept):
        mb = _bytes(kept, size) / 1e6
        for tool, name in TOOLS.items():
            walls, cpus = _all(kept, size, tool, "wall_s"), _all(kept, size, tool, "cpu_s")
            if not walls:
                continue
            frames = next((f["frames"] for run in kept if (f := _impl(run, size, tool)) and f.get("frames")), None)
            rate = [mb / c for c in cpus if c]
            fps = [frames / c for c in cpus if c] if frames else []
            rows.append(f"| {size} ({mb:,.1f} MB) | {name} | {_spread(walls, '.1f')} | {_spread(cpus, '.1f')} | "
                        f"{_spread(rate, '.1f' if min(rate or [1]) >= 1 else '.3f')} | {_spread(fps, ',.0f')} | "
                        f"{_spread(_all(kept, size, tool, 'peak_rss_mb'), ',.0f')} |")
    return rows


def _target_size(sizes: list[str]) -> str:
    """The size issue 32's "done when" names (1 GB), else the largest measured."""
    return TARGET_SIZE if TARGET_SIZE in sizes else sizes[-1]


def targets(kept: list[dict]) -> list[str]:
    sizes = _sizes(kept)
    rows = ["| target | measured | |", "|---|---|---|"]
    if not sizes:
        return rows
    target, small = _target_size(sizes), sizes[0]

    def paired(size: str, what: str, key: str) -> None:
        pairs = _pairs(kept, size, key)
        ratios: list[Optional[float]] = [k / t if t else None for k, t in pairs]
        ok: Callable[[float], bool] = lambda x: x <= 1  # noqa: E731
        rows.append(f"| {size}: kcodec analyze's {what} no more than tshark's, round by round | "
                    f"{_spread([r for r in ratios if r is not None], '.1f')}× tshark's | {verdict(ratios, ok, 'round')} |")

    for size in sizes[1:] or sizes:  # every capture but the small one, which has a target of its own
        paired(size, "CPU seconds (throughput per core at least tshark's)", "cpu_s")
    paired(target, "wall time", "wall_s")
    walls: list[Optional[float]] = list(_all(kept, small, "kcodec", "wall_s"))
    rows.append(f"| {small}: kcodec analyze under {SMALL_TARGET_S:.0f} s, Spark's start included | "
                f"{_spread([w for w in walls if w is not None], '.1f')} s | "
                f"{verdict(walls, lambda w: w < SMALL_TARGET_S, 'round')} |")
    if len(sizes) > 2:
        mid, big = sizes[-2], sizes[-1]
        peak = {s: max(_all(kept, s, "kcodec", "peak_rss_mb") or [0]) for s in (mid, big)}
        rows.append(f"| kcodec analyze's peak memory at {big} within 1.5× its peak at {mid} (bounded) | "
                    f"{peak[big]:,.0f} MB against {peak[mid]:,.0f} MB | "
                    f"{'met' if peak[big] <= 1.5 * peak[mid] else '**not met**'} |")
        own = {s: _process_peaks(kept, s) for s in (mid, big)}
        kinds = [k for k in own[big] if k in own[mid] and k != "other"]
        if kinds:
            rows.append(f"| kcodec analyze's peak memory of each process at {big} within 1.5× its peak at {mid} "
                        "(driver and each executor bounded) | "
                        + ", ".join(f"{k} {own[big][k]:,} MB against {own[mid][k]:,}" for k in kinds) + " | "
                        + ("met" if all(own[big][k] <= 1.5 * own[mid][k] for k in kinds) else "**not met**") + " |")
    return rows


def _process_peaks(kept: list[dict], size: str) -> dict[str, int]:
    """kcodec analyze's largest own peak (MB) of each kind of process over every round (runs that kept them)."""
    out: dict[str, int] = {}
    for run in _all(kept, size, "kcodec", "process_peak_mb"):
        for kind, mb in run.items():  # type: ignore[attr-defined]
            out[kind] = max(out.get(kind, 0), mb)
    return out


def _median(kept: list[dict], size: str, tool: str) -> Optional[float]:
    cpus = _all(kept, size, tool, "cpu_s")
    return statistics.median(cpus) if cpus else None


def per_gb(kept: list[dict]) -> str:
    """What each further GB costs each tool (the CPU medians of consecutive sizes), beside kcodec analyze's start
    (its CPU on the small capture): the part of its CPU that does not grow with the input."""
    sizes = _sizes(kept)
    small, large = sizes[0], sizes[1:]
    steps = []
    for a, b in zip(large, large[1:]):
        gb = (_bytes(kept, b) - _bytes(kept, a)) / 1e9
        cost = {t: (mb - ma) / gb for t in TOOLS if (ma := _median(kept, a, t)) is not None
                and (mb := _median(kept, b, t)) is not None}
        if len(cost) == len(TOOLS):
            steps.append(f"from {a} to {b} {cost['kcodec']:.1f} against {cost['tshark']:.1f}")
    start, first = _median(kept, small, "kcodec"), _median(kept, large[0], "tshark") if large else None
    if not steps or start is None or not first:
        return ""
    above = [(size, k - t) for size in large if (k := _median(kept, size, "kcodec")) is not None
             and (t := _median(kept, size, "tshark")) is not None and k > t]
    gap = (" Its CPU is above tshark's by " + ", ".join(f"{d:.1f} s at {size}" for size, d in above) + "."
           if above else "")
    return (f"Each further GB of capture costs kcodec analyze and tshark (CPU s a GB, from the medians above) "
            f"{'; '.join(steps)}. What does not grow with the input, kcodec analyze's CPU on the {small} capture "
            f"({start:.1f} s: Spark's JVM starting, the Python processes' imports, the tables and the report "
            f"written), is {start / first:.1f}× tshark's CPU on the whole {large[0]} capture.{gap}")


def current(every: list[dict]) -> list[dict]:
    """The runs of the code and machine last measured: the last run's commit (and tree state), CPU and cores.
    (Runs of older code, or of another machine, are not figures of this code: they are in ``history``.)"""
    last = every[-1]
    key = lambda r: (r["commit"], bool(r.get("dirty")), r["machine"]["cpu"], r["machine"]["cores"])  # noqa: E731
    return [r for r in every if key(r) == key(last)]


def history(every: list[dict], kept: list[dict]) -> str:
    """Every kept run's rounds of the target's capture (1 GB) against tshark, beside those of the current code."""
    big = _target_size(_sizes(every))
    machines: dict[str, int] = {}
    for r in every:
        machines[r["machine"]["cpu"]] = machines.get(r["machine"]["cpu"], 0) + 1
    walls, cpus = _pairs(every, big, "wall_s"), _pairs(every, big, "cpu_s")
    return (f"All {len(every)} kept runs ({len({r['commit'] for r in every})} commits; "
            + ", ".join(f"{cpu}: {n}" for cpu, n in machines.items())
            + f"), the {len(kept)} above among them: at {big}, kcodec analyze's wall time no more than tshark's in "
            f"{sum(k <= t for k, t in walls)} of {len(walls)} rounds, its CPU seconds in "
            f"{sum(k <= t for k, t in cpus)} of {len(cpus)}.")


@section("analyze-vs-tshark", suites=("analyze",))
def analyze_vs_tshark(runs: dict[str, list[dict]]) -> str:
    every = runs["analyze"]
    if not every:
        return provenance(every, "`kcodec analyze` beside tshark", "make bench-analyze")
    kept = current(every)
    last = kept[-1]
    rounds = sum(len(c["impls"].get("kcodec", {}).get("samples", [])) for c in last["cases"][:1])
    peers = ", ".join(f"{k} {last['peers'][k]}" for k in ("tshark", "pyspark", "java") if k in last["peers"])
    head = (provenance(kept, command="make bench-analyze") + f" Each run measures every size {rounds} time(s) per "
            f"tool, the tools alternating; kcodec's {last.get('backend', '')} backend, {peers}. CPU seconds are user "
            "and system time of the tool and every process it started (for kcodec: its Python driver, the JVM, the "
            "Python workers); peak memory is their summed resident memory. Figures: median (min-max) over every "
            "round of these runs, those of the last commit measured on this machine.")
    marginal = per_gb(kept)
    return "\n".join([head, "", *table(kept), "", *([marginal, ""] if marginal else []), *targets(kept), "",
                      history(every, kept)])
