"""The table of `kcodec analyze` beside tshark in docs/analyze.md, from benchmarks/results/analyze.json.

    .venv/bin/python benchmarks/analyze_report.py --write docs/analyze.md   # replace the table
    .venv/bin/python benchmarks/analyze_report.py --check docs/analyze.md   # exit 1 if it differs

The table sits between ``<!-- analyze-bench:start -->`` and ``<!-- analyze-bench:end -->``;
tests/test_analyze_figures.py checks that it is what this renders. (A small generator of its own, for
benchmarks/report.py to fold in.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "analyze.json"
START, END = "<!-- analyze-bench:start -->", "<!-- analyze-bench:end -->"
SMALL_TARGET_S = 15.0


def _spread(values: list[float], fmt: str) -> str:
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def render(results: dict[str, Any]) -> str:
    runs = [r for r in results["runs"] if r["status"] == 0]
    sizes = list(results["captures"])
    n_runs = len({r["run"] for r in results["runs"]})
    loads = [r["load_1m"] for r in results["runs"]]
    m = results["machine"]
    lines = [f"Measured by `benchmarks/analyze_bench.py`: {n_runs} run(s), each size once per tool per run, the tools "
             f"alternating; {m['cpus']} CPUs ({m['processor']}), kcodec's {m['backend']} backend, {results['tshark'].rstrip('.')}. "
             f"The machine was shared: 1-minute load {min(loads):.1f} to {max(loads):.1f} (on {m['cpus']} CPUs), so the "
             "times are those of a busy machine. Figures: median (min-max) over the runs.",
             "", "| capture | tool | wall s | MB/s | frames/s | peak memory MB |", "|---|---|---:|---:|---:|---:|"]
    for size in sizes:
        c = results["captures"][size]
        frames = next((r["frames"] for r in runs if r["size"] == size and r["tool"] == "kcodec" and r["frames"]), None)
        for tool in ("kcodec", "tshark"):
            mine = [r for r in runs if r["size"] == size and r["tool"] == tool]
            if not mine:
                continue
            walls = [r["wall_s"] for r in mine]
            mbs = [c["bytes"] / 1e6 / w for w in walls]
            fps = [frames / w for w in walls] if frames else []
            name = "kcodec analyze" if tool == "kcodec" else "tshark"
            lines.append(f"| {size} ({c['bytes'] / 1e6:,.1f} MB) | {name} | {_spread(walls, '.1f')} | "
                         f"{_spread(mbs, '.1f' if min(mbs) >= 1 else '.3f')} | {_spread(fps, ',.0f') if fps else ''} | "
                         f"{_spread([r['peak_rss_mb'] for r in mine], ',.0f')} |")
    lines += ["", "| target | met in |", "|---|---|"]
    by_run: dict[tuple[int, str], dict[str, float]] = {}
    for r in runs:
        by_run.setdefault((r["run"], r["size"]), {})[r["tool"]] = r["wall_s"]
    big = max(sizes, key=lambda s: results["captures"][s]["bytes"])
    pairs = [v for (_, s), v in by_run.items() if s == big and len(v) == 2]
    lines.append(f"| {big}: kcodec analyze's wall time no more than tshark's | "
                 f"{sum(v['kcodec'] <= v['tshark'] for v in pairs)} of {len(pairs)} runs |")
    small = min(sizes, key=lambda s: results["captures"][s]["bytes"])
    walls = [r["wall_s"] for r in runs if r["size"] == small and r["tool"] == "kcodec"]
    lines.append(f"| {small}: kcodec analyze under {SMALL_TARGET_S:.0f} s, Spark's start included | "
                 f"{sum(w < SMALL_TARGET_S for w in walls)} of {len(walls)} runs |")
    peaks = {s: max([r["peak_rss_mb"] for r in runs if r["size"] == s and r["tool"] == "kcodec"] or [0]) for s in sizes}
    mid = sorted(sizes, key=lambda s: results["captures"][s]["bytes"])[-2] if len(sizes) > 1 else big
    lines.append(f"| kcodec analyze's peak memory at {big} within 1.5x its peak at {mid} (bounded) | "
                 f"{'yes' if peaks[big] <= 1.5 * peaks[mid] else 'no'}: {peaks[big]:,} MB against {peaks[mid]:,} MB |")
    return "\n".join(lines) + "\n"


def replace(text: str, table: str) -> str:
    head, sep, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"no {START} ... {END} block")
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=RESULTS)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path)
    group.add_argument("--check", type=Path)
    args = ap.parse_args(argv)
    table = render(json.loads(args.results.read_text()))
    path = args.write or args.check
    text = path.read_text()
    new = replace(text, table)
    if args.write:
        path.write_text(new)
        return 0
    return 0 if new == text else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
