"""The report's figures drawn in two processes (``report._forked_plots``): the same PNGs, byte for byte, and
the same titles in the same order as drawn in one; the work beside them done once, in this process; a child
that fails fails the report; a forked child holds no JVM's stdin (the JVM exits when it ends)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from needs import need_module

need_module("matplotlib")

from kcodec.spark import launch, report  # noqa: E402


def _agg() -> dict:
    sizes = [{"direction": d, "bucket": b, "count": 3 + b} for d in ("produced", "fetched") for b in (2, 5, 9)]
    topics = [{"topic": f"t{i}", "produced_records": 10 * i, "fetched_records": 7 * i} for i in range(4)]
    return {"over_time": [{"api_name": a, "bucket": b, "bytes": 100 * b + len(a)} for a in ("Produce", "Fetch")
                          for b in range(5)],
            "bucket_ns": 1_000_000,
            "metadata": [{"client_id": "c1", "metadata_bytes": 900, "dtp_bytes": 500, "list_topics_v1_bytes": 200}],
            "versions": [{"api_name": "Fetch", "api_version": v, "count": v + 1} for v in (12, 13, 16)],
            "batches": {"by_topic": topics, "sizes": {"records": sizes, "bytes": sizes}},
            "errors": [{"code": 3, "count": 2}], "decode_errors": [{"decode_error": "x", "count": 1}]}


@pytest.mark.parametrize("fork", ["0", "1"])
def test_forked_figures_are_the_serial_ones(tmp_path, monkeypatch, fork):
    serial, forked = tmp_path / "serial", tmp_path / "forked"
    serial.mkdir()
    forked.mkdir()
    monkeypatch.setenv("KCODEC_REPORT_FORK", "0")
    one = report._forked_plots(_agg(), serial)
    monkeypatch.setenv("KCODEC_REPORT_FORK", fork)
    pids = []
    two = report._forked_plots(_agg(), forked, beside=lambda: pids.append(os.getpid()))
    assert pids == [os.getpid()]  # beside: once, here (its effects are this process's)
    assert list(one.items()) == list(two.items()) and len(one) == 6
    assert report.CHILD_PLOTS < set(two)  # the child's share was drawn, not only the parent's
    assert sorted(p.name for p in forked.iterdir()) == sorted(one)
    for name in one:
        assert (forked / name).read_bytes() == (serial / name).read_bytes(), name


def test_a_failed_child_fails_the_report(tmp_path, monkeypatch):
    plots = report._plots

    def failing(agg, out, child=None):
        if child:
            raise OSError("disk full")
        return plots(agg, out, child)

    monkeypatch.setattr(report, "_plots", failing)
    with pytest.raises(RuntimeError, match="were not drawn"):
        report._forked_plots(_agg(), tmp_path)


def test_a_forked_child_does_not_hold_a_jvms_stdin(monkeypatch):
    # a stand-in for the JVM: it ends when its stdin does
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    monkeypatch.setattr(launch, "STARTED", [proc])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # holds on until told: the stand-in must end before that
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    try:
        os.close(r)
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        os.close(w)
        os.waitpid(pid, 0)
        if proc.poll() is None:
            proc.kill()
