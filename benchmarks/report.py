"""Every published figure from the committed results files (benchmarks/results/<suite>.jsonl).

    python benchmarks/report.py start RUN_DIR               # note commit, tree, machine, load before measuring
    python benchmarks/report.py reuse-counts FROM RUN_DIR   # an earlier run's instruction counts (same clean commit)
    python benchmarks/report.py collect RUN_DIR [--fresh]   # append one run per suite from RUN_DIR's partials
    python benchmarks/report.py write                       # regenerate every section of README.md, docs/*.md
    python benchmarks/report.py check                       # exit 1 when a section differs from the files
    python benchmarks/report.py chart [PNG]                 # the last Metadata run as a bar chart

`make bench-report` runs the benchmarks with KCODEC_BENCH_RUN=RUN_DIR (each pytest process writes a
partial per suite), the instruction counts (benchmarks/callgrind.py) and the native anchors
(benchmarks/native/run.py) into the same folder, then ``collect`` and ``write``. ``--fresh`` starts a new
set of runs: the suites collected drop their kept runs first (git keeps the old ones). The results files'
format is in benchmarks/figures/store.py, the sections and how to add one in benchmarks/figures/sections.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import sections, store  # noqa: E402
from figures.metadata import OPERATIONS  # noqa: E402


def chart(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept = store.runs("metadata")
    if not kept:
        raise SystemExit("no Metadata run kept")
    run = kept[-1]
    times = {(c["params"]["operation"], impl): f["median"] for c in run["cases"]
             if c["id"].endswith("[metadata 1k v12]") for impl, f in c["impls"].items() if "median" in f}
    ops = [op for op in OPERATIONS if any(k[0] == op for k in times)]
    impls = sorted({k[1] for k in times})
    colors = {impl: plt.get_cmap("tab10")(j) for j, impl in enumerate(impls)}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(impls), 1)
    labelled = set()
    for i, op in enumerate(ops):  # each operation's bars side by side, centred on its tick
        here = [impl for impl in impls if (op, impl) in times]
        for j, impl in enumerate(here):
            ax.bar(i + (j - (len(here) - 1) / 2) * width, times[(op, impl)] * 1e3, width, color=colors[impl],
                   label=None if impl in labelled else impl)
            labelled.add(impl)
    ax.set_yscale("log")
    ax.set_ylabel("ms per call + free of its result, log scale")
    ax.set_xticks(range(len(ops)), ops)
    ax.set_title(f"Metadata v12 response, 1,000 topics, interleaved rounds ({run['started']})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    command, args = argv[0], argv[1:]
    if command == "start":
        store.start(Path(args[0]))
        return 0
    if command == "reuse-counts":
        try:
            for path in store.reuse_counts(Path(args[0]), Path(args[1])):
                print(f"instruction counts reused: {path.name}")
        except ValueError as e:
            raise SystemExit(f"reuse-counts: {e}")
        return 0
    if command == "collect":
        folder = Path(args[0])
        if "--fresh" in args:
            for part in folder.glob(f"*{store.PART}"):
                suite = part.name.split(".", 1)[0]
                (store.RESULTS / f"{suite}.jsonl").unlink(missing_ok=True)
        for path in store.collect(folder):
            print(f"appended a run to {path.relative_to(store.ROOT)} ({len(store.runs(path.stem))} kept)")
        return 0
    if command == "write":
        for page in sections.write():
            print(f"figures regenerated in {page.relative_to(store.ROOT)}")
        return 0
    if command == "check":
        stale = sections.check()
        for line in stale:
            print(f"differs from benchmarks/results/: {line}")
        return 1 if stale else 0
    if command == "chart":
        chart(Path(args[0]) if args else store.ROOT / "build" / "bench" / "chart.png")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
