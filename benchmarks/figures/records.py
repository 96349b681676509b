"""The record batch sections (benchmarks/test_records.py's suite ``records``): the targets of issue 31 point
3 (README.md, docs/records.md) and every case beside aiokafka, kafka-python and kio (docs/records.md)."""

from __future__ import annotations

from typing import Callable, Optional

from figures import store
from figures.sections import TARGETS_HEAD, fmt_instructions, provenance, ratio, section, target_row

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PAYLOADS = ("1kbatch", "1MBfetch")
LABEL = {"1kbatch": "1,000-record batch", "1MBfetch": "1 MB Fetch"}
PEERS = ("aiokafka", "kafka-python", "kio")


def _kcodec(run: dict, cid: str) -> str:
    c = store.case(run, cid)
    names = [n for n in (c["impls"] if c else {}) if n.startswith("kcodec")]
    return names[0] if names else "kcodec-cython"


def _vs(run: dict, cid: str, peer_cid: Optional[str] = None, key: str = "median") -> Optional[float]:
    """aiokafka's figure over kcodec's (a time ratio, or an instruction ratio with key="instructions")."""
    theirs = store.figure(run, peer_cid or cid, "aiokafka", key)
    return ratio(theirs, store.figure(run, cid, _kcodec(run, cid), key))


def _gbps(run: dict, cid: str) -> Optional[float]:
    c = store.case(run, cid)
    t = store.figure(run, cid, _kcodec(run, cid))
    return c["bytes"] / t / 1e9 if c and t else None


def targets_rows(runs: list[dict]) -> list[str]:
    rows = list(TARGETS_HEAD)

    def row(name: str, goal: str, value: Callable[[dict], Optional[float]],
            instr: Callable[[dict], Optional[float]], ok: Callable[[float], bool]) -> None:
        rows.append(target_row(name, goal, [value(r) for r in runs], (instr(r) for r in runs), ok))

    for payload in PAYLOADS:
        for codec in CODECS:
            cid = f"decode-{payload}-{codec}"
            row(f"read, {LABEL[payload]}, {codec}, vs aiokafka", "≥ 1.5×", lambda r, c=cid: _vs(r, c),
                lambda r, c=cid: _vs(r, c, key="instructions"), lambda x: x >= 1.5)
    for op, how in (("encode", ""), ("encode_list", " from a list (extend)")):
        if not any(store.case(r, f"{op}-1kbatch-none") for r in runs):
            continue  # (runs from before the case was added: no row of dashes)
        for codec in CODECS:
            cid, goal = f"{op}-1kbatch-{codec}", 2.0 if codec == "none" else 1.0
            row(f"build{how}, {LABEL['1kbatch']}, {codec}, vs aiokafka", f"≥ {goal:g}×", lambda r, c=cid: _vs(r, c),
                lambda r, c=cid: _vs(r, c, key="instructions"), lambda x, g=goal: x >= g)
    for payload in PAYLOADS:
        cid = f"columnar-{payload}-none"
        row(f"columnar records, {LABEL[payload]}, none, vs aiokafka's read", "≥ 3×",
            lambda r, c=cid, p=payload: _vs(r, c, f"decode-{p}-none"),
            lambda r, c=cid, p=payload: _vs(r, c, f"decode-{p}-none", "instructions"), lambda x: x >= 3)
        row(f"columnar records, {LABEL[payload]}, none, GB/s", "≥ 2.5 GB/s", lambda r, c=cid: _gbps(r, c),
            lambda r: None, lambda x: x >= 2.5)
    return rows


def cases_table(run: dict) -> list[str]:
    out = ["| operation | payload | codec | bytes | kcodec | aiokafka | kafka-python | kio | vs aiokafka |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    ops = ("decode", "columnar", "encode", "encode_list")
    shown = [c for c in run["cases"] if c.get("params", {}).get("operation") in ops]
    for c in sorted(shown, key=lambda c: (ops.index(c["params"]["operation"]),
                                          PAYLOADS.index(c["params"]["payload"].replace(" ", "")),
                                          CODECS.index(c["params"]["codec"]))):
        p = c["params"]

        def cell(name: str) -> str:
            f = c["impls"].get(name)
            if not f:
                return "–"
            n = f.get("instructions")
            return f"{f['median'] * 1e6:,.0f} µs" + (f" · {fmt_instructions(n)}" if n else "")
        vs = _vs(run, c["id"])
        out.append(f"| {p['operation']} | {LABEL[p['payload'].replace(' ', '')]} | {p['codec']} | {c['bytes']:,} | "
                   f"{cell(_kcodec(run, c['id']))} | " + " | ".join(cell(n) for n in PEERS)
                   + f" | {f'{vs:.2f}×' if vs else '–'} |")
    crc = store.case(run, "crc32c-1mb")
    if crc:
        t = store.figure(run, "crc32c-1mb", _kcodec(run, "crc32c-1mb"))
        out += ["", f"CRC32C of 1 MiB: {t * 1e6:,.1f} µs, {crc['bytes'] / t / 1e9:.1f} GB/s (median of "
                    f"{crc.get('rounds', len(crc['impls'][_kcodec(run, 'crc32c-1mb')]['samples']))})."]
    return out


@section("records-targets", suites=("records",))
def records_targets(runs: dict[str, list[dict]]) -> str:
    kept = runs["records"]
    if not kept:
        return provenance(kept, "the record batch benchmark")
    return "\n".join([provenance(kept) + " Each figure is the median over interleaved rounds of the call plus "
                      "dropping its result; ratios compare implementations of the same rounds, instruction "
                      "ratios the same calls under callgrind.", "", *targets_rows(kept)])


@section("records-cases", suites=("records",))
def records_cases(runs: dict[str, list[dict]]) -> str:
    kept = runs["records"]
    if not kept:
        return provenance(kept, "the record batch benchmark")
    last = kept[-1]
    peers = ", ".join(f"{k} {last['peers'][k]}" for k in ("aiokafka", "kafka-python", "kio") if k in last["peers"])
    return "\n".join([f"The last run ({last['started']}; {peers}): the median of each implementation's calls, "
                      "after it (·) the instructions of one call under callgrind.", "", *cases_table(last)])
