"""The pcap readers on what real captures do: exact timestamps, rotated files, answers without requests."""

from __future__ import annotations

import pytest

from kcodec.tap.frames import CaptureReader, read_frames

import pcap_writer as pcaps
from test_tap_readers import conversation_frames


def _packets(n: int = 3):
    return [pkt for _, pkt in pcaps.conversation(conversation_frames(n), segment=120)]


@pytest.mark.parametrize("kind, units, ns", [
    ("pcap-us", 1_700_000_001_000_000, 1_700_000_001_000_000_000),  # 1.000000 s: a float gave 999,936 ns
    ("pcap-us", 1_700_000_000_999_999, 1_700_000_000_999_999_000),
    ("pcap-ns", 1_700_000_000_123_456_789, 1_700_000_000_123_456_789),
    ("pcapng", 1_700_000_000_123_456_789, 1_700_000_000_123_456_789),
])
def test_timestamps_are_exact_integers(tmp_path, kind, units, ns):
    pkts = _packets()
    path = pcaps.write_exact(tmp_path / "t.cap", [(units + i, p) for i, p in enumerate(pkts)], kind)
    got, summary = read_frames(path.read_bytes(), ports=[9092])
    step = 1000 if kind == "pcap-us" else 1
    assert got and all(isinstance(f.ts_ns, int) for f in got)
    # Each frame carries the time of the packet that completed it: one of the packets' exact times.
    assert {f.ts_ns for f in got} <= {ns + i * step for i in range(len(pkts))}
    assert got[0].ts_ns - ns in {i * step for i in range(len(pkts))}
    assert summary["packets"] == len(pkts)


@pytest.mark.parametrize("tsresol, units, ns", [
    (6, 1_700_000_000_000_001, 1_700_000_000_000_001_000),  # microseconds, as tcpdump writes by default
    (0x80 | 30, (1_700_000_000 << 30) | (1 << 29), 1_700_000_000_500_000_000),  # 2^-30 s units
    (12, 1_700_000_000_000_123_456, 1_700_000_000_000_123),  # picoseconds: floored to ns
])
def test_pcapng_resolutions(tmp_path, tsresol, units, ns):
    path = pcaps.write_exact(tmp_path / "r.pcapng", [(units, p) for p in _packets(1)], "pcapng", tsresol)
    got, _ = read_frames(path.read_bytes(), ports=[9092])
    assert got and {f.ts_ns for f in got} == {ns}


@pytest.mark.parametrize("cuts", [[5], [3, 9, 17], list(range(2, 40, 3))])
@pytest.mark.parametrize("handshake", [True, False])
def test_a_rotated_capture_loses_nothing_at_its_boundaries(tmp_path, cuts, handshake):
    """Files cut anywhere (tcpdump -C cuts between packets): read in order, every frame comes back, the
    responses whose requests sit in the previous file too."""
    frames = conversation_frames(6)
    packets = pcaps.conversation(frames, segment=90, handshake=handshake)
    bounds = [0, *cuts, len(packets)]
    reader = CaptureReader("kafka.pcap", ports=[9092])
    got = []
    for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
        data = pcaps.write(tmp_path / f"kafka.pcap{n or ''}", packets[a:b]).read_bytes()
        fr, summary = reader.read(data, last=b == len(packets))
        got += fr
        assert summary["capture"] == "kafka.pcap" and summary["file_index"] == n
    assert [(f.direction, f.data) for f in got] == frames
    assert [f.position for f in got] == list(range(len(frames)))
    assert {f.conn for f in got} == {"kafka.pcap/127.0.0.1:40000-127.0.0.2:9092"}


def test_each_file_alone_loses_frames_at_the_boundary(tmp_path):
    """What the stitching prevents: the second file read on its own starts mid-frame."""
    frames = conversation_frames(6)
    packets = pcaps.conversation(frames, segment=90)
    cut = len(packets) // 2
    a = read_frames(pcaps.write(tmp_path / "a.pcap", packets[:cut]).read_bytes(), ports=[9092])[0]
    b = read_frames(pcaps.write(tmp_path / "b.pcap", packets[cut:]).read_bytes(), ports=[9092])[0]
    assert len(a) + len(b) < len(frames)


def test_responses_without_their_requests_are_kept(tmp_path):
    """A capture that starts after requests were sent: their answers are frames (orphans), not skipped."""
    frames = conversation_frames(6)
    packets = pcaps.conversation(frames, segment=100, handshake=False)
    # Drop the client's packets of the first three requests: their responses have no request.
    first_requests = sum(-(-len(f) // 100) for d, f in frames[:6] if d == 0)
    client = [p for p in packets if p[1][34:36] == (40000).to_bytes(2, "big")]
    dropped = {id(p) for p in client[:first_requests]}
    got, summary = read_frames(pcaps.write(tmp_path / "o.pcap", [p for p in packets if id(p) not in dropped])
                               .read_bytes(), ports=[9092])
    responses = [f.data for f in got if f.direction == 1]
    assert responses == [f for d, f in frames if d == 1]  # all six, the first three orphans
    assert [f.data for f in got if f.direction == 0] == [f for d, f in frames[6:] if d == 0]


def test_a_new_syn_on_the_same_addresses_is_a_new_connection(tmp_path):
    frames = conversation_frames(2)
    first = pcaps.conversation(frames, isn=(1000, 5000))
    again = pcaps.conversation(frames, isn=(900_000, 77_000), t0=1_700_000_100.0)
    reader = CaptureReader("c.pcap", ports=[9092])
    got = reader.read(pcaps.write(tmp_path / "c.pcap", first).read_bytes(), last=False)[0]
    got += reader.read(pcaps.write(tmp_path / "c.pcap1", again).read_bytes(), last=True)[0]
    conns = [f.conn for f in got]
    assert conns == ["c.pcap/127.0.0.1:40000-127.0.0.2:9092"] * len(frames) + \
        ["c.pcap/127.0.0.1:40000-127.0.0.2:9092#2"] * len(frames)
