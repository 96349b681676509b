"""`kcodec analyze CAPTURE... --out DIR [--master local[*]]`: captures -> Parquet tables and a report.

Writes ``DIR/tables/{frames,exchanges,batches,files}`` (Parquet; ``--tables URI`` puts them elsewhere, e.g. on
HDFS or S3) and ``DIR/report.md`` with its SVG charts, and prints a summary. Under spark-submit
(``kcodec/spark/submit.py``), leave ``--master`` out: the master spark-submit was given is used.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from kcodec.cli.progress import Progress


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("captures", nargs="+", help="capture files: paths, globs or Hadoop URIs (.kcap, pcap, pcapng)")
    p.add_argument("--out", required=True, help="directory for the report (and the tables unless --tables)")
    p.add_argument("--tables", help="where the Parquet tables go (default OUT/tables); any Hadoop URI")
    p.add_argument("--master", default=None, help="Spark master (default local[*], or spark-submit's)")
    p.add_argument("--ports", default="", help="Kafka ports for pcaps, comma-separated (default: inferred)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting (repeat), e.g. --conf spark.executor.memory=2g; kcodec's own: "
                        "spark.kcodec.splitBytes (64m, the byte ranges capture files are read in) and "
                        "spark.kcodec.partitionBytes (input bytes per task after the shuffle; by default 32m, "
                        "at most two tasks per core)")
    p.add_argument("--keep-frame-bytes", action="store_true",
                   help="keep every frame's bytes in the frames table (a `frame` column: a copy of the "
                        "captures' Kafka bytes, which no other table or the report needs)")
    p.add_argument("-v", "--verbose", action="store_true", help="let Spark's own log lines through")


class StageProgress:
    """The running Spark stages' task counts while Spark works: a bar per stage on a terminal (``bars``,
    a kcodec.cli.progress.Progress on a TTY), else a line per change, at most one a second."""

    def __init__(self, spark: Any, print_: Callable[..., None], bars: Optional[Progress] = None) -> None:
        from .pipeline import spark_context

        self.tracker = spark_context(spark).statusTracker()
        self.print = print_
        self.bars = bars if bars is not None and bars.enabled and bars.tty else None
        self._open: dict[int, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = None
        while not self._stop.wait(1.0):
            parts = []
            active = set(self.tracker.getActiveStageIds())
            for sid in sorted(active):
                info = self.tracker.getStageInfo(sid)
                if info is None:
                    continue
                if self.bars is not None:
                    if sid not in self._open:
                        self._open[sid] = self.bars.bar(info.numTasks, f"    Spark stage {sid}", "tasks")
                    self._open[sid].to(info.numCompletedTasks)
                parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks"
                             + (f" ({info.numActiveTasks} running)" if info.numActiveTasks else ""))
            for sid in [s for s in self._open if s not in active]:
                self._open.pop(sid).close()
            line = "; ".join(parts)
            if self.bars is None and line and line != last:
                self.print(f"    {line}")
                last = line

    def __enter__(self) -> "StageProgress":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        for bar in self._open.values():
            bar.close()


def analyze(spark: Any, captures: list[str], out: Path, tables: Optional[str] = None,
            ports: Optional[list[int]] = None, print_: Callable[..., None] = print,
            progress: Optional[Progress] = None, frame_bytes: bool = False,
            done: Optional[Callable[[], None]] = None, early: Optional[Any] = None) -> dict[str, Any]:
    """The whole job on a SparkSession or a SparkContext; returns the aggregates the report shows.
    ``progress``: where bars go on a terminal (kcodec.cli.progress.Progress); stage lines go to ``print_``
    otherwise. ``frame_bytes``: the frames table keeps the frames' bytes (``--keep-frame-bytes``).
    ``done``: called once Spark's part is over (the driver then names the batches' topics known by id), before
    the report, which needs Spark no more.
    ``early``: pass 1 already under way (``kcodec.spark.early``)."""
    import kcodec

    from . import pipeline, report

    tables = tables or str(out.resolve() / "tables")
    started = time.perf_counter()

    def step(n: int, what: str) -> None:
        print_(f"[{n}/3] {what} ({time.perf_counter() - started:.1f} s)", flush=True)

    with StageProgress(spark, print_, progress):
        step(1, f"reading {len(captures)} capture path(s) into {tables}: frames, exchanges, record batches")
        # on a local master the driver names the batches' topics once Spark stops (below); a cluster's job does it
        local = pipeline.is_local(spark)
        written = pipeline.write_tables(spark, captures, tables, ports, frame_bytes, early, named=not local)
        for path, summary in sorted(written["files"].items()):
            if summary.get("kind") == "empty" or (summary.get("error") and "duplicate_of" not in summary):
                print_(f"    {path}: {summary['error']}", flush=True)
        agg = written["aggregates"]
    if done is not None:
        done()
    step(2, f"{written['rows'].get('frames', 0)} frames, {written['rows'].get('exchanges', 0)} exchanges, "
            f"{written['rows'].get('batches', 0)} record batches written")
    step(3, f"writing the report to {out}")
    if local:  # on a local master no Spark job names the batches' topics: the driver does, while the JVM stops
        pipeline.name_batches(tables, written["topic_names"])
    path = report.write(agg, out, captures, kcodec.BACKEND)
    report.console(agg, print_)
    print_(f"report: {path}; tables: {tables}; {time.perf_counter() - started:.1f} s", flush=True)
    return agg


def conf_pairs(items: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` arguments as a dict (a clear error for one without ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"kcodec analyze: --conf expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def check_outputs(out: str, tables: Optional[str] = None) -> None:
    """A clear error before Spark starts when ``--out`` (or a local ``--tables``) cannot be a directory
    written here: a file of that name, or a file or an unwritable directory where it would be created."""
    from .storage import local_path

    for flag, path in (("--out", out), ("--tables", local_path(tables) if tables else None)):
        if path is None:
            continue
        if os.path.exists(path) and not os.path.isdir(path):
            raise SystemExit(f"kcodec analyze: {flag} {path} is a file, not a directory")
        parent = os.path.abspath(path)
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise SystemExit(f"kcodec analyze: {flag} {path} cannot be created: {parent} is a file")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise SystemExit(f"kcodec analyze: {flag} {path} cannot be written: no write permission in {parent}")


def run(args: Any) -> int:
    from importlib.util import find_spec

    if find_spec("pyspark") is None:  # (found, not imported: PySpark is imported while its JVM starts)
        raise SystemExit("kcodec analyze needs PySpark 4.3 (on Python 3.11 or later): "
                         "pip install 'kcodec[spark]'")
    from . import jvm, launch  # no PySpark: it and the passes' modules are imported while the JVM starts

    ports = [int(p) for p in args.ports.split(",") if p.strip()] if args.ports else None
    conf = conf_pairs(getattr(args, "conf", []) or [])
    check_outputs(args.out, getattr(args, "tables", None))
    under_submit = _under_spark_submit()
    master = args.master or (None if under_submit else "local[*]")
    local = bool(master and master.startswith("local"))
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's kcodec and pyarrow
    verbose = getattr(args, "verbose", False)
    if under_submit and not verbose:  # its JVM started with spark-submit's logging: errors only from here on
        conf.setdefault("spark.log.level", "ERROR")
    settings = {**launch.defaults(args.captures, master), **conf}
    archive = None
    launcher = None
    if local and not under_submit:  # the driver's JVM is started here: from the class archive (``jvm``)
        archive = jvm.Archive(settings, settings.get("spark.driver.extraJavaOptions", ""))
        launcher = jvm.Launcher(settings)  # and spark-class's launcher JVM before it, likewise
        if archive.options:
            settings["spark.driver.extraJavaOptions"] = " ".join(
                o for o in (settings.get("spark.driver.extraJavaOptions"), archive.options) if o)
    from .daemon import go_without

    go_without()  # the command uses neither pandas nor numpy: pyarrow and PySpark imported them (0.7-0.9 CPU s)
    early = None
    if local and not under_submit:  # plan and pass 1 in a forked child while the JVM starts: before any thread
        from . import early as early_

        tables = args.tables or str(Path(args.out).resolve() / "tables")
        early = early_.start(args.captures, tables, settings, master or "", ports,
                             getattr(args, "keep_frame_bytes", False))
        if early is not None and early.pending is not None:  # Spark's daemon hands over to it
            settings.update(early.pending.settings())
    first = None
    importer = threading.Thread(target=_import_ahead, daemon=True)
    try:
        launch_env = launcher.env if launcher else None
        if local and not under_submit:  # the JVM first (before any thread: its launch forks), then the imports
            first = launch.Started(master, not verbose, settings, launch_env)
        importer.start()  # while the JVM starts
        sc = launch.context(master, quiet=not verbose, conf=settings, env=launch_env, started=first)
        if launcher is not None:
            launcher.finish()  # (it exited before the driver's JVM started)
        if not verbose:
            sc.setLogLevel("ERROR")
        # a JVM started here exits once stopped (not after the command), unless it still writes the archive
        stopping = Stopping(sc, release=local and not under_submit and (archive is None or archive.writing is None))
        try:
            analyze(sc, args.captures, Path(args.out), args.tables, ports, progress=Progress(),
                    frame_bytes=getattr(args, "keep_frame_bytes", False), done=stopping.start, early=early)
        finally:
            stopping.join()
            if archive is not None and archive.writing is not None:
                print(f"saving Spark's classes for quicker starts (once): {archive.path}", flush=True)
                archive.finish(type(sc)._gateway)
    except BaseException as e:  # interrupted or failed at any point: the JVM started here goes too (launch.STARTED)
        if first is not None:
            first.close()
        launch.stop_jvms()
        for started in (archive, launcher):  # (a class archive its JVM began to write)
            if started is not None:
                started.discard()
        if importer.is_alive():  # an interpreter ending while a thread imports C extensions can crash (SIGSEGV)
            importer.join()
        if isinstance(e, launch.JvmExited):  # its own output has said why: no traceback of ours below it
            raise SystemExit(str(e)) from None
        raise
    finally:
        if early is not None:
            early.close()
    # The command ends here: what is left alive (PySpark, pyarrow, matplotlib) is frozen out of the collector,
    # whose last passes over it at the interpreter's exit took 0.3 s; it is all freed with the process.
    gc.freeze()
    return 0


class Stopping:
    """The context stopped in a thread while the report renders (``start``: the tables are written, nothing
    else runs on Spark): the JVM winds its scheduler, executor and Python workers down on its own core,
    0.2-0.5 s, while the driver draws the plots on the other, not after them. ``join`` waits for it (and
    stops the context here if ``start`` never came: the job failed), and raises what ``stop`` raised.
    ``release``: the JVM (started by this command) is then told to exit, not left until the command's
    process ends: its exit (shutdown hooks, temporary files; 0.4-0.8 s, holding the console's streams)
    overlaps the report instead of following it."""

    def __init__(self, sc: Any, release: bool = False) -> None:
        self.sc = sc
        self.release = release
        self.thread: Optional[threading.Thread] = None
        self.error: Optional[BaseException] = None

    def _run(self) -> None:
        try:
            stop(self.sc)
            if self.release:  # (nothing of the command calls the JVM after stop)
                from .jvm import let_exit
                let_exit(getattr(type(self.sc), "_gateway", None))
        except BaseException as e:  # noqa: BLE001 (raised again by join, in the command's thread)
            self.error = e

    def start(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="kcodec-stop-spark", daemon=True)
            self.thread.start()

    def join(self) -> None:
        if self.thread is None:
            stop(self.sc)
            return
        self.thread.join()
        if self.error is not None:
            raise self.error


def stop(sc: Any) -> None:
    """``sc.stop()`` without waiting for PySpark's accumulator server to wind down: its request handler
    polls its socket a second at a time and its loop half a second, so ``stop`` waited 0.5-1 s after the
    JVM had stopped, at the end of every run. `kcodec analyze` updates no accumulator, and the process ends
    right after: the server is told to stop and its daemon threads end with the process."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None and hasattr(server, "server_shutdown"):
        sc._accumulatorServer = None  # stop() shuts down only the server it still holds
        server.server_shutdown = True  # the handler leaves its loop at its next poll
        server.handle_error = _quiet  # or reads the JVM's closed socket first: nothing to say about it
    sc.stop()


def _quiet(*_: Any) -> None:
    pass


def _import_ahead() -> None:
    """What the passes and the report import (pyarrow and the rest of kcodec.spark, 0.2-0.3 CPU s), imported
    in a thread while Spark's JVM starts and the driver waits for it, not before the JVM is launched. An import
    that fails here is tried again where it is needed, which says what went wrong; one still under way there is
    waited for (Python's import lock). (pandas, which PySpark's numpy converters imported at the context's first
    call, is not imported at all: ``launch.numpy_converters``.)"""
    try:
        from . import pipeline, report  # noqa: F401
    except Exception:
        pass


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM and hands Python its gateway


def main(argv: Optional[list[str]] = None) -> int:
    """`kcodec analyze` from arguments (spark-submit runs ``kcodec/spark/submit.py``, which calls this)."""
    parser = argparse.ArgumentParser(prog="kcodec analyze")
    add_arguments(parser)
    return run(parser.parse_args(argv))

