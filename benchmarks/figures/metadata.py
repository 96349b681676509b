"""The Metadata sections (benchmarks/test_metadata.py's suite ``metadata``): the targets table of README.md
and docs/benchmarks.md, and every case with its instruction counts (docs/benchmarks.md)."""

from __future__ import annotations

from typing import Callable, Optional

from figures import store
from figures.sections import TARGETS_HEAD, fmt_instructions, fmt_time, provenance, ratio, section, target_row

MESSAGES = {"metadata": "Metadata response", "dtp": "DescribeTopicPartitions response",
            "request": "Metadata request naming every topic"}
OPERATIONS = ["decode", "encode", "encoded_size", "columnar", "names"]
SIZES = {"1k": 1, "10k": 10, "100k": 100}


def kcodec_impl(run: dict, case_id: str) -> str:
    """The fastest kcodec backend measured in the case: the compiled one where it was built."""
    c = store.case(run, case_id)
    have = c["impls"] if c else {}
    return "kcodec-cython" if "kcodec-cython" in have else "kcodec-python"


Getter = Callable[[dict], Optional[float]]


def _time(run: dict, case_id: str, impl: str) -> Optional[float]:
    return store.figure(run, case_id, impl, "median")


def _instr(run: dict, case_id: str, impl: str) -> Optional[float]:
    return store.figure(run, case_id, impl, "instructions")


def _bytes(run: dict, case_id: str) -> Optional[int]:
    c = store.case(run, case_id)
    return c.get("bytes") if c else None


def targets_rows(runs: list[dict]) -> list[str]:
    rows = list(TARGETS_HEAD)

    def row(name: str, goal: str, value: Getter, instr: Getter, ok: Callable[[float], bool]) -> None:
        rows.append(target_row(name, goal, [value(r) for r in runs], (instr(r) for r in runs), ok))

    def vs(op: str, case: str, peer: str, goal: float, label: str, mine: Optional[str] = None) -> None:
        cid = f"{op}[{case}]"

        def who(r: dict) -> str:
            return mine or kcodec_impl(r, cid)
        row(f"{op} + free, {label}, kcodec{' (pure reference)' if mine else ''} vs {peer}", f"≥ {goal:g}× faster",
            lambda r: ratio(_time(r, cid, peer), _time(r, cid, who(r))),
            lambda r: ratio(_instr(r, cid, peer), _instr(r, cid, who(r))), lambda v: v >= goal)

    for case, label in (("metadata 1k v1", "Metadata v1 1k"), ("metadata 1k v12", "Metadata v12 1k"),
                        ("metadata 10k v12", "Metadata v12 10k"), ("dtp 1k v0", "DescribeTopicPartitions v0 1k"),
                        ("dtp 10k v0", "DescribeTopicPartitions v0 10k")):
        vs("decode", case, "kio", 3, label)
    vs("decode", "request 1k v12", "kio", 1.5, "Metadata v12 request of 1,000 names")
    vs("encode", "metadata 1k v12", "kafka-python", 15, "Metadata v12 1k")
    vs("decode", "metadata 1k v12", "kafka-python", 1, "Metadata v12 1k", mine="kcodec-python")
    for op, message, v, sizes, goal in (("columnar", "metadata", 12, ("1k", "10k", "100k"), 2.5),
                                        ("columnar", "dtp", 0, ("1k", "10k"), 2.5),
                                        ("names", "metadata", 12, ("1k", "10k", "100k"), 4)):
        for size in sizes:
            cid = f"{op}[{message} {size} v{v}]"
            row(f"{op} {MESSAGES[message]} v{v} {size}, GB/s (instructions a byte)", f"≥ {goal:g} GB/s",
                lambda r, cid=cid: ratio(_bytes(r, cid), (_time(r, cid, "columnar-cython") or 0) * 1e9),
                lambda r, cid=cid: ratio(_instr(r, cid, "columnar-cython"), _bytes(r, cid)),
                lambda x, goal=goal: x >= goal)
    for op in ("decode", "columnar", "names", "encode"):
        one, ten = f"{op}[metadata 1k v12]", f"{op}[metadata 10k v12]"

        def impl(r: dict, cid: str, op: str = op) -> str:
            return "columnar-cython" if op in ("columnar", "names") else kcodec_impl(r, cid)
        row(f"{op} Metadata v12, 10k ÷ 1k time", "≤ 10.5×",
            lambda r, one=one, ten=ten, impl=impl: ratio(_time(r, ten, impl(r, ten)), _time(r, one, impl(r, one))),
            lambda r, one=one, ten=ten, impl=impl: ratio(_instr(r, ten, impl(r, ten)),
                                                            _instr(r, one, impl(r, one))),
            lambda x: x <= 10.5)
    for scan in ("columnar", "names"):
        cid = f"peak_memory[{scan} 100k]"
        row(f"peak memory, {scan} decode of 100k, × payload", "≤ 3×",
            lambda r, cid=cid: store.figure(r, cid, "columnar-cython"), lambda r: None, lambda x: x <= 3)
    return rows


def cases_table(run: dict, operations: list[str]) -> list[str]:
    cases = [c for c in run["cases"] if c.get("params", {}).get("operation") in operations]
    impls = sorted({i for c in cases for i in c["impls"]}, key=lambda n: (not n.startswith(("kcodec", "columnar")), n))
    out = ["| operation | payload | " + " | ".join(impls) + " |", "|---|---|" + "---:|" * len(impls)]

    def order(c: dict) -> tuple:
        p = c["params"]
        return (operations.index(p["operation"]), list(MESSAGES).index(p["message"]), SIZES[p["size"]], p["version"])
    for c in sorted(cases, key=order):
        p = c["params"]
        cells = []
        for i in impls:
            f = c["impls"].get(i)
            if not f or "median" not in f:
                cells.append("")
                continue
            n = f.get("instructions")
            cells.append(fmt_time(f["median"]) + (f" · {fmt_instructions(n)}" if n else ""))
        out.append(f"| {p['operation']} | {MESSAGES[p['message']]}, {p['size']} topics v{p['version']} "
                   f"({c['bytes'] / 1e6:.2f} MB) | " + " | ".join(cells) + " |")
    return out


HOW = ("each time is the median over a case's interleaved rounds (every codec once per round, through its "
       "public API) of one call plus dropping its result; after it (·) the instructions the same call executes "
       "under callgrind (benchmarks/callgrind.py). A range is the spread over the kept runs; a target is met "
       "only when every run meets it.")


@section("metadata-targets", suites=("metadata",))
def metadata_targets(runs: dict[str, list[dict]]) -> str:
    kept = runs["metadata"]
    if not kept:
        return provenance(kept, "the Metadata benchmark")
    return "\n".join([provenance(kept), "", *targets_rows(kept)])


@section("metadata-cases", suites=("metadata",))
def metadata_cases(runs: dict[str, list[dict]]) -> str:
    kept = runs["metadata"]
    if not kept:
        return provenance(kept, "the Metadata benchmark")
    last = kept[-1]
    peers = ", ".join(f"{k} {v}" for k, v in sorted(last["peers"].items()))
    return "\n".join([f"The last run ({last['started']}; {peers}): {HOW}", "",
                      *cases_table(last, OPERATIONS)])
