"""The report's figures, gathered by the workers as they write the tables (no Spark import here).

Each task of `kcodec analyze` adds up what its rows say (``Aggregates``: counters keyed by API, version,
client, topic, codec...), the driver merges the tasks' partial sums (``merge``) and finishes them into
the report's figures (``finish``, the shape ``kcodec.spark.report`` writes). So the report costs no
Spark job after the one pass over the captures, and the driver's memory depends on how many APIs,
clients and topics there are, not on the capture's size. Two figures are approximations: the 99th
percentile of a latency comes from a histogram of 2 % wide buckets, and the bytes-over-time plot sums
bytes per millisecond, coarser (a power of two of milliseconds) where a task saw more than
``MAX_TIME_KEYS`` distinct ones.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from typing import Any, Optional

PAIRINGS = ("answered", "overtaken", "no_response", "acks0_answered", "unanswered", "orphan")
DIRECTIONS = ("produced", "fetched")
MAX_TIME_KEYS = 100_000
MAX_BUCKETS = 60
_LOG = math.log(1.02)
NS_PER_MS = 1_000_000
_NO_LATENCY = -1  # an exchange without a latency (a bucket is None or >= 0)
_DIRECTION_KEYS = {d: (f"b_{d}_batches", f"b_{d}_records", f"b_{d}_bytes") for d in DIRECTIONS}


def _key(*parts: Any) -> tuple[Any, ...]:
    return parts


def _json(groups: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: {json.dumps(list(k)): v for k, v in g.items()} for name, g in groups.items()}


def _tuples(groups: dict[str, Any]) -> dict[str, Counter[Any]]:
    return {name: Counter({tuple(json.loads(k)): v for k, v in g.items()}) for name, g in groups.items()}


class Aggregates:
    """One task's partial sums; ``add(table, row)`` for every row it writes."""

    def __init__(self) -> None:
        self.c: Counter[str] = Counter()  # plain totals
        self.groups: dict[str, Counter[Any]] = defaultdict(Counter)  # name -> key (a tuple) -> value
        self.t0: Optional[int] = None
        self.t1: Optional[int] = None
        self.width = 1  # ms per over_time key
        self.conns: set[str] = set()
        self.clients: set[str] = set()
        # the batches' figures, summed per (direction, topic, topic id, client, codec, size classes) and spread
        # into their groups once, by ``partial``: one dict update a batch instead of sixteen
        self.batch_sums: dict[tuple[Any, ...], list[int]] = {}
        # the exchanges' figures likewise, per (pairing, API, version, which sides, latency bucket): the
        # over-time bytes and error codes stay per exchange (their keys are the exchange's own)
        self.exchange_sums: dict[tuple[Any, ...], list[int]] = {}
        self.frame_sums: dict[int, list[int]] = {}  # direction -> [frames, bytes]

    def _g(self, name: str, key: tuple[Any, ...], value: float = 1) -> None:
        self.groups[name][key] += value  # type: ignore[assignment]

    def add(self, table: str, row: dict[str, Any]) -> None:
        getattr(self, table)(row)

    # The methods below run for every row a task writes: they add to ``groups`` directly, not through ``_g``
    # (a call per figure was a third of their time)

    def frames(self, r: dict[str, Any]) -> None:
        d = r["direction"]
        sums = self.frame_sums.get(d)
        if sums is None:
            sums = self.frame_sums[d] = [0, 0]
        sums[0] += 1
        sums[1] += r["size"] or 0
        if d >= 0 and r.get("error") is not None:
            self.c["header_errors"] += 1

    def topic_ids(self, r: dict[str, Any]) -> None:
        self._g("topic_ids", _key(r["topic_id"], r["topic_name"]), 1)

    def exchanges(self, r: dict[str, Any]) -> None:
        c, G = self.c, self.groups
        req, resp = r.get("request_bytes"), r.get("response_bytes")
        api, key = r.get("api_name"), r.get("api_key")
        self.conns.add(r["conn"])
        client = r.get("client_id")
        if client is not None:
            self.clients.add(client)
        decode_error = r.get("decode_error")
        if decode_error is not None:
            c["decode_errors"] += 1
            G["decode_errors"][(decode_error[:120],)] += 1
            if req is not None:
                G["api_decode_errors"][(api, key)] += 1
        if r.get("request_trailing_bytes") is not None or r.get("response_trailing_bytes") is not None:
            c["trailing_bytes"] += 1
        codes = r.get("error_codes")
        if codes:
            errors = G["errors"]
            for code in codes:
                errors[(code, api)] += 1
        ts = r.get("request_ts_ns")
        if ts is not None:
            if self.t0 is None or ts < self.t0:
                self.t0 = ts
            if self.t1 is None or ts > self.t1:
                self.t1 = ts
            over_time = G["over_time"]
            over_time[(api, ts // NS_PER_MS // self.width * self.width)] += (req or 0) + (resp or 0)
            if len(over_time) > MAX_TIME_KEYS:
                self._coarsen(self.width * 2)
        latency = r.get("latency_ns")
        bucket = _NO_LATENCY if latency is None else int(math.log(latency) / _LOG) if latency > 0 else None
        fold = (r.get("pairing"), api, key, r.get("api_version"), req is None, resp is None, bucket)
        sums = self.exchange_sums.get(fold)
        if sums is None:
            self.exchange_sums[fold] = [1, req or 0, resp or 0, r.get("error_count") or 0, latency or 0]
        else:
            sums[0] += 1
            sums[1] += req or 0
            sums[2] += resp or 0
            sums[3] += r.get("error_count") or 0
            sums[4] += latency or 0
        if key == 3 and req is not None and r.get("list_topics_v1_bytes") is not None:
            m = (client or "(none)",)
            G["md_responses"][m] += 1
            for col in ("topics", "response_bytes", "list_topics_v0_bytes", "list_topics_v1_bytes", "dtp_pages",
                        "dtp_bytes"):
                G[f"md_{col}"][m] += r.get(col) or 0
            G["md_all_topics_requests"][m] += int(bool(r.get("metadata_all_topics")))

    def _spread_exchanges(self) -> None:
        """``exchange_sums`` added to the groups and totals the report reads (each group's keys in the order
        of their first exchange, as if added exchange by exchange: every group's key is a part of the
        fold's)."""
        c, G = self.c, self.groups
        for (pairing_, api, key, version, no_request, no_response, bucket), (n, req, resp, errors, latency) in \
                self.exchange_sums.items():
            c[f"pairing_{pairing_}"] += n
            G["versions"][(api, version)] += n
            if no_request:
                continue
            c["exchanges"] += n
            c["request_bytes"] += req
            c["response_bytes"] += resp
            k = (api, key)
            G["api_requests"][k] += n
            G["api_request_bytes"][k] += req
            if not no_response:
                G["api_response_bytes"][k] += resp
            G["api_errors"][k] += errors
            if bucket is not _NO_LATENCY:
                G["api_latency_n"][k] += n
                G["api_latency_sum"][k] += latency
                G["api_latency_hist"][(api, key, bucket)] += n
        self.exchange_sums = {}

    def _coarsen(self, width: int) -> None:
        old = self.groups.get("over_time", Counter())
        new: Counter[Any] = Counter()
        for (api, ms), v in old.items():
            new[(api, ms // width * width)] += v
        self.groups["over_time"], self.width = new, width

    def batches(self, r: dict[str, Any]) -> None:
        c = self.c
        count, error, control = r.get("record_count"), r.get("error"), r.get("control")
        if count is not None:
            c["b_batches"] += 1
        if error is not None:
            c["b_batch_errors"] += 1
        if r.get("crc_valid") is False:
            c["b_crc_invalid"] += 1
        if r.get("partial"):
            c["b_partial_tails"] += 1
        if control:
            c["b_control_batches"] += 1
        if r.get("topic") is None and r.get("topic_id") is not None:
            c["b_unnamed"] += 1  # named by id: the driver names it from the Metadata responses
        if count is None or error is not None or control:
            return
        size = r.get("compressed_bytes") or 0
        key = (r["direction"], r.get("topic"), r.get("topic_id"), r.get("client_id") or "(none)", r.get("codec"),
               count.bit_length() - 1 if count > 0 else None, size.bit_length() - 1 if size > 0 else None)
        sums = self.batch_sums.get(key)
        if sums is None:
            self.batch_sums[key] = [1, count, size, r.get("uncompressed_bytes") or 0]
        else:
            sums[0] += 1
            sums[1] += count
            sums[2] += size
            sums[3] += r.get("uncompressed_bytes") or 0

    def _spread_batches(self) -> None:
        """``batch_sums`` added to the groups the report reads (each group's keys in the order of their
        first batch, as if added batch by batch)."""
        c, G = self.c, self.groups
        for (d, topic_name, topic_id, client_id, codec, count_class, size_class), (n, count, size, inflated) in \
                self.batch_sums.items():
            batches, records, nbytes = _DIRECTION_KEYS.get(d) or (f"b_{d}_batches", f"b_{d}_records", f"b_{d}_bytes")
            c[batches] += n
            c[records] += count
            c[nbytes] += size
            topic, client, codec_key = (topic_name, topic_id, d), (client_id, d), (d, codec)
            for name, key, value in (("b_topic_batches", topic, n), ("b_topic_records", topic, count),
                                     ("b_topic_bytes", topic, size), ("b_client_batches", client, n),
                                     ("b_client_records", client, count), ("b_client_bytes", client, size),
                                     ("b_codec_batches", codec_key, n), ("b_codec_records", codec_key, count),
                                     ("b_codec_compressed", codec_key, size),
                                     ("b_codec_uncompressed", codec_key, inflated)):
                G[name][key] += value
            if count_class is not None:
                G["b_size_records"][(d, count_class)] += n
            if size_class is not None:
                G["b_size_bytes"][(d, size_class)] += n
        self.batch_sums = {}

    def _spread_frames(self) -> None:
        G = self.groups
        for d, (n, size) in self.frame_sums.items():
            G["frames"][(d,)] += n
            G["frame_bytes"][(d,)] += size
        self.frame_sums = {}

    def partial(self) -> dict[str, Any]:
        self._spread_frames()
        self._spread_exchanges()
        self._spread_batches()
        return {"c": dict(self.c), "groups": _json(self.groups), "t0": self.t0,
                "t1": self.t1, "width": self.width, "conns": sorted(self.conns), "clients": sorted(self.clients)}


def merge(partials: list[dict[str, Any]]) -> Aggregates:
    """The tasks' partial sums, added up."""
    out = Aggregates()
    width = max([p["width"] for p in partials] or [1])
    for p in partials:
        out.c.update(p["c"])
        for name, values in _tuples(p["groups"]).items():
            g = out.groups.setdefault(name, Counter())
            if name == "over_time" and p["width"] != width:
                for (api, ms), v in values.items():
                    g[(api, ms // width * width)] += v
            else:
                g.update(values)
        for bound, pick in (("t0", min), ("t1", max)):
            if p[bound] is not None:
                mine = getattr(out, bound)
                setattr(out, bound, p[bound] if mine is None else pick(mine, p[bound]))
        out.conns.update(p["conns"])
        out.clients.update(p["clients"])
    out.width = width
    return out


def _rows(a: Aggregates, names: dict[str, str], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows from groups keyed alike: ``names`` maps column -> group name, ``fields`` names the key's parts."""
    empty: Counter[Any] = Counter()
    keys: set[tuple[Any, ...]] = set()
    for g in names.values():
        keys.update(a.groups.get(g, empty))
    out = []
    for k in keys:
        row = dict(zip(fields, k))
        for col, g in names.items():
            row[col] = a.groups.get(g, empty).get(k, 0)
        out.append(row)
    return out


def _p99(a: Aggregates, api: Any, key: Any) -> Optional[float]:
    hist = [(k[2], v) for k, v in a.groups.get("api_latency_hist", {}).items() if k[:2] == (api, key)]
    n = sum(v for _, v in hist)
    if not n:
        return None
    seen = 0
    for b, v in sorted(hist, key=lambda x: (x[0] is not None, x[0] or 0)):
        seen += v
        if seen >= 0.99 * n:
            return 0.0 if b is None else math.exp((b + 0.5) * _LOG) / 1e6
    return None


def finish(a: Aggregates, files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The report's figures (``kcodec.spark.report.write``) from the merged sums and the files' summaries."""
    c = a.c
    frames = {k[0]: v for k, v in a.groups.get("frames", {}).items()}
    kinds = Counter("duplicate" if "duplicate_of" in s else "empty" if s.get("kind") == "empty" else "read"
                    for s in files.values())
    total: dict[str, Any] = {f"pairing_{p}": c.get(f"pairing_{p}", 0) for p in PAIRINGS}
    total.update(exchanges=c.get("exchanges", 0), decode_errors=c.get("decode_errors", 0),
                 request_bytes=c.get("request_bytes", 0), response_bytes=c.get("response_bytes", 0),
                 t0=a.t0, t1=a.t1, connections=len(a.conns), clients=len(a.clients),
                 requests=frames.get(0, 0), responses=frames.get(1, 0),
                 answered=c.get("pairing_answered", 0) + c.get("pairing_acks0_answered", 0),
                 capture_files=sum(kinds.values()), orphan_responses=c.get("pairing_orphan", 0),
                 duplicate_files=kinds.get("duplicate", 0), empty_files=kinds.get("empty", 0),
                 sasl_v0_tokens=frames.get(2, 0) + frames.get(3, 0), header_errors=c.get("header_errors", 0),
                 trailing_bytes=c.get("trailing_bytes", 0))
    span = max(1, (a.t1 or 0) - (a.t0 or 0))
    bucket = max(NS_PER_MS * a.width, -(-span // MAX_BUCKETS))
    over: Counter[tuple[Any, int]] = Counter()
    for (api, ms), v in a.groups.get("over_time", {}).items():
        over[(api, (ms * NS_PER_MS - (a.t0 or 0)) // bucket)] += v
    over_time = [{"bucket": max(0, b), "api_name": api, "bytes": v} for (api, b), v in sorted(over.items(), key=lambda x: (x[0][1], x[0][0] or ""))]
    by_api = _rows(a, {"requests": "api_requests", "request_bytes": "api_request_bytes",
                       "response_bytes": "api_response_bytes", "errors": "api_errors",
                       "decode_errors": "api_decode_errors", "_n": "api_latency_n", "_sum": "api_latency_sum"},
                   ("api_name", "api_key"))
    for r in by_api:
        n, s = r.pop("_n"), r.pop("_sum")
        r["latency_ms_avg"] = s / n / 1e6 if n else None
        r["latency_ms_p99"] = _p99(a, r["api_name"], r["api_key"])
    by_api.sort(key=lambda r: (-r["request_bytes"], r["api_name"] or "", r["api_key"] or 0))
    versions = sorted(_rows(a, {"count": "versions"}, ("api_name", "api_version")),
                      key=lambda r: (r["api_name"] is not None, r["api_name"] or "", r["api_version"] or -1))
    md_cols = ("responses", "all_topics_requests", "topics", "response_bytes", "list_topics_v0_bytes",
               "list_topics_v1_bytes", "dtp_pages", "dtp_bytes")
    metadata = _rows(a, {col: f"md_{col}" for col in md_cols}, ("client_id",))
    for r in metadata:
        r["metadata_bytes"] = r.pop("response_bytes")
    metadata.sort(key=lambda r: (-r["metadata_bytes"], r["client_id"] or ""))
    # Ties in a deterministic order: the tasks' partial sums merge in any order.
    errors = sorted(_rows(a, {"count": "errors"}, ("code", "api_name")),
                    key=lambda r: (-r["count"], r["code"], r["api_name"] or ""))
    decode_errors = sorted(_rows(a, {"count": "decode_errors"}, ("decode_error",)),
                           key=lambda r: (-r["count"], r["decode_error"] or ""))[:20]
    return {"total": total, "bucket_ns": bucket, "over_time": over_time, "by_api": by_api, "versions": versions,
            "metadata": metadata, "errors": errors, "decode_errors": decode_errors, "batches": _batches(a)}


def topic_names(a: Aggregates) -> dict[str, str]:
    return {k[0]: k[1] for k in a.groups.get("topic_ids", {})}


def _batches(a: Aggregates) -> dict[str, Any]:
    c = a.c
    total = {k: c.get(f"b_{k}", 0) for k in ("batches", "batch_errors", "crc_invalid", "partial_tails", "control_batches")}
    for d in DIRECTIONS:
        for w in ("batches", "records", "bytes"):
            total[f"{d}_{w}"] = c.get(f"b_{d}_{w}", 0)
    names = topic_names(a)

    def per(name: str, label: str, rename: Any) -> list[dict[str, Any]]:
        rows: dict[Any, dict[str, Any]] = {}
        for w in ("batches", "records", "bytes"):
            for k, v in a.groups.get(f"{name}_{w}", {}).items():
                *who, d = k
                who_ = rename(who)
                row = rows.setdefault(who_, {label: who_, **{f"{x}_{y}": 0 for x in DIRECTIONS
                                                             for y in ("batches", "records", "bytes")}})
                row[f"{d}_{w}"] += v
        return sorted(rows.values(), key=lambda r: (-r["produced_bytes"], -r["fetched_bytes"], r[label]))

    by_topic = per("b_topic", "topic", lambda w: w[0] or names.get(w[1] or "") or w[1] or "(unknown)")
    by_client = per("b_client", "client_id", lambda w: w[0])
    by_codec = _rows(a, {"batches": "b_codec_batches", "records": "b_codec_records",
                         "compressed_bytes": "b_codec_compressed", "uncompressed_bytes": "b_codec_uncompressed"},
                     ("direction", "codec"))
    by_codec.sort(key=lambda r: (r["direction"], -r["compressed_bytes"], r["codec"] or ""))
    for r in by_codec:
        r["ratio"] = r["uncompressed_bytes"] / r["compressed_bytes"] if r["compressed_bytes"] else None
    sizes = {what: sorted(_rows(a, {"count": f"b_size_{what}"}, ("direction", "bucket")),
                          key=lambda r: (r["direction"], r["bucket"])) for what in ("records", "bytes")}
    return {"total": total, "by_topic": by_topic, "by_client": by_client, "by_codec": by_codec, "sizes": sizes}
