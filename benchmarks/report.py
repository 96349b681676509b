"""Turn a benchmark run into the results tables (Markdown), the targets with their measured figures, and a
PNG chart; optionally put them into README.md between its benchmark markers.

    python benchmarks/report.py DIR [--readme README.md [--headline]] [--stat median|min]

DIR holds benchmark.json (pytest-benchmark's --benchmark-json of benchmarks/test_metadata.py), optionally
benchmark-pure.json (the same run under KCODEC_PURE=1: the reference backend's figures) and extra.json
(peak memory); results.md and chart.png are written there. ``--headline`` puts only the targets table
between the markers (the README's front page; the full table goes to docs/benchmarks.md). Every figure comes from one case's
interleaved rounds (each codec once per round, kcodec.sizes.timing): the median (or, with --stat min,
the least disturbed round) of the call plus dropping its result; ratios compare codecs of the same case.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

OPERATIONS = ["decode", "encode", "encoded_size", "columnar", "names"]
MESSAGES = {"metadata": "Metadata response", "dtp": "DescribeTopicPartitions response",
            "request": "Metadata request naming every topic"}
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
Key = tuple  # (operation, message, size, version, implementation)


def load(folder: Path, stat: str) -> tuple[dict, dict, dict, dict]:
    """({key: seconds paid}, {key: seconds of the call alone}, {(message, size, version): bytes}, info)."""
    paid: dict[Key, float] = {}
    call: dict[Key, float] = {}
    sizes: dict[tuple[str, str, int], int] = {}
    suffix = "_min" if stat == "min" else ""
    raw: dict = {}
    for name in ("benchmark.json", "benchmark-pure.json"):
        if not (folder / name).exists():
            continue
        run = json.loads((folder / name).read_text())
        raw = raw or run
        for b in run["benchmarks"]:
            e = b["extra_info"]
            if "paid" not in e:  # the other groups (sizes, broker load) report themselves
                continue
            for impl, m in e["paid"].items():
                key = (e["operation"], e["message"], e["size"], e["version"], impl)
                if key not in paid:  # the default backend's run first; the pure run adds its own codec
                    paid[key], call[key] = m["total" + suffix], m["call" + suffix]
            sizes[(e["message"], e["size"], e["version"])] = e["payload_bytes"]
    extra = json.loads((folder / "extra.json").read_text()) if (folder / "extra.json").exists() else {}
    return paid, call, sizes, {"machine": raw.get("machine_info", {}), "extra": extra}


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _size_key(size: str) -> int:
    return int(size[:-1])


def table(times: dict, sizes: dict, operations: list[str]) -> list[str]:
    impls = sorted({k[4] for k in times if k[0] in operations},
                   key=lambda n: (not n.startswith(("kcodec", "columnar")), n))
    cases = sorted({k[1:4] for k in times if k[0] in operations},
                   key=lambda c: (list(MESSAGES).index(c[0]), _size_key(c[1]), c[2]))
    out = ["| operation | payload | " + " | ".join(impls) + " |", "|---|---|" + "---:|" * len(impls)]
    for op in operations:
        for case in cases:
            cells = [fmt(times[(op, *case, i)]) if (op, *case, i) in times else "" for i in impls]
            if any(cells):
                message, size, v = case
                out.append(f"| {op} | {MESSAGES[message]}, {size} topics v{v} ({sizes[case] / 1e6:.2f} MB) | "
                           + " | ".join(cells) + " |")
    return out


def targets(times: dict, sizes: dict, extra: dict) -> list[str]:
    rows: list[str] = []

    def row(name: str, got: float | None, goal: float, how: str, higher: bool = True) -> None:
        if got is None:
            rows.append(f"| {name} | {how} | not measured | — |")
            return
        met = got >= goal if higher else got <= goal
        rows.append(f"| {name} | {how} | {got:.2f} | {'met' if met else '**not met**'} |")

    def kcodec_of(op: str, case: tuple) -> tuple[str, float] | None:
        found = sorted((t, k[4]) for k, t in times.items() if k[:4] == (op, *case) and k[4].startswith("kcodec")
                       and not k[4].endswith("-python"))
        return (found[0][1], found[0][0]) if found else None

    def vs(op: str, case: tuple, peer: str, goal: float, label: str) -> None:
        mine, theirs = kcodec_of(op, case), times.get((op, *case, peer))
        who = mine[0] if mine else "kcodec"
        row(f"{op} + free, {label} ({who}) vs {peer}", theirs / mine[1] if mine and theirs else None, goal,
            f"≥ {goal:g}× faster")

    for case, label in ((("metadata", "1k", 1), "Metadata v1 1k"), (("metadata", "1k", 12), "Metadata v12 1k"),
                        (("metadata", "10k", 12), "Metadata v12 10k"), (("dtp", "1k", 0), "DTP v0 1k"),
                        (("dtp", "10k", 0), "DTP v0 10k")):
        vs("decode", case, "kio", 3, label)
    vs("decode", ("request", "1k", 12), "kio", 1.5, "Metadata v12 request of 1k names")
    vs("encode", ("metadata", "1k", 12), "kafka-python", 15, "Metadata v12 1k")
    pure, kp = times.get(("decode", "metadata", "1k", 12, "kcodec-python")), \
        times.get(("decode", "metadata", "1k", 12, "kafka-python"))
    row("pure reference decode + free, Metadata v12 1k, vs kafka-python", kp / pure if kp and pure else None, 1,
        "≥ 1× (no slower)")
    for op, message, v, sizes_, goal in (("columnar", "metadata", 12, ("1k", "10k", "100k"), 2.5),
                                         ("columnar", "dtp", 0, ("1k", "10k"), 2.5),
                                         ("names", "metadata", 12, ("1k", "10k", "100k"), 4)):
        for size in sizes_:
            t = times.get((op, message, size, v, "columnar-cython"))
            row(f"{op} {MESSAGES[message]} v{v} {size}, GB/s (columnar-cython)",
                sizes[(message, size, v)] / t / 1e9 if t else None, goal, f"≥ {goal:g} GB/s")
    for op in ("decode", "columnar", "names", "encode"):
        impl = "columnar-cython" if op in ("columnar", "names") else None
        one = times.get((op, "metadata", "1k", 12, impl)) if impl else (kcodec_of(op, ("metadata", "1k", 12)) or
                                                                       (None, None))[1]
        ten = times.get((op, "metadata", "10k", 12, impl)) if impl else (kcodec_of(op, ("metadata", "10k", 12)) or
                                                                        (None, None))[1]
        row(f"{op} Metadata v12, 10k / 1k time", ten / one if one and ten else None, 10.5, "≤ 10.5×", higher=False)
    for scan in ("columnar", "names"):
        m = extra.get(f"peak_memory_{scan}_100k")
        row(f"peak memory, {scan} decode of 100k ({m['engine'] if m else '-'}), × payload",
            m["ratio"] if m else None, 3, "≤ 3×", higher=False)
    return ["| target | goal | measured | |", "|---|---|---:|---|"] + rows


def chart(times: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    case = ("metadata", "1k", 12)
    ops = [op for op in OPERATIONS if any(k[:4] == (op, *case) for k in times)]
    impls = sorted({k[4] for k in times if k[1:4] == case})
    colors = {impl: plt.get_cmap("tab10")(j) for j, impl in enumerate(impls)}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(impls), 1)
    labelled = set()
    for i, op in enumerate(ops):  # each operation's bars side by side, centred on its tick
        here = [impl for impl in impls if (op, *case, impl) in times]
        for j, impl in enumerate(here):
            x = i + (j - (len(here) - 1) / 2) * width
            ax.bar(x, times[(op, *case, impl)] * 1e3, width, color=colors[impl],
                   label=None if impl in labelled else impl)
            labelled.add(impl)
    ax.set_yscale("log")
    ax.set_ylabel("ms per call + free of its result, log scale")
    ax.set_xticks(range(len(ops)), ops)
    ax.set_title("Metadata v12 response, 1,000 topics × 10 partitions (475 KB), interleaved rounds")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    stat = argv[argv.index("--stat") + 1] if "--stat" in argv else "median"
    paid, call, sizes, info = load(folder, stat)
    m = info["machine"]
    cpu = m.get("cpu", {}).get("brand_raw", platform.processor())
    what = "median" if stat == "median" else "minimum"
    head = [f"Measured by `make bench-report` ({m.get('python_implementation', '')} "
            f"{m.get('python_version', '')}, {cpu}): each figure is the {what} over a case's interleaved rounds "
            "(every codec once per round, through its public API) of one call plus dropping its result.", "",
            *table(paid, sizes, OPERATIONS), ""]
    alone = [f"The call alone ({what}; its result still alive, so the free is not counted):", "",
             *table(call, sizes, ["decode"]), ""]
    goals = ["Targets (issue 12), ratios of codecs in the same rounds:", "", *targets(paid, sizes, info["extra"])]
    text = "\n".join(head + alone + goals) + "\n"
    (folder / "results.md").write_text(text)
    chart(paid, folder / "chart.png")
    print(text)
    if "--headline" in argv:
        text = "\n".join(head[:2] + goals + ["", "Every case, and the call alone: [benchmarks](docs/benchmarks.md)."])
    else:
        text = "\n".join(head + goals + ["", "The call alone, without the free: benchmarks/results/results.md."])
    text += "\n"
    if "--readme" in argv:
        readme = Path(argv[argv.index("--readme") + 1])
        body = readme.read_text()
        if START in body and END in body:
            head, rest = body.split(START, 1)
            body = head + START + "\n" + text + END + rest.split(END, 1)[1]
            readme.write_text(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
