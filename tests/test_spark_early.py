"""Pass 1 done by a forked child while Spark's JVM starts (``kcodec.spark.early``): its files are taken
only when its plan is the driver's, and then the tables are row for row those of Spark's own pass 1; any
other case runs pass 1 on Spark as before, errors included, and no scratch file is left behind."""

from __future__ import annotations

import os
import time

import pytest

from test_spark_split import _rows, captures  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.spark]

SETTINGS = {"spark.kcodec.splitBytes": "16k", "spark.kcodec.partitionBytes": "64k"}


def _write(spark, paths, out, early=None):
    from kcodec.spark import pipeline

    for k, v in SETTINGS.items():
        spark.conf.set(k, v)
    try:
        written = pipeline.write_tables(spark, paths, str(out), frame_bytes=True, early=early)
    finally:
        for k in SETTINGS:
            spark.conf.unset(k)
    return written, {name: _rows(spark.read.parquet(str(out / name)).toPandas())
                     for name in ("frames", "exchanges", "batches", "files")}


def test_the_listing_is_hadoops(spark, captures, tmp_path):  # noqa: F811
    from kcodec.spark import early, ranges

    assert early.local_listing(captures) == ranges.listing(spark, captures)
    assert early.local_listing([captures[0] + "/*"]) is None  # a glob: Hadoop's to expand
    assert early.local_listing([str(tmp_path / "missing.pcap")]) is None  # Hadoop's error to raise
    assert early.local_listing(["s3a://bucket/x.pcap"]) is None


def test_the_early_pass_gives_sparks_tables(spark, captures, tmp_path):  # noqa: F811
    from kcodec.spark import early

    expected_written, expected = _write(spark, captures, tmp_path / "spark")
    out = tmp_path / "early"
    e = early.Early(captures, f"{out}/_shuffle", SETTINGS, "local[2]")
    try:
        written, tables = _write(spark, captures, out, e)
        assert e._taken  # pass 1 was the child's
    finally:
        e.close()
    assert tables == expected
    assert written["files"] == expected_written["files"] and written["rows"] == expected_written["rows"]
    assert max(s.get("ranges", 0) for s in written["files"].values()) > 1
    assert not (out / "_shuffle").exists()


def test_another_plan_is_not_taken(spark, captures, tmp_path):  # noqa: F811
    from kcodec.spark import early

    _, expected = _write(spark, captures, tmp_path / "spark")
    out = tmp_path / "early"
    e = early.Early(captures, f"{out}/_shuffle", {**SETTINGS, "spark.kcodec.partitionBytes": "1m"}, "local[2]")
    try:
        _, tables = _write(spark, captures, out, e)
        assert not e._taken  # its partitions are not the driver's: Spark's pass 1 ran
    finally:
        e.close()
    assert tables == expected
    assert not (out / "_shuffle").exists()


def test_a_missing_file_raises_as_before(spark, tmp_path):
    from kcodec.spark import early

    missing = str(tmp_path / "missing.pcap")
    e = early.Early([missing], f"{tmp_path}/_shuffle", SETTINGS, "local[2]")
    try:
        with pytest.raises(FileNotFoundError, match="no capture file at"):
            _write(spark, [missing], tmp_path, e)
    finally:
        e.close()


def test_close_ends_the_child_and_leaves_no_scratch(captures, tmp_path):  # noqa: F811
    from kcodec.spark import early

    scratch = tmp_path / "_shuffle"
    e = early.Early(captures, str(scratch), {**SETTINGS, "spark.kcodec.splitBytes": "1k"}, "local[2]")
    pid = e._proc.pid
    time.sleep(0.3)  # under way
    e.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped
    time.sleep(0.2)
    assert not scratch.exists()


def test_only_local_runs_start_early(tmp_path):
    from kcodec.spark import early

    assert early.start(["x.pcap"], str(tmp_path), {}, "spark://host:7077") is None
    assert early.start(["x.pcap"], "s3a://bucket/tables", {}, "local[*]") is None


def test_inputs_under_one_range_do_not_start_early(captures, tmp_path):  # noqa: F811
    from kcodec.spark import early

    total = sum(n for _, n in early.local_listing(captures))
    tables = str(tmp_path / "tables")
    assert early.start(captures, tables, {"spark.kcodec.splitBytes": str(total + 1)}, "local[*]") is None
    e = early.start(captures, tables, {"spark.kcodec.splitBytes": str(total)}, "local[*]")
    assert e is not None
    e.close()
    assert early.start([str(tmp_path / "missing.pcap")], tables, {}, "local[*]") is None
