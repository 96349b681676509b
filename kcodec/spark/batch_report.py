"""The record-batch part of `kcodec analyze`'s report: what the data carried (the batches table's figures,
``kcodec.spark.aggregates``): totals, per topic and per client, compression per codec and the batch size
distribution, with their plots, Markdown and console lines.

Messages are the records of batches that decoded, control batches (transaction markers) left out;
bytes are the batches as they crossed the wire (compressed). Fetched counts are what the Fetch
responses carried: a record fetched twice counts twice.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .aggregates import DIRECTIONS

PLOTS = ("records_by_topic.png", "batch_sizes.png")


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


def plots(agg: dict[str, Any], want: Callable[[str, str], bool], save: Callable[[Any, str], None]) -> None:
    """records_by_topic.png and batch_sizes.png, through the report's ``want(name, title)`` (whether this
    process draws it) and ``save(fig, name)``."""
    import matplotlib.pyplot as plt

    if agg["by_topic"] and want("records_by_topic.png", "Messages produced and fetched, per topic"):
        rows = agg["by_topic"][:15]
        fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.8))
        y = range(len(rows))
        ax.barh([i - 0.2 for i in y], [r["produced_records"] for r in rows], 0.4, label="produced")
        ax.barh([i + 0.2 for i in y], [r["fetched_records"] for r in rows], 0.4, label="fetched")
        ax.set_yticks(list(y), [r["topic"] for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("messages (records in the batches of Produce requests / Fetch responses)")
        ax.legend(fontsize=8)
        save(fig, "records_by_topic.png")
    if agg["sizes"]["records"] and want("batch_sizes.png", "Record batch sizes"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, what, label in zip(axes, ("records", "bytes"), ("records per batch", "bytes per batch (as sent)")):
            rows = size_rows(agg, what)
            x = range(len(rows))
            for i, d in enumerate(DIRECTIONS):
                ax.bar([j + (i - 0.5) * 0.4 for j in x], [r[d] for r in rows], 0.4, label=d)
            ax.set_xticks(list(x), [r[what] for r in rows], rotation=60, fontsize=7)
            ax.set_xlabel(label)
            ax.set_ylabel("batches")
            ax.legend(fontsize=8)
        save(fig, "batch_sizes.png")


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
