"""The capture format and the readers: .kcap round trips, pcap/pcapng reassembly, resynchronisation."""

from __future__ import annotations

import io

import pytest

import kcodec
from kcodec.messages import ApiVersionsRequest, MetadataRequest, MetadataResponse
from kcodec.tap import capture
from kcodec.tap.frames import read_frames

import pcap_writer as pcaps


def _metadata(n: int) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponse.Broker(node_id=1, host="b1", port=9092)],
        topics=[MetadataResponse.Topic(name=f"topic-{i}", partitions=[
            MetadataResponse.Partition(partition_index=p, leader_id=1, replica_nodes=[1], isr_nodes=[1])
            for p in range(3)]) for i in range(n)])


def conversation_frames(rounds: int = 4) -> list[tuple[int, bytes]]:
    """Requests and responses as a client and broker exchange them, some spanning many segments."""
    out = []
    for corr in range(rounds):
        out.append((0, kcodec.encode_request(MetadataRequest(topics=None), 12, corr, client_id="c1")))
        out.append((1, kcodec.encode_response(_metadata(5 + 20 * corr), 12, corr)))
    out.append((0, kcodec.encode_request(ApiVersionsRequest(), 0, 99, client_id="c1")))
    return out


def test_kcap_round_trip_and_rotation(tmp_path):
    w = capture.CaptureWriter(tmp_path, session=42, max_bytes=300)
    frames = conversation_frames(2)
    w.write(capture.OPENED, 7, 1, b"127.0.0.1:1 127.0.0.1:2")
    for i, (d, f) in enumerate(frames):
        w.write(d, 7, 100 + i, f)
    w.write(capture.CLOSED, 7, 999, b"client closed")
    w.close()
    assert len(w.files) > 2  # every frame here is larger than 300 bytes but the first: one per file
    got = []
    for path in sorted(tmp_path.glob("*.kcap")):
        data = path.read_bytes()
        fr, summary = read_frames(data)
        assert summary["session"] == 42
        got += [(f.direction, f.data, f.ts_ns, f.conn) for f in fr]
    assert [(d, f) for d, f, _, _ in got] == frames
    assert [t for _, _, t, _ in got] == [100 + i for i in range(len(frames))]
    assert {c for *_, c in got} == {"tap-42/7"}


def test_kcap_rejects_foreign_and_truncated_files(tmp_path):
    with pytest.raises(capture.CaptureError, match="not a capture"):
        read_frames(b"PK\x03\x04 zip file")
    w = capture.CaptureWriter(tmp_path, session=1)
    w.write(capture.REQUEST, 1, 5, conversation_frames(1)[0][1])
    w.close()
    data = w.files[0].read_bytes()
    with pytest.raises(capture.CaptureError, match="needs"):
        read_frames(data[:-3])
    bad_version = data[:8] + b"\x00\x09" + data[10:]
    with pytest.raises(capture.CaptureError, match="version 9"):
        read_frames(bad_version)
    with pytest.raises(capture.CaptureError, match="needs"):  # the reader that leaves payloads in the file
        list(capture.record_heads(io.BytesIO(data[:-3])))


def test_record_heads_say_where_each_payload_lies(tmp_path):
    w = capture.CaptureWriter(tmp_path, session=5)
    w.write(capture.OPENED, 3, 1, b"127.0.0.1:1 127.0.0.1:2")
    for i, (d, f) in enumerate(conversation_frames(3)):
        w.write(d, 3, 10 + i, f)
    w.close()
    data = w.files[0].read_bytes()
    whole = list(capture.iter_records(data))
    heads = list(capture.record_heads(io.BytesIO(data)))
    assert [(r.kind, r.conn, r.ts_ns) for r, _, _ in heads] == [(r.kind, r.conn, r.ts_ns) for r in whole]
    assert [data[at:at + n] for _, at, n in heads] == [r.payload for r in whole]


@pytest.mark.parametrize("ng", [False, True])
def test_pcap_in_order(tmp_path, ng):
    frames = conversation_frames()
    path = pcaps.write(tmp_path / "c.pcap", pcaps.conversation(frames), ng=ng)
    got, summary = read_frames(path.read_bytes(), ports=[9092])
    assert [(f.direction, f.data) for f in got] == frames
    assert {f.conn for f in got} == {"127.0.0.1:40000-127.0.0.2:9092"}
    assert summary["skipped_bytes"] == summary["gap_bytes"] == 0
    assert all(a.ts_ns <= b.ts_ns for a, b in zip(got, got[1:]))


def test_frames_whole_in_a_segment_are_the_segment_and_frames_cut_anywhere_are_the_same():
    """A frame that is a whole segment's payload is emitted as that payload (no copy through the buffer);
    frames several to a segment, or a segment ending inside one, come out as from byte-sized segments."""
    from kcodec.tap import pcap

    frames = conversation_frames()
    stream = b"".join(f for d, f in frames if d == 0)

    def cut(sizes):
        r = pcap.Reassembler([9092])
        r.segment("10.0.0.1", 40000, "10.0.0.2", 9092, 0, b"", syn=True, ack=False, ts_ns=0)
        seq, pos, out = 1, 0, []
        payloads = []
        for n in sizes:
            payload = stream[pos:pos + n]
            payloads.append(payload)
            r.out = []
            r.segment("10.0.0.1", 40000, "10.0.0.2", 9092, seq, payload, syn=False, ack=True, ts_ns=seq)
            out += r.out
            seq, pos = seq + len(payload), pos + len(payload)
        return out, r.stats, payloads

    requests = [f for d, f in frames if d == 0]
    bytewise, _, _ = cut([1] * len(stream))
    assert [f.data for f in bytewise] == requests
    whole, stats, payloads = cut([len(f) for f in requests])
    assert [f.data for f in whole] == requests and stats.skipped_bytes == 0
    assert all(f.data is p for f, p in zip(whole, payloads))
    for sizes in ([len(requests[0]) + len(requests[1]) + 3, 10 ** 6], [7, len(stream)], [len(stream)]):
        got, _, _ = cut(sizes)
        assert [f.data for f in got] == requests and all(type(f.data) is bytes for f in got), sizes


def test_a_frame_cut_by_segments_is_gathered_and_a_hole_in_it_is_counted():
    """A frame that segments cut is gathered from their payloads and joined once whole (one copy, not in
    and out of a buffer); a hole inside it drops exactly what was gathered (skipped) and what is missing
    (gap), and the stream resyncs on the next frame."""
    from kcodec.tap import pcap

    first, second = [f for d, f in conversation_frames() if d == 0][:2]
    a, b = len(first) // 3, 2 * len(first) // 3

    def run(pieces):
        r = pcap.Reassembler([9092])
        r.segment("10.0.0.1", 40000, "10.0.0.2", 9092, 0, b"", syn=True, ack=False, ts_ns=0)
        r.out = []
        for at, payload in pieces:
            r.segment("10.0.0.1", 40000, "10.0.0.2", 9092, 1 + at, payload, syn=False, ack=True, ts_ns=at)
        r.finish()
        return [f.data for f in r.out], r.stats

    got, stats = run([(0, first[:a]), (a, first[a:b]), (b, first[b:] + second[:5]), (len(first) + 5, second[5:])])
    assert got == [first, second] and stats.skipped_bytes == stats.gap_bytes == 0
    got, stats = run([(0, first[:a]), (b, first[b:] + second)])  # first[a:b] never came
    assert got == [second]
    assert (stats.gap_bytes, stats.skipped_bytes) == (b - a, a + len(first) - b)
    got, stats = run([(0, first[:a]), (a, first[a:b])])  # the capture ends inside the frame
    assert got == [] and stats.skipped_bytes == b and stats.gap_bytes == 0


def test_pcap_out_of_order_and_retransmitted(tmp_path):
    frames = conversation_frames()
    packets = pcaps.disorder(pcaps.conversation(frames, segment=200), swaps=12, duplicates=10)
    got, summary = read_frames(pcaps.write(tmp_path / "d.pcap", packets).read_bytes())  # ports inferred
    assert [(f.direction, f.data) for f in got] == frames
    assert summary["retransmitted_bytes"] > 0
    assert summary["skipped_bytes"] == 0


def test_pcap_two_connections_sequence_wrap(tmp_path):
    frames = conversation_frames(2)
    a = pcaps.conversation(frames, sport=40001, isn=((1 << 32) - 300, 7))  # client seq wraps
    b = pcaps.conversation(frames, sport=40002, t0=1_700_000_000.00005)
    packets = sorted(a + b, key=lambda p: p[0])
    got, _ = read_frames(pcaps.write(tmp_path / "two.pcap", packets).read_bytes(), ports=[9092])
    for port in (40001, 40002):
        mine = [(f.direction, f.data) for f in got if f.conn.startswith(f"127.0.0.1:{port}-")]
        assert mine == frames


def test_pcap_mid_stream_resynchronises(tmp_path):
    frames = conversation_frames(6)
    packets = pcaps.conversation(frames, segment=100, handshake=False)
    cut = 3  # the capture starts inside the first request's... and the first response's bytes
    got, summary = read_frames(pcaps.write(tmp_path / "m.pcap", packets[cut:]).read_bytes(), ports=[9092])
    assert summary["resyncs"] >= 1 and summary["skipped_bytes"] > 0
    whole = [(f.direction, f.data) for f in got]
    assert whole and whole == frames[len(frames) - len(whole):]  # a tail of the conversation, intact
    assert len(whole) >= len(frames) - 3


def test_pcap_lost_segment_is_skipped_and_counted(tmp_path):
    frames = conversation_frames(6)
    packets = pcaps.conversation(frames, segment=150)
    lost = 12
    got, summary = read_frames(pcaps.write(tmp_path / "l.pcap", packets[:lost] + packets[lost + 1:]).read_bytes(),
                               ports=[9092])
    assert summary["gap_bytes"] > 0
    got_frames = [(f.direction, f.data) for f in got]
    assert all(fr in frames for fr in got_frames)  # nothing invented, nothing garbled
    assert len(frames) - 3 <= len(got_frames) < len(frames)


@pytest.mark.parametrize("ng", [False, True])
def test_damaged_captures_give_frames_or_a_capture_error(tmp_path, ng):
    import random

    frames = conversation_frames()
    data = pcaps.write(tmp_path / "c.pcap", pcaps.conversation(frames), ng=ng).read_bytes()
    # A capture whose writer died mid-packet: the frames before the cut, and a word about it.
    got, summary = read_frames(data[:len(data) * 2 // 3], ports=[9092])
    assert 0 < len(got) < len(frames) and all((f.direction, f.data) in frames for f in got)
    # pcapng readers stop at the cut packet; pcap ones hand it over short, and its bytes are skipped.
    assert summary["stopped_early"].startswith("after packet") if ng else summary["skipped_bytes"] > 0
    rng = random.Random(5)
    for i in range(200):
        bad = bytearray(data[:rng.randrange(len(data))] if i % 2 else data)
        for _ in range(i % 7):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        try:
            read_frames(bytes(bad), ports=[9092])
        except capture.CaptureError:
            pass
    kcap = capture.CaptureWriter(tmp_path / "k", session=3)
    for d, f in frames:
        kcap.write(d, 1, 0, f)
    kcap.close()
    data = kcap.files[0].read_bytes()
    for i in range(200):
        bad = bytearray(data[:rng.randrange(len(data))] if i % 2 else data)
        for _ in range(i % 5):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        try:
            read_frames(bytes(bad))
        except capture.CaptureError:
            pass
