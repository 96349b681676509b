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
(session and sequence) and lengths are, other files when their SHA-256 digests are. Telling them apart
reads each file's first bytes only (``heads``): a tap file's identity is its header and length, and a
packet file whose length no other packet file has can be no copy, so only packet files of equal lengths
have their content digested (``identities``) before the files are read for their frames.
"""

from __future__ import annotations

import posixpath
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from kcodec.tap import capture

if TYPE_CHECKING:
    from pyspark.sql import Column

_KCAP_HEX = capture.MAGIC.hex().upper()
_DIGITS = re.compile(r"\d+")
HEAD = capture.HEADER.size  # the first bytes of a file that say whether it is a tap file, and which
HEAD_READERS = 8  # files whose heads the driver reads at once (each a round trip on remote storage)


def identity(content: Column) -> Column:
    """A file's identity from its content, computed where the file is (only this short string travels to
    the driver). ``identities`` gives the same string from less where it can. (PySpark is imported here, not
    with the module: `kcodec analyze`'s early child plans with this module and never needs it, ~0.25 CPU s.)"""
    from pyspark.sql import functions as F

    head = F.substring(content, 1, HEAD)
    return (F.when(F.hex(F.substring(content, 1, 8)) == F.lit(_KCAP_HEX),
                   F.concat(F.lit("kcap:"), F.hex(head), F.lit(":"), F.length(content).cast("string")))
            .otherwise(F.concat(F.lit("sha256:"), F.sha2(content, 256))))


def identities(files: list[tuple[str, int, bytes]]) -> tuple[dict[str, str], list[str]]:
    """From (path, length, first HEAD bytes) of every file listed: the identities known without the
    content, and the paths whose content must be digested (``identity``). A tap file's identity is
    ``identity``'s, from its header; a packet file whose length no other packet file shares is a copy of
    none, so a name of its length (distinct from every digest) groups it as its digest would: alone."""
    known: dict[str, str] = {}
    by_length: dict[int, list[str]] = {}
    for path, length, head in files:
        if head[:8] == capture.MAGIC:
            known[path] = f"kcap:{head[:HEAD].hex().upper()}:{length}"
        else:
            by_length.setdefault(length, []).append(path)
    unread: list[str] = []
    for length, paths in by_length.items():
        if len(paths) == 1:
            known[paths[0]] = f"length:{length}"
        else:
            unread += paths
    return known, unread


def heads(spark: Any, paths: list[str], size: int = HEAD) -> Optional[dict[str, bytes]]:
    """The first ``size`` bytes of each file (fewer for a shorter file), read by the driver through the
    session's (or context's) Hadoop file systems, so any URI Spark reads; None for a session without a JVM
    at hand (Spark Connect)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return None
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]

    def head(path: str) -> bytes:
        p = jvm.org.apache.hadoop.fs.Path(path)
        stream = p.getFileSystem(conf).open(p)
        try:
            return bytes(stream.readNBytes(size))  # fewer at the end; a byte[] comes back as Python bytes
        finally:
            stream.close()

    with ThreadPoolExecutor(HEAD_READERS) as pool:
        return dict(zip(paths, pool.map(head, paths)))


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
