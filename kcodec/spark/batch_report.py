"""The record-batch part of `kcodec analyze`'s report: what the data carried (the batches table's figures,
``kcodec.spark.aggregates``): totals, per topic and per client, compression per codec and the batch size
distribution, with their charts, Markdown and console lines.

Messages are the records of batches that decoded, control batches (transaction markers) left out;
bytes are the batches as they crossed the wire (compressed). Fetched counts are what the Fetch
responses carried: a record fetched twice counts twice.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import charts
from .aggregates import DIRECTIONS

PLOTS = ("records_by_topic.svg", "batch_sizes.svg")


def _bucket(k: int) -> str:
    lo, hi = 1 << k, (1 << (k + 1)) - 1
    return str(lo) if lo == hi else f"{lo}-{hi}"


def size_rows(agg: dict[str, Any], what: str) -> list[dict[str, Any]]:
    """The batch size distribution as rows: a size range and a batch count per direction."""
    table: dict[int, dict[str, Any]] = {}
    for r in agg["sizes"][what]:
        row = table.setdefault(r["bucket"], {what: _bucket(r["bucket"]), **{d: 0 for d in DIRECTIONS}})
        row[r["direction"]] = r["count"]
    return [table[k] for k in sorted(table)]


def figures(agg: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """records_by_topic.svg and batch_sizes.svg: (title, SVG text) by file name (``kcodec.spark.charts``)."""
    out: dict[str, tuple[str, str]] = {}
    if agg["by_topic"]:
        title = "Messages produced and fetched, per topic"
        rows = agg["by_topic"][:15]
        out["records_by_topic.svg"] = (title, charts.hbars(
            [str(r["topic"]) for r in rows], [("produced", [r["produced_records"] for r in rows]),
                                              ("fetched", [r["fetched_records"] for r in rows])],
            "messages (records in the batches of Produce requests / Fetch responses)", title))
    if agg["sizes"]["records"]:
        title = "Record batch sizes"
        panels = []
        for what, label in (("records", "records per batch"), ("bytes", "bytes per batch (as sent)")):
            rows = size_rows(agg, what)
            panels.append(([r[what] for r in rows], [(d, [r[d] for r in rows]) for d in DIRECTIONS], label,
                           "batches"))
        out["batch_sizes.svg"] = (title, charts.vbars(panels, title))
    return out


def markdown(agg: dict[str, Any], table: Callable[[list[dict[str, Any]], list[str]], str],
             made: dict[str, str]) -> list[str]:
    """The report's "Record batches" section."""
    t = agg["total"]
    cols = [f"{d}_{w}" for d in DIRECTIONS for w in ("batches", "records", "bytes")]
    md = ["\n## Record batches\n\nWhat the Produce requests and Fetch responses carried (the `batches` table): "
          "messages are the records of batches that decoded, transaction markers left out; bytes as sent.\n\n",
          table([{"what": k, "value": t[k]} for k in ("batches", *cols, "control_batches", "batch_errors",
                                                      "crc_invalid", "partial_tails")], ["what", "value"]),
          "\n### Per topic\n\n", table(agg["by_topic"], ["topic", *cols]),
          "\n### Per client\n\n", table(agg["by_client"], ["client_id", *cols]),
          "\n### Compression per codec\n\n`ratio`: uncompressed bytes over bytes as sent.\n\n",
          table(agg["by_codec"], ["direction", "codec", "batches", "records", "compressed_bytes",
                                  "uncompressed_bytes", "ratio"]),
          "\n### Batch sizes\n\n", table(size_rows(agg, "records"), ["records", *DIRECTIONS])]
    for name in PLOTS:
        if name in made:
            md.append(f"\n![{made[name]}]({name})\n")
    return md


def console(agg: Optional[dict[str, Any]], print_: Callable[..., None]) -> None:
    if agg is None:
        return
    t = agg["total"]
    print_(f"  record batches: {t['produced_batches']} produced ({t['produced_records']} messages, "
           f"{t['produced_bytes']} B), {t['fetched_batches']} fetched ({t['fetched_records']} messages, "
           f"{t['fetched_bytes']} B); {t['batch_errors']} did not decode, {t['crc_invalid']} with a bad CRC, "
           f"{t['partial_tails']} cut-off tails")
    for r in agg["by_topic"][:10]:
        print_(f"  topic {r['topic']}: {r['produced_records']} messages produced ({r['produced_bytes']} B), "
               f"{r['fetched_records']} fetched ({r['fetched_bytes']} B)")
    codecs = [f"{r['direction']} {r['codec']} {r['ratio']:.2f}x" for r in agg["by_codec"] if r["ratio"]]
    if codecs:
        print_("  compression: " + ", ".join(codecs))
