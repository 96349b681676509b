"""Which files make one capture, in what order, and which are the same file given twice.

A tap file names its capture itself (the session in its header) and rotates at record boundaries, so
each is read on its own. A packet capture has no name inside it: the files of one rotated capture are
recognised by their names, as tcpdump writes them: in one directory, names equal once the digits are
set aside (``-C``: ``kafka.pcap``, ``kafka.pcap1``, ``kafka.pcap2``...; ``-G``: a strftime pattern,
``kafka-20261123-0822.pcap``...), ordered by their numbers. They are read in that order through one
reassembler, so a connection that crosses a boundary continues; a connection that opens anew (a SYN)
is a new one even on the same addresses. Give separate packet captures distinct names (or
directories): those are separate captures, never merged.

A file given twice (the same path, or a copy elsewhere) is read once, where it has the most company
(a copy inside its rotated set wins over a lone one): tap files are the same when their headers
(session and sequence) and lengths are, other files when their SHA-256 digests are.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Optional

from pyspark.sql import Column
from pyspark.sql import functions as F

from kcodec.tap import capture

_KCAP_HEX = capture.MAGIC.hex().upper()
_DIGITS = re.compile(r"\d+")


def identity(content: Column) -> Column:
    """A file's identity, computed where the file is (only this short string travels to the driver)."""
    head = F.substring(content, 1, capture.HEADER.size)
    return (F.when(F.hex(F.substring(content, 1, 8)) == F.lit(_KCAP_HEX),
                   F.concat(F.lit("kcap:"), F.hex(head), F.lit(":"), F.length(content).cast("string")))
            .otherwise(F.concat(F.lit("sha256:"), F.sha2(content, 256))))


def capture_set(path: str) -> str:
    """The rotated capture a packet file belongs to: its directory and its name without digits."""
    directory, name = posixpath.split(path)
    return posixpath.join(directory, _DIGITS.sub("#", name.rstrip("0123456789")))


@dataclass
class File:
    path: str
    capture: Optional[str]  # None: a tap file, read on its own; else the packet capture it belongs to
    rank: int
    last: bool


@dataclass
class Plan:
    files: list[File] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (path, the path read instead)


def plan(listing: list[tuple[str, str]]) -> Plan:
    """The files to read from (path, identity) pairs."""
    out = Plan()
    by_digest: dict[str, list[str]] = {}
    for path, digest in sorted(listing):
        by_digest.setdefault(digest, []).append(path)
    members: dict[str, int] = {}  # files per packet capture set, to keep a copy inside its rotation
    for path, digest in listing:
        if not digest.startswith("kcap:"):
            members[capture_set(path)] = members.get(capture_set(path), 0) + 1
    sets: dict[str, list[str]] = {}
    for digest, paths in by_digest.items():
        keep = paths[0] if digest.startswith("kcap:") else max(paths, key=lambda p: members[capture_set(p)])
        out.duplicates += [(p, keep) for p in paths if p != keep]
        if digest.startswith("kcap:"):
            out.files.append(File(keep, None, 0, True))
        else:
            sets.setdefault(capture_set(keep), []).append(keep)
    for name, paths in sets.items():
        paths.sort(key=_sort_key)
        out.files += [File(p, name, i, i == len(paths) - 1) for i, p in enumerate(paths)]
    return out


def _sort_key(path: str) -> tuple[tuple[int, object], ...]:
    # Numbers before text at one place (tcpdump -C: "x.pcap" before "x.pcap1"), each compared in kind.
    name = posixpath.basename(path)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)
