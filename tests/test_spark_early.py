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
    e = early.Early(captures, f"{out}/_shuffle", SETTINGS, "local[2]", frame_bytes=True)
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
    e = early.Early(captures, f"{out}/_shuffle", {**SETTINGS, "spark.kcodec.partitionBytes": "1m"}, "local[2]",
                    frame_bytes=True)
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


# Pass 2 shared between the child and Spark's tasks: each runs the partitions it claims first, in order, until
# none is left; whatever the timing the tables and summaries are Spark's alone.

def _expected(spark, captures, tmp_path):  # noqa: F811
    return _write(spark, captures, tmp_path / "spark")


def _same(written, tables, expected_written, expected):
    assert tables == expected
    for k in ("files", "rows", "aggregates", "topic_names"):
        assert written[k] == expected_written[k], k


def _wait(cond, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _claimed(out, partition):
    return lambda: (out / "_shuffle" / "_claims" / str(partition)).exists()


def _partitioned(monkeypatch, hook):
    """The child's ``tasks.write_partition`` with ``hook(partition)`` first (in the child only: Spark's
    workers are not forked from this process)."""
    from kcodec.spark import tasks

    run, parent = tasks.write_partition, os.getpid()

    def patched(items, job, partition=None):
        if os.getpid() != parent:
            hook(partition)
        return run(items, job, partition)
    monkeypatch.setattr(tasks, "write_partition", patched)


def _run(spark, captures, out, **kw):
    from kcodec.spark import early

    return early.Early(captures, f"{out}/_shuffle", SETTINGS, "local[2]", pending=False, frame_bytes=True, **kw)


def test_partitions_done_by_the_child_are_taken(spark, captures, tmp_path):  # noqa: F811
    expected_written, expected = _expected(spark, captures, tmp_path)
    out = tmp_path / "early"
    e = _run(spark, captures, out)
    try:
        _wait(lambda: 0 in e._outcomes)  # pass 1 and a partition of pass 2 done while "the JVM starts"
        written, tables = _write(spark, captures, out, e)
        assert e._taken and 0 in e.mine
    finally:
        e.close()
    _same(written, tables, expected_written, expected)
    assert not (out / "_shuffle").exists()


def test_the_partition_in_progress_is_waited_for(spark, captures, tmp_path, monkeypatch):  # noqa: F811
    expected_written, expected = _expected(spark, captures, tmp_path)
    out = tmp_path / "early"
    _partitioned(monkeypatch, lambda i: _wait(_claimed(out, 2)) if i == 1 else None)  # in 1 as Spark's tasks start
    e = _run(spark, captures, out)
    try:
        _wait(lambda: 0 in e._outcomes)
        written, tables = _write(spark, captures, out, e)  # Spark's tasks claim 2 while the child is in 1
        assert {0, 1} <= set(e.mine) and e._outcomes[1] is not None and 2 not in e.mine  # Spark ran 2
    finally:
        e.close()
    assert written["rows"]["frames"] > 0 and expected_written["unsplit"] == []
    _same(written, tables, expected_written, expected)
    assert not (out / "_shuffle").exists()


def test_a_slow_child_leaves_all_of_pass_two_to_spark(spark, captures, tmp_path, monkeypatch):  # noqa: F811
    from kcodec.spark import tasks

    expected_written, expected = _expected(spark, captures, tmp_path)
    claim, parent = tasks.claim, os.getpid()

    out = tmp_path / "early"

    def slow(claims, partition):
        if os.getpid() != parent:
            _wait(_claimed(out, partition))  # a Spark task's claim comes first
        return claim(claims, partition)
    monkeypatch.setattr(tasks, "claim", slow)
    e = _run(spark, captures, out)
    try:
        written, tables = _write(spark, captures, out, e)
        assert e._taken and e.mine == [] and not e._outcomes
    finally:
        e.close()
    _same(written, tables, expected_written, expected)


@pytest.mark.parametrize("how", ["raises at once", "raises once Spark's tasks claim", "dies"])
def test_a_child_failing_in_pass_two_loses_no_partition(spark, captures, tmp_path, monkeypatch, how):  # noqa: F811
    expected_written, expected = _expected(spark, captures, tmp_path)
    out = tmp_path / "early"

    def fail(i):
        if i != 0:
            return
        if how != "raises at once":  # once a Spark task has claimed partition 1
            _wait(_claimed(out, 1))
        if how == "dies":
            os._exit(3)
        raise RuntimeError("a bug in pass 2")
    _partitioned(monkeypatch, fail)
    e = _run(spark, captures, out)
    try:
        if how == "raises at once":
            _wait(lambda: e._ended)
        written, tables = _write(spark, captures, out, e)
        assert e.mine == [0]  # the child's claim: no Spark task took it
        assert e._outcomes.get(0) is None  # not the child's: Spark ran it after
    finally:
        e.close()
    _same(written, tables, expected_written, expected)
    assert not (out / "_shuffle").exists()


def test_close_in_pass_two_ends_the_child_and_leaves_no_scratch(captures, tmp_path, monkeypatch):  # noqa: F811
    _partitioned(monkeypatch, lambda i: time.sleep(60))
    scratch = tmp_path / "_shuffle"
    e = _run(None, captures, tmp_path)
    _wait(lambda: (scratch / "_claims" / "0").exists())  # the child is in partition 0
    pid = e._proc.pid
    e.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not scratch.exists()


def test_a_failed_pass_two_ends_the_child_and_leaves_no_scratch(spark, captures, tmp_path, monkeypatch):  # noqa: F811
    from kcodec.spark import pipeline

    def failed(*_):
        raise RuntimeError("the Spark job failed")
    _partitioned(monkeypatch, lambda i: time.sleep(60) if i == 1 else None)
    monkeypatch.setattr(pipeline, "_pass_two_claimed", failed)
    out = tmp_path / "early"
    e = _run(spark, captures, out)
    try:
        _wait(lambda: 0 in e._outcomes)  # the child is in partition 1
        with pytest.raises(RuntimeError, match="the Spark job failed"):
            _write(spark, captures, out, e)
        assert not e._proc.is_alive()  # ended by the pass, before its input went
        assert not (out / "_shuffle").exists()
    finally:
        e.close()


def test_a_spark_task_writes_exactly_the_partitions_it_claims(tmp_path, monkeypatch):
    from kcodec.spark import tasks

    claims = tmp_path / "_claims"
    claims.mkdir()
    for taken in (0, 2):  # the child's, or another task's
        assert tasks.claim(str(claims), taken)
    assert not tasks.claim(str(claims), 2)  # one claim a partition
    ran = []
    monkeypatch.setattr(tasks, "write_partition", lambda items, job, i: ran.append((i, items)) or [("rows", str(i))])
    parts = [[(i, f"file-{i}")] for i in range(5)]
    out = list(tasks.write_claimed(iter([0]), job=None, parts=parts, claims=str(claims)))
    assert out == [(1, [("rows", "1")]), (3, [("rows", "3")]), (4, [("rows", "4")])]
    assert ran == [(i, parts[i]) for i in (1, 3, 4)]
    assert sorted(p.name for p in claims.iterdir()) == ["0", "1", "2", "3", "4"]
    assert list(tasks.write_claimed(iter([1]), job=None, parts=parts, claims=str(claims))) == []  # none left
