"""The end-to-end path's analysis: `kcodec analyze` over the traffic step's capture on Spark, the
figures the showcase reports, and their check against what the clients and the broker recorded."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

from kcodec import definitions
from kcodec.cli.progress import Progress

from .context import Context, Skip
from .traffic import KC, KPY, Traffic, told_errors


@dataclasses.dataclass
class Figures:
    """What the analysis says, per client id, from the exchanges table."""

    agg: dict[str, Any]                                    # `kcodec analyze`'s aggregates (its report)
    counts: dict[str, Counter[tuple[str, int]]]            # (API, version) -> requests
    errors: dict[str, dict[str, list[int]]]                # API -> non-zero error codes in the responses
    unanswered: int
    decode_errors: list[str]
    list_topics: dict[str, int]                            # requests, decoded, response bytes (KIP-142 frames)
    # (what-if ListTopics v1 bytes of kafka-python's first all-topics Metadata after kcodec's last
    # ListTopics, the bytes that ListTopics response really took)
    what_if_vs_real: Optional[tuple[int, int]]
    # (topic, codec) -> records in the Produce requests' batches that decoded (the batches table)
    produced: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)
    # (topic, codec) -> distinct records in the Fetch responses' whole batches (a batch fetched twice counts once)
    fetched: Counter[tuple[str, str]] = dataclasses.field(default_factory=Counter)


def analyze_capture(spark: Any, traffic: Traffic, out: Path, print_: Callable[..., None] = print,
                    progress: Optional[Progress] = None) -> Figures:
    """`kcodec analyze` of the capture into ``out`` (report.md, PNGs, tables/), then the figures."""
    from kcodec.spark.analyze import analyze

    agg = analyze(spark, [str(traffic.capture_dir / "*.kcap")], out, print_=print_, progress=progress)
    tables = out.resolve() / "tables"
    f = figures(spark.read.parquet(str(tables / "exchanges")), agg)
    batches = spark.read.parquet(str(tables / "batches"))
    f.produced, f.fetched = produced_records(batches), fetched_records(batches)
    return f


def _data_batches(batches: Any, direction: str) -> Any:
    """The batches table's decoded data batches (no error, no control batch) going one way."""
    from pyspark.sql import functions as F

    return batches.where((F.col("direction") == direction) & F.col("error").isNull() & ~F.col("control"))


def _records_per_topic_codec(batches: Any) -> Counter[tuple[str, str]]:
    from pyspark.sql import functions as F

    rows = batches.groupBy("topic", "codec").agg(F.sum("record_count").alias("records")).collect()
    return Counter({(r["topic"], r["codec"]): int(r["records"]) for r in rows})


def produced_records(batches: Any) -> Counter[tuple[str, str]]:
    """Records per (topic, codec) that the Produce requests carried, from the batches table."""
    return _records_per_topic_codec(_data_batches(batches, "produced"))


def fetched_records(batches: Any) -> Counter[tuple[str, str]]:
    """Distinct records per (topic, codec) that the Fetch responses carried in whole batches, from the
    batches table: a batch is its (topic, partition, base offset), however often it was fetched."""
    from pyspark.sql import functions as F

    whole = _data_batches(batches, "fetched").where(~F.coalesce(F.col("partial"), F.lit(False)))
    return _records_per_topic_codec(whole.dropDuplicates(["topic", "partition", "base_offset"]))


def figures(ex: Any, agg: dict[str, Any]) -> Figures:
    from pyspark.sql import functions as F

    counts: dict[str, Counter[tuple[str, int]]] = {}
    for r in ex.groupBy("client_id", "api_name", "api_version").count().collect():
        counts.setdefault(r["client_id"] or "", Counter())[(r["api_name"], r["api_version"])] = r["count"]
    errors: dict[str, dict[str, list[int]]] = {}
    for r in ex.where(F.col("error_count") > 0).select("client_id", "api_name", "error_codes").collect():
        errors.setdefault(r["client_id"] or "", {}).setdefault(r["api_name"], []).extend(r["error_codes"])
    errors = {c: {a: sorted(v) for a, v in apis.items()} for c, apis in errors.items()}
    decode_errors = [r["decode_error"] for r in ex.where(F.col("decode_error").isNotNull()).limit(20).collect()]
    lt = ex.where(F.col("api_key") == definitions.list_topics_api_key()).agg(
        F.count("*").alias("requests"), F.count("response_bytes").alias("answered"),
        F.sum(F.col("decode_error").isNull().cast("int")).alias("decoded"),
        F.sum("response_bytes").alias("response_bytes")).collect()[0].asDict()
    return Figures(agg, counts, errors, int(ex.where(F.col("response_bytes").isNull()).count()), decode_errors,
                   {k: int(v or 0) for k, v in lt.items()}, _what_if_vs_real(ex))


def _what_if_vs_real(ex: Any) -> Optional[tuple[int, int]]:
    from pyspark.sql import functions as F

    last_lt = (ex.where((F.col("client_id") == KC) & (F.col("api_key") == definitions.list_topics_api_key()))
               .orderBy(F.desc("request_ts_ns")).limit(1).collect())
    if not last_lt:
        return None
    md = (ex.where((F.col("client_id") == KPY) & (F.col("api_key") == 3) & F.col("metadata_all_topics")
                   & (F.col("request_ts_ns") > last_lt[0]["request_ts_ns"]))
          .orderBy("request_ts_ns").limit(1).collect())
    if not md:
        return None
    return int(md[0]["list_topics_v1_bytes"]), int(last_lt[0]["response_bytes"])


def check(traffic: Traffic, f: Figures) -> list[str]:
    """Where the analysis disagrees with what the broker answered and what the clients were told."""
    bad = []
    if f.counts != traffic.served:
        for c in sorted(set(f.counts) | set(traffic.served)):
            if f.counts.get(c) != traffic.served.get(c):
                bad.append(f"{c}: the capture has {dict(f.counts.get(c, {}))}, the broker answered "
                           f"{dict(traffic.served.get(c, {}))}")
    if traffic.kcodec_sent and f.counts.get(KC) != traffic.kcodec_sent:
        bad.append(f"{KC}: the capture has {dict(f.counts.get(KC, {}))}, the client sent {dict(traffic.kcodec_sent)}")
    told = told_errors(traffic)
    for c in traffic.clients:
        if f.errors.get(c, {}) != told.get(c, {}):
            bad.append(f"{c}: error codes in the responses {f.errors.get(c, {})}, the client was told {told.get(c, {})}")
    if f.unanswered:
        bad.append(f"{f.unanswered} requests without a response")
    if f.decode_errors:
        bad.append(f"{len(f.decode_errors)} exchanges did not decode: {f.decode_errors[:3]}")
    if KC in traffic.clients and not f.list_topics["requests"]:
        bad.append("no ListTopics exchange in the capture")
    if f.list_topics["decoded"] != f.list_topics["requests"]:
        bad.append(f"ListTopics: {f.list_topics['decoded']} of {f.list_topics['requests']} decoded")
    if f.produced != traffic.produced:
        bad.append(f"records produced per (topic, codec): the capture's batches carry {dict(f.produced)}, "
                   f"the producer had acknowledged {dict(traffic.produced)}")
    if f.fetched != traffic.consumed:
        bad.append(f"records fetched per (topic, codec): the capture's Fetch batches carry {dict(f.fetched)}, "
                   f"the consumer read {dict(traffic.consumed)}")
    if f.what_if_vs_real is not None and f.what_if_vs_real[0] != f.what_if_vs_real[1]:
        bad.append(f"what-if ListTopics v1 {f.what_if_vs_real[0]} B, the real one {f.what_if_vs_real[1]} B")
    return bad


# -- the showcase's steps ------------------------------------------------------------------------------
def traffic_step(ctx: Context) -> None:
    import importlib.util

    from .traffic import BROKER_PACKAGE, drive

    if importlib.util.find_spec(BROKER_PACKAGE) is None:
        raise Skip("kcodec-broker, the broker's own distribution, is not installed (pip install kcodec-broker)")
    out = ctx.out_dir / "traffic" / "capture"
    traffic = drive(out, log=lambda m: ctx.progress.say(f"[traffic] {m}"))
    ctx.results["traffic"] = traffic
    size = sum(p.stat().st_size for p in traffic.files)
    lines = [f"{len(traffic.brokers)} brokers, {traffic.background_topics} topics to start with, SASL PLAIN; "
             f"clients bootstrap through the tap at the last broker, the controller is the first",
             *(f"{cid}: {lib}" for cid, lib in traffic.clients.items()),
             *(f"{lib}: skipped ({why})" for lib, why in traffic.skipped.items()),
             f"capture: {len(traffic.files)} file(s), {size:,} B in {out} ({traffic.seconds:.1f} s); "
             f"kcodec tap {traffic.tap_summary}"]
    for line in lines:
        print(line, file=ctx.out)
    ctx.sections.append(
        "## End to end: real clients through `kcodec tap` to `kcodec broker`\n\n"
        "confluent-kafka's AdminClient, kafka-python's KafkaAdminClient and kcodec's client administer a "
        "`kcodec_broker` Cluster through `kcodec tap`: create topics (explicit settings, and KIP-464's broker "
        "defaults), list them (Metadata; ListTopics, KIP-142, for kcodec), describe them (DescribeTopicPartitions "
        "pages of 50 partitions, KIP-966, for kcodec), add partitions, delete, and calls that fail "
        "(TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS, deleting an internal or an "
        "unknown topic). Then confluent-kafka's idempotent producer writes records to `kcodec broker` with every "
        "compression codec (acks=all), and a confluent-kafka consumer in a group reads them back and commits.\n\n" + "\n".join(f"- {x}" for x in lines) + "\n")


def analyze_step(ctx: Context) -> None:
    import importlib.util
    import os
    import shutil
    import sys

    traffic = ctx.results.get("traffic")
    if traffic is None:
        raise Skip("it needs the traffic step's capture (--steps traffic,analyze)")
    if importlib.util.find_spec("pyspark") is None:
        raise Skip("pyspark is not installed (pip install 'kcodec[spark]')")
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise Skip("no Java runtime for Spark (no java on PATH, JAVA_HOME unset)")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's kcodec and pyarrow
    from pyspark.sql import SparkSession

    from kcodec.spark import session

    active = SparkSession.getActiveSession()  # a caller's session (tests, a notebook) is used, not stopped
    own = active is None
    ctx.progress.say(f"[analyze] starting Spark ({ctx.master})" if own else "[analyze] on the active Spark session")
    spark: Any = (session(ctx.master, app_name="kcodec showcase", ui=False, quiet=not ctx.verbose)
                  if active is None else active)
    try:
        if own and not ctx.verbose:
            spark.sparkContext.setLogLevel("ERROR")
            # A small capture: as many shuffle partitions as cores, not Spark's 200.
            spark.conf.set("spark.sql.shuffle.partitions", str(spark.sparkContext.defaultParallelism))
        out = ctx.out_dir / "traffic"
        figs = analyze_capture(spark, traffic, out, print_=lambda *a, **_: ctx.progress.say(" ".join(map(str, a))),
                               progress=ctx.progress)
    finally:
        if own:
            spark.stop()
    bad = check(traffic, figs)
    ctx.results["analyze"] = figs
    text, console = headline(traffic, figs, bad)
    print(console, file=ctx.out, end="")
    ctx.sections.append(text)
    ctx.files += sorted(out.glob("*.svg"))
    if bad:
        raise AssertionError("the analysis disagrees with the clients and the broker: " + "; ".join(bad))


def headline(traffic: Traffic, f: Figures, bad: list[str]) -> tuple[str, str]:
    """The section's Markdown and the console's text: exchanges by API, Metadata against ListTopics,
    versions per client."""
    from kcodec.sizes.output import grid

    t = f.agg["total"]
    by_api = [[str(r["api_name"]), f"{r['requests']:,}", f"{r['request_bytes'] or 0:,}", f"{r['response_bytes'] or 0:,}",
               str(r["errors"] or 0)] for r in sorted(f.agg["by_api"], key=lambda r: -r["requests"])]
    api_head = ["API", "exchanges", "request B", "response B", "error codes"]
    md_rows = []
    for r in f.agg["metadata"]:
        if not r["topics"]:  # brokers-only answers (a client's bootstrap): nothing for ListTopics to save
            continue
        saved = 1 - r["list_topics_v1_bytes"] / r["metadata_bytes"] if r["metadata_bytes"] else 0.0
        md_rows.append([str(r["client_id"]), str(r["responses"]), str(r["all_topics_requests"] or 0),
                        f"{r['metadata_bytes']:,}", f"{r['list_topics_v1_bytes']:,}", f"{100 * saved:.1f} %",
                        f"{r['dtp_bytes']:,} ({r['dtp_pages']} page{'s' if r['dtp_pages'] != 1 else ''})"])
    md_head = ["client", "Metadata responses", "all topics", "Metadata B", "as ListTopics v1 B", "saved",
               "as DescribeTopicPartitions B"]
    clients = sorted(f.counts)
    apis = sorted({a for c in clients for a, _ in f.counts[c]})
    versions = [[api] + [",".join(f"v{v}" for v in sorted({v for a, v in f.counts[c] if a == api})) or "-"
                         for c in clients] for api in apis]
    lt = f.list_topics
    notes = [f"{t['exchanges']:,} exchanges on {t['connections']} connections, {t['request_bytes'] + t['response_bytes']:,} B; "
             f"{lt['requests']} ListTopics exchanges (api key {definitions.list_topics_api_key()}), "
             f"{lt['decoded']} decoded, {lt['response_bytes']:,} B of responses"]
    if f.what_if_vs_real is not None:
        notes.append(f"the what-if of kafka-python's first all-topics Metadata response, "
                     f"{f.what_if_vs_real[0]:,} B as ListTopics v1, against the ListTopics response kcodec "
                     f"got just before it (same topics): {f.what_if_vs_real[1]:,} B")
    if f.produced:
        notes.append(f"{sum(f.produced.values()):,} records in the Produce requests' batches ("
                     + ", ".join(f"{n} {codec} in {topic}" for (topic, codec), n in sorted(f.produced.items()))
                     + "), decoded from the capture with kcodec.records")
    if f.fetched:
        notes.append(f"{sum(f.fetched.values()):,} distinct records in the Fetch responses' batches, what the "
                     f"consumer group read back")
    notes.append("checked against the broker's count of requests per client, API and version, the kcodec "
                 "client's own count, the records the producer had acknowledged and the consumer read, and the error "
                 "codes each "
                 "client was told: "
                 + ("they agree" if not bad else "DISAGREE: " + "; ".join(bad)))
    text = ("## End to end: the capture on Spark\n\n"
            "`kcodec analyze` on a local Spark session; its own report: [traffic/report.md](traffic/report.md) "
            "(tables in `traffic/tables/`).\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
            "\n### Exchanges by API\n\n" + grid(api_head, by_api, markdown=True)
            + "\n### Metadata against what ListTopics would have taken\n\n" + grid(md_head, md_rows, markdown=True)
            + "\n### Versions per client\n\n" + grid(["API"] + clients, versions, markdown=True))
    console = ("\nEnd to end (kcodec broker, kcodec tap, Spark):\n" + "\n".join(f"  {n}" for n in notes) + "\n\n"
               + grid(api_head, by_api) + "\n" + grid(md_head, md_rows) + "\n" + grid(["API"] + clients, versions)
               + "\n")
    return text, console
