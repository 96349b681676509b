"""The native anchors section (benchmarks/native/run.py's suite ``native``, beside kcodec's paths from the
``metadata`` and ``records`` suites of the same `make bench-report`): docs/benchmarks.md and README.md."""

from __future__ import annotations

from typing import Optional

from figures import store
from figures.sections import fmt_instructions, fmt_time, provenance, ratio, section, span, verdict

# native case: (label, {kcodec path: (suite, case id, implementation)})
CASES = {
    "metadata_v12_1k": ("Metadata v12 response, 1k topics", {
        "objects": ("metadata", "decode[metadata 1k v12]", "kcodec-cython"),
        "columnar": ("metadata", "columnar[metadata 1k v12]", "columnar-cython"),
        "names": ("metadata", "names[metadata 1k v12]", "columnar-cython")}),
    "metadata_v12_10k": ("Metadata v12 response, 10k topics", {
        "objects": ("metadata", "decode[metadata 10k v12]", "kcodec-cython"),
        "columnar": ("metadata", "columnar[metadata 10k v12]", "columnar-cython"),
        "names": ("metadata", "names[metadata 10k v12]", "columnar-cython")}),
    "records_1k_none": ("1,000-record batch, uncompressed", {
        "objects": ("records", "decode-1kbatch-none", "kcodec-cython"),
        "columnar": ("records", "columnar-1kbatch-none", "kcodec-cython")}),
}
ANCHORS = ("rust kafka-protocol", "go kmsg")
PATHS = ("objects", "columnar", "names")


def _paired(runs: dict[str, list[dict]]) -> list[tuple[dict, dict[str, dict]]]:
    """Each native run with the metadata and records runs of the same `make bench-report` (same start)."""
    out = []
    for native in runs["native"]:
        same = {s: r for s in ("metadata", "records") for r in runs[s] if r["started"] == native["started"]}
        out.append((native, same))
    return out


def _cell(run: Optional[dict], cid: str, impl: str) -> str:
    if run is None:
        return "–"
    f = (store.case(run, cid) or {"impls": {}})["impls"].get(impl)
    if not f or "median" not in f:
        return "–"
    n = f.get("instructions")
    return fmt_time(f["median"]) + (f" · {fmt_instructions(n)}" if n else "")


def _goals(pairs: list[tuple[dict, dict[str, dict]]]) -> list[str]:
    rows = ["| target | goal | Rust ÷ kcodec columnar, time | instructions | |", "|---|---|---:|---:|---|"]
    for case, (label, paths) in CASES.items():
        suite, cid, impl = paths["columnar"]

        def vs(key: str, native: dict, same: dict) -> Optional[float]:
            other = same.get(suite)
            return ratio(store.figure(native, case, ANCHORS[0], key),
                         store.figure(other, cid, impl, key) if other else None)
        got = [vs("median", n, s) for n, s in pairs]
        rows.append(f"| kcodec columnar vs Rust kafka-protocol, {label} | at least as fast | {span(got)} | "
                    f"{span(vs('instructions', n, s) for n, s in pairs)} | {verdict(got, lambda x: x >= 1)} |")
    return rows


@section("native-targets", suites=("native", "metadata", "records"))
def native_targets(runs: dict[str, list[dict]]) -> str:
    pairs = _paired(runs)
    if not pairs:
        return provenance([], "the native anchors")
    return "\n".join([provenance(runs["native"]), "", *_goals(pairs)])


@section("native-anchors", suites=("native", "metadata", "records"))
def native_anchors(runs: dict[str, list[dict]]) -> str:
    pairs = _paired(runs)
    if not pairs:
        return provenance([], "the native anchors")
    native, same = pairs[-1]
    rows = ["| payload | kcodec objects | kcodec columnar | kcodec names | Rust kafka-protocol | Go kmsg |",
            "|---|---:|---:|---:|---:|---:|"]
    for case, (label, paths) in CASES.items():
        mine = [_cell(same.get(paths[p][0]), paths[p][1], paths[p][2]) if p in paths else "–" for p in PATHS]
        rows.append(f"| {label} | " + " | ".join(mine + [_cell(native, case, a) for a in ANCHORS]) + " |")
    versions = ", ".join(f"{k} {v}" for k, v in sorted(native["peers"].items())
                         if k.startswith(("kafka-protocol", "franz-go", "rustc", "go")))
    return "\n".join([
        provenance(runs["native"]) + f" The same payload files decoded by each ({versions}); each native "
        "program times its own calls (decode and drop the result; Go's collector runs when it runs), the "
        "median of the rounds, after it (·) one call's instructions under callgrind. The last run:", "", *rows,
        "", *_goals(pairs)])
