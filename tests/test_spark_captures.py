"""kcodec.spark on captures that depart from the easy case: ids that repeat, acks=0, a broker answering
acks=0, rotated pcaps, captures that reuse address pairs, a file given twice."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

import kcodec
from kcodec.messages import MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse
from kcodec.tap import capture

import pcap_writer as pcaps

pytestmark = [pytest.mark.spark]


def _produce(acks: int, corr: int, version: int = 9) -> bytes:
    return kcodec.encode_request(ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[]), version, corr,
                                 client_id="p")


def _produced(corr: int, version: int = 9) -> bytes:
    return kcodec.encode_response(ProduceResponse(responses=[]), version, corr)


def _md(corr: int) -> tuple[bytes, bytes]:
    return (kcodec.encode_request(MetadataRequest(topics=[]), 12, corr, client_id="m"),
            kcodec.encode_response(MetadataResponse(), 12, corr))


def _exchanges(spark, paths):
    from kcodec import spark as ks

    frames = ks.read_frames(spark, [str(p) for p in paths]).cache()
    return frames, ks.exchanges(frames).toPandas()


def test_tap_capture_pairs_in_order(spark, tmp_path):
    """One tap session, rotated every few records: repeated and wrapping ids, acks=0, a broker answering
    acks=0, a response that overtakes a request, one without a request."""
    top = 2**31 - 1
    w = capture.CaptureWriter(tmp_path, session=5, max_bytes=200)
    t = iter(range(10**6))
    conn1 = [(0, _md(7)[0]), (1, _md(7)[1]), (0, _md(7)[0]), (1, _md(7)[1]),  # id 7 twice
             (0, _md(top)[0]), (0, _md(-2**31)[0]), (1, _md(top)[1]), (1, _md(-2**31)[1]),  # the counter wraps
             (0, _produce(0, 8)), (0, _produce(-1, 9)), (1, _produced(9)),  # acks=0 gets nothing
             (0, _produce(1, 10)), (0, _produce(1, 11)), (1, _produced(11)),  # 10 overtaken
             (1, _produced(55))]  # an orphan
    conn2 = [(0, _produce(0, 1)), (1, _produced(1)), (0, _produce(0, 2)), (1, _produced(2))]  # Tansu's way
    for d, f in conn1:
        w.write(d, 1, next(t), f)
    for d, f in conn2:
        w.write(d, 2, next(t), f)
    w.close()
    assert len(w.files) > 3
    frames, ex = _exchanges(spark, [tmp_path / "*.kcap"])
    assert set(ex.capture) == {"tap-5"} and set(ex.conn) == {"tap-5/1", "tap-5/2"}
    one = ex[ex.conn == "tap-5/1"].sort_values("exchange")
    assert list(zip(one.correlation_id, one.pairing)) == [
        (7, "answered"), (7, "answered"), (top, "answered"), (-2**31, "answered"), (8, "no_response"),
        (9, "answered"), (10, "overtaken"), (11, "answered"), (55, "orphan")]
    assert one.decode_error.isna().all() and (one.latency_ns.dropna() > 0).all()
    answered = one[one.pairing == "answered"]
    assert (answered.response_ts_ns > answered.request_ts_ns).all()
    two = ex[ex.conn == "tap-5/2"]
    assert list(two.sort_values("exchange").pairing) == ["acks0_answered"] * 2
    assert two.decode_error.isna().all() and (two.api_name == "Produce").all()


def test_rotated_pcaps_two_captures_on_the_same_addresses_and_a_file_given_twice(spark, tmp_path):
    """One capture rotated as tcpdump -C names it, the same capture whole, a second capture reusing its
    address pair (and ids), and a copy of one file: each capture's exchanges exact, none merged or doubled."""
    a = pcaps.metadata_conversation("first", 40)
    b = pcaps.metadata_conversation("second", 25)
    pa_ = pcaps.conversation(a, segment=97)
    pb = pcaps.conversation(b, segment=131, isn=(1000, 5000), t0=1_700_000_000.0)  # same 4-tuple, same ISNs
    (tmp_path / "rot").mkdir()
    (tmp_path / "whole").mkdir()
    (tmp_path / "copy").mkdir()
    cuts = [0, 11, 12, 40, 77, len(pa_)]
    for n, (x, y) in enumerate(zip(cuts, cuts[1:])):
        pcaps.write(tmp_path / "rot" / f"kafka.pcap{n or ''}", pa_[x:y])
    pcaps.write(tmp_path / "whole" / "a.pcapng", pa_, ng=True)
    pcaps.write(tmp_path / "whole" / "b.pcap", pb)
    shutil.copy(tmp_path / "rot" / "kafka.pcap2", tmp_path / "copy" / "again.pcap")
    frames, ex = _exchanges(spark, [tmp_path / "rot", tmp_path / "whole", tmp_path / "copy", tmp_path / "whole" / "b.pcap"])
    assert ex.pairing.eq("answered").all() and ex.decode_error.isna().all()
    by_capture = Counter(c.rsplit("/", 1)[-1] for c in ex.capture)
    assert by_capture == {"kafka.pcap": 40, "a.pcapng": 40, "b.pcap": 25}
    assert ex.conn.nunique() == 3
    for name, conv in (("kafka.pcap", a), ("a.pcapng", a), ("b.pcap", b)):
        mine = ex[ex.capture.str.endswith("/" + name)].sort_values("exchange")
        assert list(mine.request_bytes) == [len(f) for d, f in conv if d == 0]
        assert list(mine.response_bytes) == [len(f) for d, f in conv if d == 1]
        assert set(mine.client_id) == {"first" if conv is a else "second"}
    from kcodec import spark as ks

    files = ks.files(frames).toPandas()
    assert len(files) == 8  # Spark lists b.pcap once though it was named twice
    dup = files[files.summary.str.contains("duplicate_of")]
    assert list(dup.source.str.rsplit("/", n=2).str[-2:].str.join("/")) == ["copy/again.pcap"]
    assert dup.summary.iloc[0].endswith('rot/kafka.pcap2"}')


def test_files_told_apart_by_their_heads_as_by_their_content(spark, tmp_path, monkeypatch):
    """``captures.identities`` (heads and lengths, content only for packet files of equal lengths) plans
    exactly what ``captures.identity`` over every file's content planned."""
    from kcodec.spark import captures, pipeline
    from pyspark.sql import functions as F

    w = capture.CaptureWriter(tmp_path / "tap", session=9, max_bytes=300)
    for corr in range(12):
        req, resp = _md(corr)
        w.write(capture.REQUEST, 1, corr, req)
        w.write(capture.RESPONSE, 1, corr, resp)
    w.close()
    (tmp_path / "odd").mkdir()
    shutil.copy(w.files[1], tmp_path / "odd" / "same.kcap")  # a copy: same header and length
    (tmp_path / "odd" / "cut.kcap").write_bytes(w.files[1].read_bytes()[:-5])  # same header, shorter
    (tmp_path / "odd" / "short.kcap").write_bytes(capture.MAGIC + b"\x00\x01")  # a header cut short
    (tmp_path / "odd" / "empty.pcap").write_bytes(b"")  # Spark's scans leave empty files out
    (tmp_path / "odd" / "tiny.bin").write_bytes(b"KCODE")
    (tmp_path / "pc").mkdir()
    first = pcaps.conversation(pcaps.metadata_conversation("first", 3))
    fifth = pcaps.conversation(pcaps.metadata_conversation("fifth", 3))
    pcaps.write(tmp_path / "pc" / "one.pcap", first)
    pcaps.write(tmp_path / "pc" / "two.pcap", fifth)  # the same length as one.pcap, other bytes
    pcaps.write(tmp_path / "odd" / "again.pcap", first)  # a copy of one.pcap
    pcaps.write(tmp_path / "odd" / "alone.pcap", pcaps.conversation(pcaps.metadata_conversation("alone", 4)))
    paths = [str(tmp_path / d) for d in ("tap", "odd", "pc")]

    listing = spark.read.format("binaryFile").load(paths)
    by_content = {r["path"]: r["digest"] for r in
                  listing.select("path", captures.identity(F.col("content")).alias("digest")).collect()}
    by_head = dict(pipeline._identities(spark, [(r["path"], r["length"]) for r in
                                                 listing.select("path", "length").collect()]))
    assert by_head.keys() == by_content.keys() and len(by_head) == len(w.files) + 8
    for path, ident in by_head.items():  # the same string, but for a packet file of a length of its own
        if ident.startswith("length:"):
            assert by_content[path].startswith("sha256:") and path.rsplit("/", 1)[1] not in ("one.pcap", "again.pcap")
        else:
            assert ident == by_content[path]
    assert by_head[next(p for p in by_head if p.endswith("again.pcap"))].startswith("sha256:")
    plan = captures.plan(list(by_head.items()))
    assert plan == captures.plan(list(by_content.items()))
    assert {frozenset(p.rsplit("/", 1)[1] for p in pair) for pair in plan.duplicates} == {
        frozenset({w.files[1].name, "same.kcap"}), frozenset({"one.pcap", "again.pcap"})}
    monkeypatch.setattr(captures, "heads", lambda *a: None)  # no JVM at hand (Spark Connect): digests, as before
    assert dict(pipeline._identities(spark, [(p, 0) for p in by_content])) == by_content


def test_heads_are_the_first_bytes(spark, tmp_path):
    from kcodec.spark import captures

    (tmp_path / "long").write_bytes(bytes(range(200)))
    (tmp_path / "short").write_bytes(b"abc")
    (tmp_path / "empty").write_bytes(b"")
    heads = captures.heads(spark, [(tmp_path / n).as_uri() for n in ("long", "short", "empty")])
    assert list(heads.values()) == [bytes(range(captures.HEAD)), b"abc", b""]
