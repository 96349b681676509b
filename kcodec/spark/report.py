"""The report of `kcodec analyze` from its figures (``kcodec.spark.aggregates``): Markdown with PNG plots,
and a console summary."""

from __future__ import annotations

import os
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from . import batch_report
from .aggregates import PAIRINGS


def error_name(code: int) -> str:
    from kcodec.errors import ErrorCode

    try:
        return ErrorCode(code).name  # type: ignore[call-arg]  # lookup by value, not construction
    except ValueError:
        return f"UNKNOWN({code})"


def plotting() -> Any:
    """matplotlib's pyplot on the Agg backend (no display). `kcodec analyze` calls it once early, in a
    thread, while Spark's JVM starts and the driver waits, so that the report does not import it at the
    end, when nothing else is left to run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# Made by a forked child while the command makes the rest (``_forked_plots``): about half the drawing each
# (layout and rendering, 1 GB run: versions 0.08, records_by_topic 0.06, batch_sizes 0.09 CPU s against
# bytes_by_api 0.10, metadata 0.07, errors 0.04; each process builds only the figures it draws).
CHILD_PLOTS = frozenset({"versions.png", "records_by_topic.png", "batch_sizes.png"})


def _plots(agg: dict[str, Any], out: Path, child: Optional[bool] = None) -> dict[str, str]:
    """The PNGs, and their titles by name in the report's order; ``child``: True makes only ``CHILD_PLOTS``,
    False all but those (the titles of all still come out)."""
    plt = plotting()

    made: dict[str, str] = {}

    def want(name: str, title: str) -> bool:
        made[name] = title
        return child is None or child == (name in CHILD_PLOTS)

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.set_layout_engine(None)  # laid out: else savefig draws the whole figure once more before it renders
        fig.savefig(out / name, dpi=100)
        plt.close(fig)

    series: dict[str, dict[int, int]] = {}
    for r in agg["over_time"]:
        series.setdefault(r["api_name"] or "?", {})[int(r["bucket"])] = int(r["bytes"] or 0)
    if series and want("bytes_by_api.png", "Bytes by API over time (requests + responses)"):
        fig, ax = plt.subplots(figsize=(9, 4.5))
        buckets = list(range(max(b for s in series.values() for b in s) + 1))  # empty buckets are zeros
        secs = [b * agg["bucket_ns"] / 1e9 for b in buckets]
        for name, s in sorted(series.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:12]:
            ax.plot(secs, [s.get(b, 0) for b in buckets], marker=".", label=name)
        ax.set_xlabel("seconds since the first request")
        ax.set_ylabel(f"bytes per {agg['bucket_ns'] / 1e6:g} ms")
        ax.legend(fontsize=8)
        save(fig, "bytes_by_api.png")
    if agg["metadata"] and want("metadata_vs_list_topics.png",
                                "Metadata responses against ListTopics and DescribeTopicPartitions, per client"):
        rows = agg["metadata"][:15]
        fig, ax = plt.subplots(figsize=(9, 0.6 * len(rows) + 1.8))
        names = [r["client_id"] for r in rows]
        y = range(len(rows))
        h = 0.27
        ax.barh([i - h for i in y], [r["metadata_bytes"] for r in rows], h, label="Metadata (as captured)")
        ax.barh(list(y), [r["dtp_bytes"] for r in rows], h, label="DescribeTopicPartitions pages")
        ax.barh([i + h for i in y], [r["list_topics_v1_bytes"] for r in rows], h, label="ListTopics v1")
        ax.set_yticks(list(y), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("response bytes")
        ax.legend(fontsize=8)
        save(fig, "metadata_vs_list_topics.png")
    if agg["versions"] and want("versions.png", "API version usage"):
        rows = agg["versions"]
        fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.5))
        ax.barh(range(len(rows)), [r["count"] for r in rows])
        ax.set_yticks(range(len(rows)), [f"{r['api_name']} v{r['api_version']}" for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("requests")
        save(fig, "versions.png")
    if agg.get("batches"):
        batch_report.plots(agg["batches"], want, save)
    if want("errors.png", "Error codes in responses"):
        fig, ax = plt.subplots(figsize=(9, 3.5))
        counts: dict[str, int] = {}
        for r in agg["errors"]:
            counts[error_name(r["code"])] = counts.get(error_name(r["code"]), 0) + r["count"]
        decode_errors = sum(r["count"] for r in agg["decode_errors"])
        if decode_errors:
            counts["(frames that did not decode)"] = decode_errors
        if counts:
            items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
            ax.barh(range(len(items)), [c for _, c in items])
            ax.set_yticks(range(len(items)), [n for n, _ in items], fontsize=8)
            ax.invert_yaxis()
        else:
            ax.text(0.5, 0.5, "no error codes in any response", ha="center", va="center")
            ax.set_axis_off()
        ax.set_xlabel("occurrences")
        save(fig, "errors.png")
    return made


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


def _forked_plots(agg: dict[str, Any], out: Path, beside: Optional[Callable[[], None]] = None) -> dict[str, str]:
    """``_plots``, its figures split between this process and a forked child: the report is the command's
    last step, single-threaded, while the other core is left idle (the JVM's stop is over in ~0.1 s).
    ``beside``: the command's other last work (`kcodec analyze` names the batches' topics), done here first
    while the child draws. One core, or ``KCODEC_REPORT_FORK=0``: all here. A child that fails fails the
    report (its traceback on stderr)."""
    if not hasattr(os, "fork") or len(os.sched_getaffinity(0)) < 2 or os.environ.get("KCODEC_REPORT_FORK") == "0":
        if beside is not None:
            beside()
        return _plots(agg, out)
    pid = os.fork()
    if pid == 0:  # the child: draws and leaves at once (no atexit, no inherited buffers flushed)
        code = 1
        try:
            _plots(agg, out, child=True)
            code = 0
        except BaseException:  # noqa: BLE001 (reported through the exit status)
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        if beside is not None:
            beside()
        made = _plots(agg, out, child=False)
    finally:
        _, status = os.waitpid(pid, 0)
    if status:
        raise RuntimeError(f"kcodec analyze: the report's figures {sorted(CHILD_PLOTS)} were not drawn in {out} "
                           f"(the process drawing them ended with status {status:#x})")
    return made


def write(agg: dict[str, Any], out: Path, captures: list[str], backend: str,
          beside: Optional[Callable[[], None]] = None) -> Path:
    """report.md and its PNGs in ``out``; ``beside``: other work, done while the figures are drawn
    (``_forked_plots``)."""
    out.mkdir(parents=True, exist_ok=True)
    plots = _forked_plots(agg, out, beside)
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
        if name == "metadata_vs_list_topics.png":
            rows = [dict(r, saved=f"{100 * s:.1f} %" if (s := savings(r)) is not None else "")
                    for r in agg["metadata"]]
            md.append("\nWhat the same topics would have cost as a ListTopics response (names only, KIP-142) and as "
                      "DescribeTopicPartitions pages (2,000 partitions a page); `saved` is Metadata against "
                      "ListTopics v1.\n\n")
            md.append(_table(rows, ["client_id", "responses", "all_topics_requests", "topics", "metadata_bytes",
                                    "list_topics_v0_bytes", "list_topics_v1_bytes", "dtp_pages", "dtp_bytes",
                                    "saved"]))
        if name == "versions.png":
            md.append("\n" + _table(agg["versions"], ["api_name", "api_version", "count"]))
        if name == "errors.png":
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
