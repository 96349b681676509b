"""The driver's plan of a job: which files, which captures, which byte ranges each task reads.

The inputs are listed through the session's Hadoop file systems (any URI Spark reads; a directory
gives its files, hidden ones, named ``_*`` or ``.*``, left out as Spark does), each file's first bytes
tell what it is (``captures.heads``), and ``captures.plan`` groups them into captures and leaves out
copies. A packet capture file is cut into ranges of ``split`` bytes (``spark.kcodec.splitBytes``, 64 MiB
by default), each read by its own task (``kcodec.tap.pcapsplit``); a tap file is one range. What
cannot be read at all (an empty file, one that is no capture) gets its row in the ``files`` table
here, without a task.

After the job, ``check`` compares the ranges of each file: each must have started where the one before
it stopped, and no pcapng range may have met a section or interface block past the file's header.
A file that fails is read again as one range (``Plan.unsplit``), so no split can misread a file.
"""

from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from kcodec.tap import capture
from kcodec.tap.frames import kind_of

from . import captures
from .sizes import EARLY_AHEAD_BYTES, PARTITION_BYTES, SPLIT_BYTES, TASKS_PER_CORE, size  # noqa: F401 (kept here too)

@dataclass
class Plan:
    captures: list[str] = field(default_factory=list)               # capture names, by index
    files: dict[tuple[int, int], str] = field(default_factory=dict)  # (capture, rank or sequence) -> path
    ranges: list[dict[str, Any]] = field(default_factory=list)      # segments.RANGES rows
    file_rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> summary of a file no task reads
    lengths: dict[str, int] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)   # path -> capture, file_index of files read

    @property
    def input_bytes(self) -> int:
        return sum(self.lengths.get(r["path"], 0) for r in self.ranges if r["index"] == 0)

    def partitions(self, partition_bytes: int = PARTITION_BYTES, cores: Optional[int] = None,
                   early: bool = False) -> int:
        """Pass 2's tasks: one per ``partition_bytes`` of input, at most ``TASKS_PER_CORE`` per core when
        ``cores`` is given (the default size): a pass-2 task's memory does not grow with its input (it
        streams its connections), while each task costs its own Arrow file per range of pass 1, a
        scheduled task and a Python call, so on few cores fewer, larger tasks do the same work for less.
        ``early``: pass 2 is shared by a task a core and the early child (``kcodec.spark.early``), so at
        most one partition each, ``cores + 1``, and all end about together: 4 partitions on 2 cores left
        the fourth to run alone once the three others were done (the last 10 s of a 10 GB run on one core).
        Below ``EARLY_AHEAD_BYTES`` the child is through pass 1 and into pass 2 before the tasks come, and
        one partition more (``cores + 2``) leaves them less to wait for at the end."""
        n = max(1, math.ceil(self.input_bytes / max(1, partition_bytes)))
        if not cores:
            return n
        if early:
            return min(n, cores + (2 if self.input_bytes < EARLY_AHEAD_BYTES else 1))
        return min(n, max(1, cores * TASKS_PER_CORE))


def listing(spark: Any, paths: list[str]) -> list[tuple[str, int]]:
    """(URI, length) of every file the paths name (globs expanded, directories listed), empty ones too."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: Spark's own listing (which leaves empty files out)
        return [(r["path"], r["length"]) for r in
                spark.read.format("binaryFile").load(list(paths)).select("path", "length").collect()]
    conf = spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    out: dict[str, int] = {}
    for given in paths:
        p = jvm.org.apache.hadoop.fs.Path(given)
        fs = p.getFileSystem(conf)
        statuses = fs.globStatus(p)
        if not statuses:
            raise FileNotFoundError(f"no capture file at {given}")
        for st in statuses:
            children = fs.listStatus(st.getPath()) if st.isDirectory() else [st]
            for c in children:
                name = c.getPath().getName()
                if c.isFile() and not name.startswith(("_", ".")):
                    out[c.getPath().toString()] = int(c.getLen())
    return sorted(out.items())


def plan(spark: Any, paths: list[str], split: int = SPLIT_BYTES, unsplit: frozenset[str] = frozenset()) -> Plan:
    """The job's plan over ``paths``; the files in ``unsplit`` are read as one range each."""
    from .pipeline import _identities

    return plan_of(listing(spark, list(paths)), lambda ps: captures.heads(spark, ps),
                   lambda listed, heads: _identities(spark, listed, heads), split, unsplit)


Heads = Callable[[list[str]], Optional[dict[str, bytes]]]
Identities = Callable[[list[tuple[str, int]], Optional[dict[str, bytes]]], list[tuple[str, str]]]


def plan_of(listed: list[tuple[str, int]], heads_of: Heads, identities_of: Identities, split: int = SPLIT_BYTES,
            unsplit: frozenset[str] = frozenset()) -> Plan:
    """``plan`` from a listing and the ways to read files' heads and identities (through Spark, or
    ``early``'s without it)."""
    out = Plan(lengths=dict(listed))
    nonempty = [(p, n) for p, n in listed if n > 0]
    for p, n in listed:
        if n == 0:
            out.file_rows[p] = {"kind": "empty", "error": "the file is empty (0 bytes): no capture in it"}
    heads = heads_of([p for p, _ in nonempty]) or {}
    readable: list[tuple[str, int]] = []
    for p, n in nonempty:
        head = heads.get(p)
        if head is not None:
            try:
                kind = kind_of(head)
                if kind == "kcap":
                    capture.parse_header(head)
            except capture.CaptureError as e:
                out.file_rows[p] = {"error": f"CaptureError: {e}"}
                continue
        readable.append((p, n))
    chosen = captures.plan(identities_of(readable, heads or None))
    for path, first in chosen.duplicates:
        out.file_rows[path] = {"duplicate_of": first}
    index: dict[str, int] = {}
    for f in chosen.files:
        head = heads.get(f.path, b"")
        if f.capture is None:  # a tap file: its session names the capture, its sequence orders it
            try:
                header = capture.parse_header(head)
                name, rank = f"tap-{header.session}", header.sequence
            except capture.CaptureError:
                name, rank = posixpath.basename(f.path), 0
            kind = "kcap"
        else:
            name, rank, kind = f.capture, f.rank, "pcap"
        cid = index.setdefault(name, len(index))
        out.files[(cid, rank)] = f.path
        out.meta[f.path] = {"capture": name, "file_index": rank}
        length = out.lengths[f.path]
        step = length if kind == "kcap" or f.path in unsplit else max(1, split)
        for i, start in enumerate(range(0, length, step)):
            out.ranges.append({"capture": cid, "path": f.path, "rank": rank, "kind": kind, "index": i,
                               "start": start, "end": min(length, start + step), "size": length})
    out.captures = sorted(index, key=index.__getitem__)
    return out


def check(summaries: list[dict[str, Any]]) -> set[str]:
    """The files whose ranges do not join up (a false boundary) or met late pcapng headers: read whole."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for s in summaries:
        by_path.setdefault(s["path"], []).append(s)
    bad = set()
    for path, parts in by_path.items():
        parts.sort(key=lambda s: s["index"])
        if len(parts) < 2:
            continue
        if any(s.get("late_header") for s in parts):
            bad.add(path)
        for prev, cur in zip(parts, parts[1:]):
            if prev.get("error") or cur.get("error"):
                continue
            if cur.get("first") != prev.get("stop"):
                bad.add(path)
    return bad


ADDED = ("packets", "tcp_segments", "not_tcp", "undecodable_packets", "frames", "retransmitted_bytes", "gap_bytes",
         "skipped_bytes", "resyncs", "connections_opened", "connections_closed")


def file_summaries(plan: Plan, ranges: list[dict[str, Any]], reassembly: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One summary per file (the ``files`` table's): its ranges' and its reassembly's figures added up."""
    out: dict[str, dict[str, Any]] = {}
    for path, row in plan.file_rows.items():
        out[path] = dict(row, bytes=plan.lengths.get(path, 0))
    for r in sorted(ranges, key=lambda s: (s["path"], s["index"])):
        s = out.setdefault(r["path"], {"bytes": plan.lengths.get(r["path"]), **plan.meta.get(r["path"], {}),
                                       "ranges": 0})
        s["ranges"] += 1
        for k in ("kind", "session", "sequence"):
            if k in r:
                s.setdefault(k, r[k])
        for k in ADDED:
            if k in r:
                s[k] = s.get(k, 0) + r[k]
        for k in ("error", "stopped_early"):
            if r.get(k) and not s.get(k):
                s[k] = r[k]
    for r in reassembly:
        s = out.setdefault(r["path"], {"bytes": plan.lengths.get(r["path"]), **plan.meta.get(r["path"], {})})
        for k in ADDED:
            if k in r and k != "tcp_segments":
                s[k] = s.get(k, 0) + r[k]
    for s in out.values():
        if s.get("kind") == "pcap":
            for k in ADDED[:9]:
                s.setdefault(k, 0)
            s.setdefault("stopped_early", "")
    return out


def as_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, sort_keys=True)
