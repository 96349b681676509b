"""One reader for every capture kind: Kafka frames with connection, direction, time and position.

``read_frames(data)`` takes a whole capture file's bytes: a ``.kcap`` from `kcodec tap` (checked by
its magic and version) or a pcap / pcapng (reassembled, see ``kcodec.tap.pcap``). ``CaptureReader``
reads the files of one rotated capture in order, carrying TCP state from file to file.

Identity: every frame belongs to a capture and a connection within it. A tap capture is its session
(``tap-<session>``; its rotated files share it, and each connection the tap accepted has its own id);
a packet capture is named by whoever groups its files (``kcodec.spark`` uses the file set) and a
connection within it by its addresses, ``#n`` counting the times that 4-tuple opened anew (a SYN).
Connection names are ``<capture>/<connection>``. ``position`` orders the frames of a capture as they
crossed the wire: for tap files, ``sequence << 32 | record index``; for packet captures, the count of
frames before it in the capture's files.
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


def _qualified(name: str, conn: str) -> str:
    return f"{name}/{conn}" if name else conn


class CaptureReader:
    """Reads the files of one capture in order: ``read(data, last=...)`` per file, ``last`` for the final
    one. Tap files need no state between them (they rotate at record boundaries); packet captures do."""

    def __init__(self, name: str = "", ports: Optional[Iterable[int]] = None) -> None:
        self.name = name
        self.ports = sorted(ports) if ports else None
        self.position = 0
        self.files = 0
        self._reassembler: Optional[pcap.Reassembler] = None

    def read(self, data: bytes, last: bool = True) -> tuple[list[Frame], dict[str, Any]]:
        """(frames in capture order, a summary: kind, capture, counts, what reassembly skipped)."""
        self.files += 1
        if kind_of(data[:8]) == "kcap":
            return _read_kcap(data)
        if self._reassembler is None:
            self._reassembler = pcap.Reassembler(self.ports)
        raw, stats = pcap.read_pcap(data, self.ports, reassembler=self._reassembler, last=last)
        frames = [Frame(_qualified(self.name, f.conn), f.direction, f.ts_ns, f.data, self.position + i)
                  for i, f in enumerate(raw)]
        self.position += len(frames)
        return frames, {"kind": "pcap", "capture": self.name, "file_index": self.files - 1, **stats.as_dict()}

    def finish(self) -> tuple[list[Frame], dict[str, Any]]:
        """Frames still held when the capture's last file was not read with ``last`` (e.g. it failed)."""
        if self._reassembler is None:
            return [], {}
        r, self._reassembler = self._reassembler, None
        r.out = []
        r.finish()
        frames = [Frame(_qualified(self.name, f.conn), f.direction, f.ts_ns, f.data, self.position + i)
                  for i, f in enumerate(r.out)]
        self.position += len(frames)
        return frames, r.stats.as_dict()


def _read_kcap(data: bytes) -> tuple[list[Frame], dict[str, Any]]:
    header = capture.parse_header(data)
    name = f"tap-{header.session}"
    out: list[Frame] = []
    opened = closed = 0
    base = header.sequence << 32
    for i, rec in enumerate(capture.iter_records(data)):
        if rec.kind <= capture.RESPONSE:
            out.append(Frame(f"{name}/{rec.conn}", rec.kind, rec.ts_ns, rec.payload, base | i))
        elif rec.kind == capture.OPENED:
            opened += 1
        else:
            closed += 1
    return out, {"kind": "kcap", "capture": name, "session": header.session, "sequence": header.sequence,
                 "frames": len(out), "connections_opened": opened, "connections_closed": closed}


def read_frames(data: bytes, ports: Optional[Iterable[int]] = None, name: str = "") -> tuple[list[Frame], dict[str, Any]]:
    """(frames in capture order, a summary) of one whole capture file."""
    return CaptureReader(name, ports).read(data)
