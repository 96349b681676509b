"""Pass 1 of a local `kcodec analyze` run done while Spark's JVM starts (issue 32; analyze16).

On a local master the driver waits 2-3 s for the JVM, mostly with a core idle. A forked child plans
the job from the local file system (no JVM: the same listing, heads and identities ``ranges.plan``
reads through Hadoop) and runs pass 1 (``segments.spill_ranges``, range after range, in bounded memory)
into the job's scratch directory. Once the context is up the driver plans the job through Spark as
always; only if that plan and pass 2's partition count equal the child's does it take the child's files
(``spilled``), else it discards them and runs pass 1 on Spark as before. So the tables are the ones
Spark's pass 1 gives, and any error (a missing file, a bad URI) is raised where it was raised before:
the child's own failures only send the job down the usual path.

After pass 1 the child goes on into pass 2 (analyze25): partition after partition, each claimed first by
an exclusively created file (``tasks.claim``), run as a Spark task runs it (``tasks.write_partition``) with
its tables' files written aside (``_early`` in the scratch) and its summaries sent to the driver. Once the
context is up the driver submits pass 2 as one Spark task a core (``tasks.write_claimed``), each claiming
partitions the same way, so the child and Spark's tasks share what is left as each comes free (no split is
fixed when the job is submitted). No partition is run twice or skipped, whatever the timing: the driver
moves the child's files into the tables and takes its summaries as a Spark task's (``results``), and a
partition the child failed in (or died in) is run on Spark after all, which raises any error.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
from typing import Any, Optional

from . import handover, storage

_GLOB = re.compile(r"[*?\[\]{}\\]")


def local_listing(paths: list[str]) -> Optional[list[tuple[str, int]]]:
    """``ranges.listing``'s (URI, length) pairs for plain local files and directories (no glob), or None
    where the file system's answer might differ (a glob, another scheme, a missing path)."""
    out: dict[str, int] = {}
    for given in paths:
        local = storage.local_path(given)
        if local is None or _GLOB.search(local):
            return None
        local = os.path.abspath(local)
        if os.path.isdir(local):
            entries = [(e.path, e.name) for e in os.scandir(local) if e.is_file()]
        elif os.path.isfile(local):
            entries = [(local, os.path.basename(local))]
        else:
            return None
        for path, name in entries:
            if not name.startswith(("_", ".")):  # hidden, as Hadoop's listing leaves them out
                out["file:" + path] = os.path.getsize(path)
    return sorted(out.items())


def _heads(paths: list[str]) -> dict[str, bytes]:
    from .captures import HEAD

    out = {}
    for p in paths:
        with storage.open_input(p) as f:
            out[p] = f.read(HEAD)
    return out


def _identities(listed: list[tuple[str, int]], heads: Optional[dict[str, bytes]]) -> list[tuple[str, str]]:
    from . import captures

    known, unread = captures.identities([(p, n, (heads or {})[p]) for p, n in listed])
    known.update(storage.digest(p) for p in unread)
    return list(known.items())


def _cores(master: str) -> int:
    """Spark's default parallelism on a local master: ``local[N]``'s N, else the cores this process may use."""
    m = re.fullmatch(r"local\[(\d+)(?:,\d+)?\]", master)
    if m:
        return int(m.group(1))
    if master == "local":
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _die_with_parent() -> None:
    """Linux: the child is killed if the driver dies without its ``finally`` (SIGKILL), not left writing."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(conn: Any, paths: list[str], scratch: str, settings: dict[str, str], master: str,
           ports: Optional[list[int]], frame_bytes: bool) -> None:
    _die_with_parent()
    try:
        from . import ranges, segments, tasks

        listed = local_listing(paths)
        if listed is None:
            conn.send(None)
            return
        p = ranges.plan_of(listed, _heads, _identities, _split(settings))
        given = settings.get("spark.kcodec.partitionBytes")
        cores = int(settings["spark.default.parallelism"]) if settings.get("spark.default.parallelism") \
            else _cores(master)
        n = p.partitions(ranges.size(given)) if given else p.partitions(ranges.PARTITION_BYTES, cores, early=True)
        storage.remove_dir(scratch)
        spilled = [item for r in p.ranges for item in segments.spill_ranges([r], scratch=scratch, partitions=n)]
        job = tasks.job_of(p, ports, f"{scratch}/{STAGED}", frame_bytes)
        conn.send((p, n, spilled, _job_key(job)))
    except BaseException:  # noqa: BLE001 (the driver runs pass 1 on Spark instead, which reports it)
        conn.send(None)
        return
    by_partition = segments.by_partition(spilled, n)
    claims = os.path.join(storage.local_path(scratch) or scratch, CLAIMS)
    try:
        os.makedirs(claims, exist_ok=True)
        for i in range(n):
            if not tasks.claim(claims, i):  # a Spark task's
                continue
            try:
                out = list(tasks.write_partition(by_partition[i], job, i))
            except BaseException:  # noqa: BLE001 (the driver runs it on Spark, which raises it there)
                conn.send(("failed", i, None))
                return
            conn.send(("done", i, out))
    except BaseException:  # noqa: BLE001 (Ctrl-C, the driver gone: what it did not receive, Spark runs)
        return


STAGED, CLAIMS = "_early", "_claims"  # in the scratch: the child's tables' files, the partitions' claims


def _job_key(job: Any) -> tuple[Any, ...]:
    """What of a ``tasks.Job`` the child's pass 2 must share with the driver's (not where the tables go)."""
    return (job.captures, job.files, job.ports, job.frame_bytes)


class Early:
    """The forked child doing plan, pass 1 and then pass 2's partitions as long as some are unclaimed
    (``start``); ``spilled`` waits for its pass 1 and hands its files over when its plan is the driver's;
    ``claims`` and ``results`` share pass 2 with it; ``end`` and ``close`` end it (by its pid) and remove what it left.
    ``pending``: the Python workers' daemon is started as soon as pass 1 is done (``handover``)."""

    def __init__(self, paths: list[str], scratch: str, settings: dict[str, str], master: str,
                 pending: bool = True, ports: Optional[list[int]] = None, frame_bytes: bool = False) -> None:
        ctx = multiprocessing.get_context("fork")
        self.scratch = scratch
        self._made = _missing_dirs(os.path.dirname(storage.local_path(scratch) or scratch))
        self._conn, child_conn = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_child, args=(child_conn, paths, scratch, settings, master, ports, frame_bytes),
                                 name="kcodec-early-passes", daemon=True)
        self._proc.start()
        child_conn.close()
        self._taken = False
        self._got: Any = None
        self._first = threading.Event()
        self._news = threading.Condition()
        self._outcomes: dict[int, Optional[list[tuple[str, str]]]] = {}  # pass 2's, by partition (None: failed)
        self._ended = False  # the child sends no more
        self.mine: list[int] = []  # pass 2's partitions not Spark's (``results``)
        # the workers' daemon started as the child's pass 1 ends, while the JVM still starts (``handover``)
        self.pending: Optional[handover.Pending] = None
        if pending:
            try:
                self.pending = handover.Pending(settings)
            except OSError:  # no socket here: Spark starts its daemon as before
                pass
        self._watch = threading.Thread(target=self._receive, name="kcodec-early-wait", daemon=True)
        self._watch.start()

    def _receive(self) -> None:
        try:
            self._got = self._conn.recv()
        except (EOFError, OSError):  # the child died
            self._got = None
        self._first.set()
        if self.pending is not None:
            self.pending.start()
        while self._got is not None:
            try:
                what, partition, out = self._conn.recv()
            except (EOFError, OSError):  # it ended (or died)
                break
            with self._news:
                self._outcomes[partition] = out if what == "done" else None
                self._news.notify_all()
        with self._news:
            self._ended = True
            self._news.notify_all()

    def spilled(self, plan: Any, partitions: int, scratch: str,
                job: Optional[Any] = None) -> Optional[list[tuple[int, Any]]]:
        """The child's pass-1 output, or None (the driver runs pass 1 on Spark, in a clean scratch).
        ``job``: the driver's ``tasks.Job``, which the child's pass 2 must share."""
        self._first.wait()
        got = self._got
        if (got is None or scratch != self.scratch or got[0] != plan or got[1] != partitions
                or (job is not None and got[3] != _job_key(job))):
            self.end()
            storage.remove_dir(self.scratch)
            return None
        self._taken = True
        return got[2]

    def claims(self) -> str:
        """The local directory where the child and Spark's tasks claim pass 2's partitions (``tasks.claim``)."""
        claims = os.path.join(storage.local_path(self.scratch) or self.scratch, CLAIMS)
        os.makedirs(claims, exist_ok=True)
        return claims

    def results(self, tables: str, mine: list[int]) -> dict[int, list[tuple[str, str]]]:
        """The child's pass-2 summaries by partition of those of ``mine`` (pass 2's partitions Spark's tasks did
        not write) it wrote, once it has ended each (waited for), and its files moved into ``tables``; a
        partition it failed in, or died in, or never claimed (a Spark task's that failed) is not among them."""
        self.mine = list(mine)
        with self._news:
            while not self._ended and any(i not in self._outcomes for i in self.mine):
                self._news.wait(0.5)
            done = {i: out for i, out in self._outcomes.items() if i in self.mine and out is not None}
        from .tasks import part_name

        staged = os.path.join(storage.local_path(self.scratch) or self.scratch, STAGED)
        tables = storage.local_path(tables) or tables
        for table in os.listdir(staged) if done and os.path.isdir(staged) else ():
            for i in done:
                name = part_name(i)
                if os.path.exists(os.path.join(staged, table, name)):
                    os.makedirs(os.path.join(tables, table), exist_ok=True)
                    os.replace(os.path.join(staged, table, name), os.path.join(tables, table, name))
        return done

    def end(self) -> None:
        """The child ended (killed if still running: its partitions not in ``results`` go to Spark)."""
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()

    def close(self) -> None:
        if self.pending is not None:  # first: a child killed below is not the cue to start it
            self.pending.close()
        self.end()
        self._watch.join()
        self._conn.close()
        if not self._taken:  # once taken, the pass removes the scratch itself
            storage.remove_dir(self.scratch)
            for d in self._made:  # and the directories the child made for it, if still empty
                try:
                    os.rmdir(d)
                except OSError:
                    break


def _missing_dirs(path: str) -> list[str]:
    """``path`` and its ancestors that do not exist yet, deepest first."""
    out = []
    while path and not os.path.exists(path):
        out.append(path)
        path = os.path.dirname(path)
    return out


def start(paths: list[str], tables: str, settings: dict[str, str], master: str,
          ports: Optional[list[int]] = None, frame_bytes: bool = False) -> Optional[Early]:
    """An ``Early`` for a local master, local tables and local inputs of at least one range, else None.
    Below a range pass 1 is a fraction of a second that the child's imports and second plan outweigh
    (100 KB, quiet machine: 4.13-4.65 s with it against 3.95-4.35 s without; 1 GB: 6.61-7.90 against
    7.12-8.11 s, eight alternating pairs)."""
    if not master.startswith("local") or storage.local_path(tables) is None:
        return None
    listed = local_listing(paths)
    if listed is None or sum(n for _, n in listed) < _split(settings):
        return None
    return Early(paths, f"{tables}/_shuffle", settings, master,
                 handover.wanted(settings) and os.environ.get("KCODEC_PRESTART", "1") != "0", ports, frame_bytes)


def _split(settings: dict[str, str]) -> int:
    from . import sizes

    given = settings.get("spark.kcodec.splitBytes")
    return sizes.size(given) if given else sizes.SPLIT_BYTES
