"""The report of `kcodec analyze` from its figures (``kcodec.spark.aggregates``): Markdown with SVG charts
(``kcodec.spark.charts``), and a console summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from . import batch_report, charts
from .aggregates import PAIRINGS


def error_name(code: int) -> str:
    from kcodec.errors import ErrorCode

    try:
        return ErrorCode(code).name  # type: ignore[call-arg]  # lookup by value, not construction
    except ValueError:
        return f"UNKNOWN({code})"


def figures(agg: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The report's figures: (title, SVG text) by file name, in the report's order (``kcodec.spark.charts``)."""
    out: dict[str, tuple[str, str]] = {}
    series: dict[str, dict[int, int]] = {}
    for r in agg["over_time"]:
        series.setdefault(r["api_name"] or "?", {})[int(r["bucket"])] = int(r["bytes"] or 0)
    if series:
        title = "Bytes by API over time (requests + responses)"
        buckets = list(range(max(b for s in series.values() for b in s) + 1))  # empty buckets are zeros
        secs = [b * agg["bucket_ns"] / 1e9 for b in buckets]
        top = sorted(series.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:12]
        out["bytes_by_api.svg"] = (title, charts.lines(
            secs, [(name, [s.get(b, 0) for b in buckets]) for name, s in top], "seconds since the first request",
            f"bytes per {agg['bucket_ns'] / 1e6:g} ms", title))
    if agg["metadata"]:
        title = "Metadata responses against ListTopics and DescribeTopicPartitions, per client"
        rows = agg["metadata"][:15]
        out["metadata_vs_list_topics.svg"] = (title, charts.hbars(
            [str(r["client_id"]) for r in rows],
            [("Metadata (as captured)", [r["metadata_bytes"] for r in rows]),
             ("DescribeTopicPartitions pages", [r["dtp_bytes"] for r in rows]),
             ("ListTopics v1", [r["list_topics_v1_bytes"] for r in rows])], "response bytes", title))
    if agg["versions"]:
        title = "API version usage"
        rows = agg["versions"]
        out["versions.svg"] = (title, charts.hbars([f"{r['api_name']} v{r['api_version']}" for r in rows],
                                                   [("requests", [r["count"] for r in rows])], "requests", title))
    if agg.get("batches"):
        out.update(batch_report.figures(agg["batches"]))
    title = "Error codes in responses"
    counts: dict[str, int] = {}
    for r in agg["errors"]:
        counts[error_name(r["code"])] = counts.get(error_name(r["code"]), 0) + r["count"]
    decode_errors = sum(r["count"] for r in agg["decode_errors"])
    if decode_errors:
        counts["(frames that did not decode)"] = decode_errors
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    out["errors.svg"] = (title, charts.hbars([n for n, _ in items], [("occurrences", [c for _, c in items])],
                                             "occurrences", title)
                         if items else charts.message("no error codes in any response", title))
    return out


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    if not rows:
        return "(none)\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            cells.append(f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def savings(r: dict[str, Any]) -> Optional[float]:
    return 1 - r["list_topics_v1_bytes"] / r["metadata_bytes"] if r.get("metadata_bytes") else None


def write(agg: dict[str, Any], out: Path, captures: list[str], backend: str) -> Path:
    """report.md and its SVG figures in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    plots: dict[str, str] = {}
    for name, (title, svg) in figures(agg).items():
        (out / name).write_text(svg, encoding="utf-8")
        plots[name] = title
    t = agg["total"]
    md = ["# Kafka traffic report\n\n",
          f"Captures: {', '.join(captures)}  \nDecoded with kcodec ({backend} backend) on Spark.\n",
          "\n## Totals\n\n",
          _table([{"what": k, "value": t[k]} for k in (
              "capture_files", "duplicate_files", "empty_files", "connections", "clients", "requests", "responses", "exchanges",
              "answered", "orphan_responses", "sasl_v0_tokens", "header_errors", "decode_errors", "trailing_bytes",
              "request_bytes",
              "response_bytes")], ["what", "value"]),
          "\n## Pairing\n\nPer connection, in wire order, each response answers the earliest waiting request "
          "with its correlation id (see docs/analyze.md).\n\n",
          _table([{"pairing": p, "count": t[f"pairing_{p}"]} for p in PAIRINGS], ["pairing", "count"]),
          *([f"\n**The broker answered {t['pairing_acks0_answered']} Produce request(s) sent with acks=0**, which "
             "Kafka's brokers never answer.\n"] if t["pairing_acks0_answered"] else []),
          "\n## By API\n\n",
          _table(agg["by_api"], ["api_name", "api_key", "requests", "request_bytes", "response_bytes",
                                 "latency_ms_avg", "latency_ms_p99", "errors", "decode_errors"])]
    if agg.get("batches"):
        md += batch_report.markdown(agg["batches"], _table, plots)
    for name, title in plots.items():
        if name in batch_report.PLOTS:
            continue  # in the record batches' section
        md.append(f"\n## {title}\n\n![{title}]({name})\n")
        if name == "metadata_vs_list_topics.svg":
            rows = [dict(r, saved=f"{100 * s:.1f} %" if (s := savings(r)) is not None else "")
                    for r in agg["metadata"]]
            md.append("\nWhat the same topics would have cost as a ListTopics response (names only, KIP-142) and as "
                      "DescribeTopicPartitions pages (2,000 partitions a page); `saved` is Metadata against "
                      "ListTopics v1.\n\n")
            md.append(_table(rows, ["client_id", "responses", "all_topics_requests", "topics", "metadata_bytes",
                                    "list_topics_v0_bytes", "list_topics_v1_bytes", "dtp_pages", "dtp_bytes",
                                    "saved"]))
        if name == "versions.svg":
            md.append("\n" + _table(agg["versions"], ["api_name", "api_version", "count"]))
        if name == "errors.svg":
            md.append("\n" + _table([dict(r, name=error_name(r["code"])) for r in agg["errors"]],
                                    ["code", "name", "api_name", "count"]))
            if agg["decode_errors"]:
                md.append("\nFrames that did not decode:\n\n" + _table(agg["decode_errors"], ["decode_error", "count"]))
    path = out / "report.md"
    path.write_text("".join(md), encoding="utf-8")
    return path


def console(agg: dict[str, Any], print_: Any = print) -> None:
    t = agg["total"]
    print_(f"{t['capture_files']} capture files, {t['connections']} connections, {t['clients']} clients: "
           f"{t['requests']} requests, {t['responses']} responses ({t['orphan_responses']} without a request), "
           f"{t['decode_errors']} exchanges that did not decode")
    if t.get("empty_files"):
        print_(f"  {t['empty_files']} empty capture file(s) (0 bytes, no capture in them): see the files table")
    if t.get("trailing_bytes"):
        print_(f"  {t['trailing_bytes']} exchanges decoded with trailing bytes after a body "
               "(request_trailing_bytes, response_trailing_bytes)")
    print_("  pairing: " + ", ".join(f"{t[f'pairing_{p}']} {p}" for p in PAIRINGS)
           + (f"; the broker answered {t['pairing_acks0_answered']} acks=0 Produce requests"
              if t["pairing_acks0_answered"] else ""))
    batch_report.console(agg.get("batches"), print_)
    for r in agg["by_api"][:10]:
        print_(f"  {str(r['api_name']):<28} {r['requests']:>9} requests {r['request_bytes'] or 0:>12} B out "
               f"{r['response_bytes'] or 0:>12} B back")
    for r in agg["metadata"][:10]:
        s = savings(r)
        print_(f"  Metadata for {r['client_id']}: {r['metadata_bytes']} B; as ListTopics v1 {r['list_topics_v1_bytes']} B"
               + (f" ({100 * s:.1f} % less)" if s is not None else "")
               + f", as DescribeTopicPartitions {r['dtp_bytes']} B in {r['dtp_pages']} pages")
