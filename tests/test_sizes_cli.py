"""`kcodec sizes` and `kcodec showcase`: formats, plots, real decode times per backend, the report folder."""

from __future__ import annotations

import csv
import io
import json

import pytest
from needs import need_module

import kcodec
from kcodec.cli import main
from kcodec.sizes.sweep import Progress, parse_counts
from kcodec.sizes.timing import Payload, time_backends


def _sizes(capsys, *extra):
    assert main(["sizes", "--topics", "10,150", "--decode-max", "10", "--repeat", "1", "--quiet", *extra]) == 0
    return capsys.readouterr().out


def test_json_rows_have_bytes_ratios_and_real_decode_times(capsys):
    rows = json.loads(_sizes(capsys, "--format", "json"))
    assert len(rows) == 14 and {r["topics"] for r in rows} == {10, 150}
    by = {(r["topics"], r["message"]): r for r in rows}
    assert by[(10, "ListTopics v0")]["ratio"] == 1.0
    assert by[(150, "Metadata v12")]["ratio"] > 10 and by[(150, "DescribeTopicPartitions v0")]["pages"] == 1
    timed = [r for r in rows if r["decode_ms"]]
    assert timed and all(r["topics"] == 10 for r in timed)  # real decodes only up to --decode-max
    expected = {"python"} | ({"cython"} if kcodec.BACKEND == "cython" else set())
    assert all(set(r["decode_ms"]) >= expected and min(r["decode_ms"].values()) > 0 for r in timed)


def test_csv_markdown_and_table(capsys):
    data = list(csv.DictReader(io.StringIO(_sizes(capsys, "--format", "csv"))))
    assert data[0]["message"] == "Metadata v1" and int(data[0]["bytes"]) > 0 and data[0]["decode_ms_python"]
    md = _sizes(capsys, "--format", "markdown").splitlines()
    assert md[0].startswith("| topics | message | bytes |") and len(md) == 16
    table = _sizes(capsys)
    assert "DescribeTopicPartitions v0" in table and "x ListTopics v0" in table


def test_plot_writes_two_pngs(capsys, tmp_path):
    need_module("matplotlib")
    out = tmp_path / "deep" / "sizes.png"
    _sizes(capsys, "--plot", str(out))
    for p in (out, out.with_name("sizes-decode.png")):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, words", [(["--topics", "ten"], "not a topic count"), (["--rf", "9"], "replication"),
                                         (["--metadata-versions", "99"], "Metadata versions"),
                                         (["--partitions", "0"], "at least one partition")])
def test_bad_options_are_refused(capsys, args, words):
    assert main(["sizes", "--quiet", *args]) == 2
    assert words in capsys.readouterr().err


def test_counts_and_progress():
    assert parse_counts("10,100,1k,10k,100k") == [10, 100, 1000, 10_000, 100_000]
    assert parse_counts("2.5k") == [2500]
    buf = io.StringIO()
    p = Progress(buf)
    for k in (1, 2, 3):
        p.say(f"10 topics: sizes {k}/3")
    p.say("10 topics: done")
    p.close()
    assert buf.getvalue() == "10 topics: sizes 1/3\n10 topics: done\n"  # not a terminal: a line per stage


def test_timing_child_refuses_a_payload_it_cannot_re_encode():
    good = Payload("lt", "ListTopicsResponse", 0, [b"\x00\x00\x00\x00\x00\x00"])
    assert set(time_backends([good], repeat=1)) >= {"python"}
    # a bool written as 0x02 decodes as True and re-encodes as 0x01: times of such bytes would mislead
    odd = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01a" + b"\x02"
    with pytest.raises(RuntimeError, match="re-encoding differs"):
        time_backends([Payload("odd", "ListTopicsResponse", 0, [odd])], repeat=1)
    with pytest.raises(RuntimeError, match="trailing bytes"):
        time_backends([Payload("long", "ListTopicsResponse", 0, [b"\x00" * 6 + b"\x07"])], repeat=1)


def test_showcase_writes_its_report(capsys, tmp_path, shared):
    out = tmp_path / "report"
    code = main(["showcase", "--vectors", str(shared / "vectors" / "metadata"), "--out", str(out), "--topics",
                 "10,100", "--decode-max", "10", "--repeat", "1", "--quiet", "--steps", "setup,sizes,codecs,report"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    for figure in ("457,655", "474,672", "32,045"):
        assert figure in printed
    text = (out / "README.md").read_text()
    assert "## Response sizes" in text and "## Decode and encode at 1,000 topics" in text
    assert "decode ms kcodec (python)" in printed
    for png in ("sizes.png", "sizes-decode.png", "codecs.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG" and f"]({png})" in text
    assert len(list(csv.DictReader((out / "sweep.csv").open()))) == 14


def test_showcase_names_its_steps_and_fails_cleanly(capsys, tmp_path):
    assert main(["showcase", "--steps", "nope"]) == 2
    assert "steps are ['setup', 'sizes', 'codecs', 'traffic', 'analyze', 'report']" in capsys.readouterr().err
    assert main(["showcase", "--vectors", str(tmp_path), "--out", str(tmp_path / "r"), "--quiet",
                 "--steps", "setup,sizes,report"]) == 1
    assert "FAILED: setup: FileNotFoundError" in capsys.readouterr().out


def test_showcase_says_why_a_step_is_skipped(capsys, tmp_path):
    assert main(["showcase", "--steps", "analyze,report", "--out", str(tmp_path), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "step analyze skipped: it needs the traffic step's capture" in printed
    assert "skipped: analyze:" in printed.splitlines()[-1]
    assert "## Skipped\n\n- analyze: it needs the traffic step's capture" in (tmp_path / "README.md").read_text()


def _e2e_showcase(tmp_path) -> int:
    return main(["showcase", "--steps", "traffic,analyze,report", "--out", str(tmp_path), "--quiet"])


@pytest.mark.interop
def test_showcase_without_pyspark_drives_traffic_and_skips_the_analysis(capsys, tmp_path, monkeypatch):
    need_module("confluent_kafka")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert _e2e_showcase(tmp_path) == 0
    printed = capsys.readouterr().out
    assert "step analyze skipped: pyspark is not installed" in printed
    assert "e2e-confluent: confluent-kafka" in printed and "kcodec tap stopped: " in printed
    assert list((tmp_path / "traffic" / "capture").glob("*.kcap"))
    text = (tmp_path / "README.md").read_text()
    assert "## End to end: real clients through `kcodec tap`" in text and "the capture on Spark" not in text


@pytest.mark.spark
@pytest.mark.interop
@pytest.mark.filterwarnings("ignore::kcodec.TrailingBytesWarning")
def test_showcase_end_to_end_steps(capsys, tmp_path, spark):
    need_module("confluent_kafka")
    need_module("kafka")
    assert _e2e_showcase(tmp_path) == 0
    printed = capsys.readouterr().out
    assert "they agree" in printed and "as ListTopics v1 B" in printed
    text = (tmp_path / "README.md").read_text()
    assert "## End to end: the capture on Spark" in text and "### Versions per client" in text
    assert "| ListTopics | 3 |" in text and "[traffic/report.md](traffic/report.md)" in text
    assert (tmp_path / "traffic" / "report.md").exists() and (tmp_path / "traffic" / "versions.svg").exists()
    assert spark.range(3).count() == 3  # the session it borrowed is still up
