"""Turn a benchmark run into the results table (Markdown), the targets with their measured ratios, and a
PNG chart; optionally put the table into README.md between its benchmark markers.

    python benchmarks/report.py DIR [--readme README.md]

DIR holds benchmark.json (pytest-benchmark's --benchmark-json) and extra.json (peak memory); results.md
and chart.png are written there. Every figure is the minimum over a case's rounds (the least disturbed
run on a shared machine); ratios compare figures of the same run.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

OPERATIONS = ["decode", "columnar", "names", "encode", "encoded_size"]
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def load(folder: Path) -> tuple[dict, dict, dict]:
    raw = json.loads((folder / "benchmark.json").read_text())
    times: dict[tuple[str, str, int, str], float] = {}
    sizes: dict[tuple[str, int], int] = {}
    for b in raw["benchmarks"]:
        e = b["extra_info"]
        if "implementation" not in e:  # the other groups (sizes, broker load) report themselves
            continue
        times[(e["operation"], e["size"], e["version"], e["implementation"])] = b["stats"]["min"]
        sizes[(e["size"], e["version"])] = e["payload_bytes"]
    extra = json.loads((folder / "extra.json").read_text()) if (folder / "extra.json").exists() else {}
    return times, sizes, {"machine": raw.get("machine_info", {}), "extra": extra}


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def table(times: dict, sizes: dict) -> list[str]:
    impls = sorted({k[3] for k in times}, key=lambda n: (not n.startswith(("kcodec", "columnar")), n))
    cases = sorted({(k[1], k[2]) for k in times}, key=lambda c: (int(c[0][:-1]), c[1]))
    out = ["| operation | payload | " + " | ".join(impls) + " |", "|---|---|" + "---:|" * len(impls)]
    for op in OPERATIONS:
        for size, v in cases:
            cells = [fmt(times[(op, size, v, i)]) if (op, size, v, i) in times else "" for i in impls]
            if any(cells):
                mb = sizes[(size, v)] / 1e6
                out.append(f"| {op} | {size} v{v} ({mb:.1f} MB) | " + " | ".join(cells) + " |")
    return out


def best(times: dict, op: str, size: str, v: int, prefix: str) -> tuple[str, float] | None:
    found = [(t, k[3]) for k, t in times.items() if k[:3] == (op, size, v) and k[3].startswith(prefix)]
    return (min(found)[1], min(found)[0]) if found else None


def targets(times: dict, sizes: dict, extra: dict) -> list[str]:
    rows = []

    def ratio(name: str, got: float | None, goal: float, how: str, higher: bool = True) -> None:
        if got is None:
            rows.append(f"| {name} | {how} | not measured | — |")
            return
        met = got >= goal if higher else got <= goal
        rows.append(f"| {name} | {how} | {got:.2f} | {'met' if met else '**not met**'} |")

    def t(op: str, size: str, v: int, impl: str) -> float | None:
        return times.get((op, size, v, impl))

    dec = best(times, "decode", "1k", 12, "kcodec")
    kio, kp = t("decode", "1k", 12, "kio"), t("decode", "1k", 12, "kafka-python")
    name = f"object decode v12 1k ({dec[0]})" if dec else "object decode v12 1k"
    ratio(name + " vs kio", kio / dec[1] if dec and kio else None, 3, "≥ 3× faster")
    ratio(name + " vs kafka-python", kp / dec[1] if dec and kp else None, 15, "≥ 15× faster")
    for size in ("1k", "10k", "100k"):
        col = best(times, "columnar", size, 12, "columnar-cython")
        ratio(f"columnar decode v12 {size}, GB/s", sizes[(size, 12)] / col[1] / 1e9 if col else None, 1,
              "≥ 1 GB/s")
    enc = best(times, "encode", "1k", 12, "kcodec")
    kpe = t("encode", "1k", 12, "kafka-python")
    ratio(f"encode v12 1k ({enc[0] if enc else '-'}) vs kafka-python", kpe / enc[1] if enc and kpe else None, 10,
          "≥ 10× faster")
    pure = t("decode", "1k", 12, "kcodec-python")
    ratio("pure reference decode v12 1k vs kafka-python", kp / pure if kp and pure else None, 1, "≥ 1× (no slower)")
    for op, prefix in (("decode", "kcodec"), ("columnar", "columnar-cython"), ("names", "columnar-cython"),
                       ("encode", "kcodec")):
        one, ten = best(times, op, "1k", 12, prefix), best(times, op, "10k", 12, prefix)
        if one and ten and one[0] == ten[0]:
            ratio(f"{op} 10k / 1k time ({one[0]})", ten[1] / one[1], 11, "≤ 11×", higher=False)
    for scan in ("columnar", "names"):
        m = extra.get(f"peak_memory_{scan}_100k")
        ratio(f"peak memory, {scan} decode of 100k ({m['engine'] if m else '-'}), × payload",
              m["ratio"] if m else None, 3, "≤ 3×", higher=False)
    return ["| target | goal | measured | |", "|---|---|---:|---|"] + rows


def chart(times: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [op for op in OPERATIONS if any(k[:3] == (op, "1k", 12) for k in times)]
    impls = sorted({k[3] for k in times if k[1:3] == ("1k", 12)})
    colors = {impl: plt.get_cmap("tab10")(j) for j, impl in enumerate(impls)}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / max(len(impls), 1)
    labelled = set()
    for i, op in enumerate(ops):  # each operation's bars side by side, centred on its tick
        here = [impl for impl in impls if (op, "1k", 12, impl) in times]
        for j, impl in enumerate(here):
            x = i + (j - (len(here) - 1) / 2) * width
            ax.bar(x, times[(op, "1k", 12, impl)] * 1e3, width, color=colors[impl],
                   label=None if impl in labelled else impl)
            labelled.add(impl)
    ax.set_yscale("log")
    ax.set_ylabel("ms per call (min), log scale")
    ax.set_xticks(range(len(ops)), ops)
    ax.set_title("Metadata v12, 1,000 topics × 10 partitions (475 KB), one process")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    times, sizes, info = load(folder)
    m = info["machine"]
    cpu = m.get("cpu", {}).get("brand_raw", platform.processor())
    lines = [f"Measured by `make bench-report` ({m.get('python_implementation', '')} "
             f"{m.get('python_version', '')}, {cpu}); times are the minimum over each case's rounds.", "",
             *table(times, sizes), "", "Targets, ratios from the same run:", "",
             *targets(times, sizes, info["extra"])]
    text = "\n".join(lines) + "\n"
    (folder / "results.md").write_text(text)
    chart(times, folder / "chart.png")
    print(text)
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
