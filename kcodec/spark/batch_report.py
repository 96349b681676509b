"""The record-batch part of `kcodec analyze`'s report: what the data carried, from the batches table
(``kcodec.spark.record_batches``): totals, per topic and per client, compression per codec and the
batch size distribution, with their plots, Markdown and console lines.

Messages are the records of batches that decoded, control batches (transaction markers) left out;
bytes are the batches as they crossed the wire (compressed). Fetched counts are what the Fetch
responses carried: a record fetched twice counts twice.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

DIRECTIONS = ("produced", "fetched")
PLOTS = ("records_by_topic.png", "batch_sizes.png")


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


def _by_direction(value: Any, direction: str) -> Any:
    return F.when(F.col("direction") == direction, value)


def _totals(prefix: str = "") -> list[Any]:
    out = []
    for d in DIRECTIONS:
        out += [F.count(_by_direction(F.lit(1), d)).alias(f"{prefix}{d}_batches"),
                F.coalesce(F.sum(_by_direction(F.col("record_count"), d)), F.lit(0)).alias(f"{prefix}{d}_records"),
                F.coalesce(F.sum(_by_direction(F.col("compressed_bytes"), d)), F.lit(0)).alias(f"{prefix}{d}_bytes")]
    return out


def aggregates(rb: DataFrame) -> dict[str, Any]:
    """Every batch figure the report shows (small: collected on the driver)."""
    whole = rb.where(F.col("record_count").isNotNull())  # rows of batches, not of cut-off tails or unwalkable rests
    ok = whole.where(F.col("error").isNull() & ~F.col("control"))
    total = rb.agg(F.count(F.col("record_count")).alias("batches"),
                   F.count("error").alias("batch_errors"),
                   F.sum((F.col("crc_valid") == F.lit(False)).cast("long")).alias("crc_invalid"),
                   F.sum(F.col("partial").cast("long")).alias("partial_tails"),
                   F.sum(F.col("control").cast("long")).alias("control_batches")).collect()[0].asDict()
    total.update(ok.agg(*_totals()).collect()[0].asDict())
    total = {k: v or 0 for k, v in total.items()}
    by_topic = _rows(ok.groupBy(F.coalesce("topic", "topic_id", F.lit("(unknown)")).alias("topic")).agg(*_totals())
                     .orderBy(F.desc("produced_bytes"), F.desc("fetched_bytes"), "topic"))
    by_client = _rows(ok.groupBy(F.coalesce("client_id", F.lit("(none)")).alias("client_id")).agg(*_totals())
                      .orderBy(F.desc("produced_bytes"), F.desc("fetched_bytes"), "client_id"))
    by_codec = _rows(ok.groupBy("direction", "codec").agg(
        F.count("*").alias("batches"), F.sum("record_count").alias("records"),
        F.sum("compressed_bytes").alias("compressed_bytes"), F.sum("uncompressed_bytes").alias("uncompressed_bytes"))
        .orderBy("direction", F.desc("compressed_bytes")))
    for r in by_codec:
        r["ratio"] = r["uncompressed_bytes"] / r["compressed_bytes"] if r["compressed_bytes"] else None
    # Batch sizes in powers of two: bucket k holds sizes 2^k .. 2^(k+1)-1 (records; bytes).
    sizes = {what: _rows(ok.where(F.col(col) > 0).groupBy(
        "direction", F.floor(F.log2(F.col(col))).cast("int").alias("bucket")).count().orderBy("direction", "bucket"))
        for what, col in (("records", "record_count"), ("bytes", "compressed_bytes"))}
    return {"total": total, "by_topic": by_topic, "by_client": by_client, "by_codec": by_codec, "sizes": sizes}


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


def plots(agg: dict[str, Any], save: Callable[[Any, str, str], None]) -> None:
    """records_by_topic.png and batch_sizes.png, through the report's ``save(fig, name, title)``."""
    import matplotlib.pyplot as plt

    if agg["by_topic"]:
        rows = agg["by_topic"][:15]
        fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.8))
        y = range(len(rows))
        ax.barh([i - 0.2 for i in y], [r["produced_records"] for r in rows], 0.4, label="produced")
        ax.barh([i + 0.2 for i in y], [r["fetched_records"] for r in rows], 0.4, label="fetched")
        ax.set_yticks(list(y), [r["topic"] for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("messages (records in the batches of Produce requests / Fetch responses)")
        ax.legend(fontsize=8)
        save(fig, "records_by_topic.png", "Messages produced and fetched, per topic")
    if agg["sizes"]["records"]:
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
        save(fig, "batch_sizes.png", "Record batch sizes")


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
