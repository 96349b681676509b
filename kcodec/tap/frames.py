"""One reader for every capture kind: Kafka frames with connection, direction and time.

``read_frames(data)`` takes a whole capture file's bytes: a ``.kcap`` from `kcodec tap` (checked by
its magic and version) or a pcap / pcapng (reassembled, see ``kcodec.tap.pcap``). Connection names
are unique across files: ``<session>:<conn>`` for tap captures (rotated files of one session share
them), ``client_ip:port-server_ip:port`` for packet captures.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from . import capture, pcap
from .pcap import Frame


def kind_of(head: bytes) -> str:
    if head[:8] == capture.MAGIC:
        return "kcap"
    if pcap.is_pcap(head):
        return "pcap"
    raise capture.CaptureError(f"not a capture: starts with {bytes(head[:8])!r} "
                               "(expected a kcodec capture, pcap or pcapng)")


def read_frames(data: bytes, ports: Optional[Iterable[int]] = None) -> tuple[list[Frame], dict[str, Any]]:
    """(frames in capture order, a summary: kind, counts, what reassembly skipped)."""
    kind = kind_of(data[:8])
    if kind == "pcap":
        frames, stats = pcap.read_pcap(data, ports)
        return frames, {"kind": kind, **stats.as_dict()}
    header = capture.parse_header(data)
    out: list[Frame] = []
    opened = closed = 0
    for rec in capture.iter_records(data):
        if rec.kind <= capture.RESPONSE:
            out.append(Frame(f"{header.session}:{rec.conn}", rec.kind, rec.ts_ns, rec.payload))
        elif rec.kind == capture.OPENED:
            opened += 1
        else:
            closed += 1
    return out, {"kind": kind, "session": header.session, "sequence": header.sequence, "frames": len(out),
                 "connections_opened": opened, "connections_closed": closed}
