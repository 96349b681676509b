"""The report's partial sums (kcodec/spark/aggregates.py) as if added exchange by exchange: the exchanges'
figures are folded per (pairing, API, version, sides, latency bucket) and spread into their groups when the
partial sums go out; each group must hold the same sums, its keys in the order of their first exchange."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

import pytest

from kcodec.spark.aggregates import Aggregates


def _rows(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    apis = [("Produce", 0), ("Fetch", 1), ("Metadata", 3), (None, None)]
    rows = []
    for i in range(n):
        api, key = rnd.choice(apis)
        req = None if rnd.random() < 0.1 else rnd.randrange(0, 5000)
        resp = None if rnd.random() < 0.2 else rnd.randrange(0, 5000)
        ts = None if rnd.random() < 0.05 else 1_700_000_000_000_000_000 + rnd.randrange(0, 10**10)
        row = {"conn": f"c/{rnd.randrange(5)}", "api_name": api, "api_key": key, "api_version": rnd.randrange(3),
               "pairing": rnd.choice(("answered", "orphan", "no_response")), "request_bytes": req,
               "response_bytes": resp, "request_ts_ns": ts, "client_id": rnd.choice((None, "a", "b")),
               "latency_ns": rnd.choice((None, 0, -5, 1, rnd.randrange(1, 10**9))),
               "error_codes": rnd.choice((None, [], [3], [0, 3, 3])), "error_count": rnd.choice((None, 0, 2))}
        if rnd.random() < 0.1:
            row["decode_error"] = f"response: bad {i % 3}"
        if rnd.random() < 0.05:
            row["response_trailing_bytes"] = 2
        if key == 3 and rnd.random() < 0.5:
            row.update(list_topics_v1_bytes=rnd.randrange(100), topics=rnd.randrange(9), metadata_all_topics=True)
        rows.append(row)
    return rows


def _expected(rows: list[dict[str, Any]]) -> dict[str, Counter[Any]]:
    """The groups the exchange rows make, counted one exchange at a time (keys in first-seen order)."""
    sent = [r for r in rows if r.get("request_bytes") is not None]
    timed = [r for r in sent if r.get("latency_ns") is not None]

    def count(pairs: Any) -> Counter[Any]:
        out: Counter[Any] = Counter()
        for k, v in pairs:
            out[k] += v
        return out

    def bucket(latency: int) -> Any:
        return int(math.log(latency) / math.log(1.02)) if latency > 0 else None

    return {
        "versions": count(((r["api_name"], r["api_version"]), 1) for r in rows),
        "api_requests": count(((r["api_name"], r["api_key"]), 1) for r in sent),
        "api_request_bytes": count(((r["api_name"], r["api_key"]), r["request_bytes"]) for r in sent),
        "api_response_bytes": count(((r["api_name"], r["api_key"]), r["response_bytes"]) for r in sent
                                    if r["response_bytes"] is not None),
        "api_errors": count(((r["api_name"], r["api_key"]), r["error_count"] or 0) for r in sent),
        "api_latency_n": count(((r["api_name"], r["api_key"]), 1) for r in timed),
        "api_latency_sum": count(((r["api_name"], r["api_key"]), r["latency_ns"]) for r in timed),
        "api_latency_hist": count(((r["api_name"], r["api_key"], bucket(r["latency_ns"])), 1) for r in timed),
        "api_decode_errors": count(((r["api_name"], r["api_key"]), 1) for r in sent if r.get("decode_error")),
        "errors": count(((code, r["api_name"]), 1) for r in rows for code in r["error_codes"] or ()),
    }


@pytest.mark.parametrize("n, seed", [(3000, 7)] + [(8, seed) for seed in range(40)])
def test_exchange_sums_as_if_added_row_by_row(n: int, seed: int) -> None:
    rows = _rows(n, seed)
    a = Aggregates()
    for r in rows:
        a.add("exchanges", r)
    partial = a.partial()
    for name, want in _expected(rows).items():
        got = partial["groups"].get(name, {})
        assert list(got) == [json.dumps(list(k)) for k in want], name  # same keys, first-seen order
        assert list(got.values()) == list(want.values()), name
    sent = [r for r in rows if r["request_bytes"] is not None]
    assert partial["c"].get("exchanges", 0) == len(sent)
    assert partial["c"].get("request_bytes", 0) == sum(r["request_bytes"] for r in sent)
    assert partial["c"].get("response_bytes", 0) == sum(r["response_bytes"] or 0 for r in sent)
    for p in ("answered", "orphan", "no_response"):
        assert partial["c"].get(f"pairing_{p}", 0) == sum(r["pairing"] == p for r in rows)
    stamps = [r["request_ts_ns"] for r in rows if r["request_ts_ns"] is not None]
    assert (partial["t0"], partial["t1"]) == ((min(stamps), max(stamps)) if stamps else (None, None))
    md = Counter((r["client_id"] or "(none)",) for r in sent if r.get("list_topics_v1_bytes") is not None)
    assert partial["groups"].get("md_responses", {}) == {json.dumps(list(k)): v for k, v in md.items()}
    assert a.partial()["c"] == {**partial["c"]}  # spread once: a second partial adds nothing again


def test_frame_sums_as_if_added_row_by_row() -> None:
    rnd = random.Random(3)
    rows: list[dict[str, Any]] = [
        {"direction": rnd.choice((1, 0, 2, -1)), "size": rnd.choice((None, rnd.randrange(9000))),
         "error": rnd.choice((None, None, "bad header"))} for _ in range(500)]
    a = Aggregates()
    for r in rows:
        a.add("frames", r)
    partial = a.partial()
    for name, value in (("frames", lambda r: 1), ("frame_bytes", lambda r: r["size"] or 0)):
        want: Counter[Any] = Counter()
        for r in rows:
            want[(r["direction"],)] += value(r)
        assert partial["groups"][name] == {json.dumps(list(k)): v for k, v in want.items()}
        assert list(partial["groups"][name]) == [json.dumps(list(k)) for k in want]
    assert partial["c"]["header_errors"] == sum(r["error"] is not None and r["direction"] >= 0 for r in rows)
