"""`kcodec analyze` beside tshark's Kafka field extraction, on the same generated captures: one run appended to
benchmarks/results/analyze.jsonl (suite ``analyze``, the format of benchmarks/figures/store.py), whose table
in docs/analyze.md benchmarks/figures/analyze.py generates.

    make bench-analyze                                   # a run, then every figure regenerated
    .venv/bin/python benchmarks/analyze_bench.py [--rounds 2] [--sizes 100k,200m,1g,10g] [--work DIR] [--dry-run]

Records a real confluent-kafka capture (``analyze_capture.record``) and replicates it with distinct
connections to each size (the 100 KB case is a capture of its own, a short run of the same clients); then,
round by round and size by size, runs `kcodec analyze FILE --out DIR` with its defaults (``local[*]``) and
``tshark -r FILE -d tcp.port==PORT,kafka -Y kafka -T fields -e ...`` (API key, version, correlation id, the
response's request frame), one after the other, the order alternating from round to round. Each run is
measured for:

- wall time;
- CPU seconds, user + system, of the tool and every process it started: this process is their subreaper
  (Linux's ``PR_SET_CHILD_SUBREAPER``), so that the JVM and the Python workers, which may outlive kcodec's
  driver, are reaped here and counted by ``getrusage(RUSAGE_CHILDREN)``; the children of a process that
  ignores SIGCHLD (PySpark's daemon, whose children are the Python workers) are reaped by the kernel, their
  CPU time lost to getrusage, so theirs is sampled from /proc every 100 ms (``Sampler``); on a shared
  machine the CPU seconds move far less than the wall time;
- peak memory: the summed resident memory of the process tree, sampled every 100 ms; and each process's own
  peak (the kernel's high-water mark, ``VmHWM``), the largest of each kind kept (``process_peak_mb``: the
  command (kcodec's driver), its forks, the JVMs, Spark's Python workers), which is what issue 32 bounds
  ("peak memory of driver and each executor independent of the file's size").

One unmeasured `kcodec analyze` of the small capture comes first, so that the runs measured start as a
user's second run does (from Spark's class archive, kcodec.spark.jvm). Not a test: nothing here asserts a
speed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analyze_capture  # noqa: E402
from figures import store  # noqa: E402

SUITE = "analyze"
TSHARK_FIELDS = ("frame.number", "tcp.stream", "kafka.request_key", "kafka.api_version", "kafka.correlation_id",
                 "kafka.response_frame")
PR_SET_CHILD_SUBREAPER = 36


class Sampler:
    """Every 100 ms: the summed resident memory of a process and its descendants (its peak kept), and the CPU
    seconds of each descendant whose parent ignores SIGCHLD. The kernel reaps those by itself and drops their
    CPU time, so ``getrusage(RUSAGE_CHILDREN)`` never sees it: PySpark's daemon ignores SIGCHLD, and its
    Python workers, which do most of `kcodec analyze`'s work, were left out of the CPU seconds that way.
    ``unreaped_cpu`` is their CPU time as last sampled (a process loses at most its last 100 ms)."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self.unreaped: dict[int, float] = {}
        self.kinds: dict[int, str] = {}
        self.own_peaks: dict[int, int] = {}  # each process's high-water mark (bytes), as last sampled
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
            except psutil.Error:
                continue
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                    if self.kinds.get(p.pid, "other") == "other":  # (Spark's scripts exec their JVM)
                        self.kinds[p.pid] = _kind(p, self.proc)
                    self.own_peaks[p.pid] = _high_water(p.pid) or self.own_peaks.get(p.pid, 0)
                    if p is not self.proc and _ignores_sigchld(p.ppid()):
                        t = p.cpu_times()
                        self.unreaped[p.pid] = t.user + t.system + t.children_user + t.children_system
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def process_peaks(self) -> dict[str, int]:
        """The largest own peak (MB) of each kind of process in the tree."""
        out: dict[str, int] = {}
        for pid, peak in self.own_peaks.items():
            kind = self.kinds[pid]
            out[kind] = max(out.get(kind, 0), round(peak / 1e6))
        return out

    def stop(self, reaped: set[int]) -> tuple[int, float]:
        """(peak resident bytes, CPU seconds of the descendants the kernel reaped by itself): those left to
        this subreaper after all (``reaped``, their parent gone first) are counted by getrusage instead."""
        self._stop.set()
        self._t.join()
        return self.peak, sum(cpu for pid, cpu in self.unreaped.items() if pid not in reaped)


def _high_water(pid: int) -> int:
    """A process's peak resident memory so far (bytes; ``VmHWM``), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _kind(p: Any, root: Any) -> str:
    """What a process of the tree is: the command itself ("command": kcodec's driver), a fork of it ("command
    fork": kcodec's early child), a JVM, one of Spark's Python workers (PySpark's daemon and its forks), or
    another process."""
    try:
        if p.pid == root.pid:
            return "command"
        name, cmdline = p.name(), p.cmdline()
        if name == "java" or (cmdline and os.path.basename(cmdline[0]) == "java"):
            return "JVM"
        if "kcodec.spark.daemon" in cmdline or "pyspark.daemon" in cmdline:
            return "worker"
        if p.ppid() == root.pid and cmdline == root.cmdline():
            return "command fork"
    except Exception:  # gone meanwhile (psutil.Error), or its cmdline unreadable
        pass
    return "other"


def _ignores_sigchld(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGCHLD (its children are then reaped by the kernel, their CPU time lost)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)
    except OSError:
        pass
    return False


def subreaper() -> None:
    """Make this process the subreaper of its descendants, so that ``measured`` counts those that outlive
    their parents (Linux only)."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("cannot become the child subreaper (Linux only): the CPU seconds would miss processes")


def _reap_all() -> set[int]:
    """Wait for every child, those of the tool's tree reparented to this subreaper included; their pids."""
    reaped = set()
    while True:
        try:
            reaped.add(os.waitpid(-1, 0)[0])
        except ChildProcessError:
            return reaped


def measured(cmd: list[str], env: dict[str, str], stdout: Any) -> dict[str, Any]:
    """Wall seconds, CPU seconds of the whole process tree, peak RSS and exit status of one command."""
    _reap_all()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid)
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    peak, unreaped = sampler.stop(_reap_all())
    peaks = sampler.process_peaks()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) + unreaped
    if proc.returncode:
        print(err[-3000:], file=sys.stderr)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "peak_rss_mb": round(peak / 1e6),
            "process_peak_mb": peaks, "status": proc.returncode, "load_1m": round(os.getloadavg()[0], 2)}


def run_kcodec(capture: Path, work: Path) -> dict[str, Any]:
    out = work / "kcodec-out"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    got = measured([sys.executable, "-m", "kcodec", "analyze", str(capture), "--out", str(out)], env,
                   subprocess.DEVNULL)
    if got["status"] == 0:
        import pyarrow.parquet as pq

        got["frames"] = sum(pq.ParquetFile(f).metadata.num_rows for f in (out / "tables" / "frames").glob("*.parquet"))
    return got


def run_tshark(capture: Path, port: int, work: Path) -> dict[str, Any]:
    fields = [a for f in TSHARK_FIELDS for a in ("-e", f)]
    cmd = ["tshark", "-n", "-r", str(capture), "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "fields",
           *fields, "-E", "occurrence=a"]
    with open(work / "tshark.tsv", "w") as out:
        got = measured(cmd, dict(os.environ), out)
    got["frames"] = sum(1 for _ in open(work / "tshark.tsv"))  # packets with a Kafka frame
    return got


def case(name: str, capture: dict[str, Any], runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One size's case in the results file's shape: each tool's wall times as the samples, beside them its
    CPU seconds, peak memory, loads and frames, run by run."""
    impls = {}
    for tool, mine in runs.items():
        ok = [r for r in mine if r["status"] == 0]
        if not ok:
            continue
        impls[tool] = store.stats([r["wall_s"] for r in ok], "s", cpu_s=[r["cpu_s"] for r in ok],
                                  peak_rss_mb=[r["peak_rss_mb"] for r in ok],
                                  process_peak_mb=[r.get("process_peak_mb", {}) for r in ok],
                                  load_1m=[r["load_1m"] for r in ok],
                                  frames=ok[0].get("frames"), failed=len(mine) - len(ok))
    params = {k: v for k, v in capture.items() if k != "path"}
    return {"id": f"analyze[{name}]", "params": {"size": name, **params}, "bytes": capture["bytes"], "impls": impls}


def versions() -> dict[str, str]:
    out = {}
    line = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    if line:
        out["tshark"] = line[0].split("(Git")[0].replace("TShark (Wireshark)", "").strip()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[:1]
    if java:
        out["java"] = java[0].split('"')[1] if '"' in java[0] else java[0]
    try:
        import pyspark

        out["pyspark"] = pyspark.__version__
    except ImportError:
        pass
    return out


def bytecode() -> None:
    """kcodec's modules compiled to bytecode, as pip compiles an installed package's: where PYTHONDONTWRITEBYTECODE
    is set (as on this project's machines) a module edited since `make` compiled the checkout is not written again,
    and every process of the command would compile it, run after run (~0.1 CPU s a run at 100 KB for all of them),
    which no installed kcodec pays."""
    import compileall

    import kcodec

    compileall.compile_dir(os.path.dirname(kcodec.__file__), quiet=1)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="runs of each tool on each size (alternating)")
    ap.add_argument("--sizes", default="100k,200m,1g,10g", help="capture sizes (100k: a small capture of its own)")
    ap.add_argument("--work", type=Path, default=None, help="where the captures go (default: a temporary dir)")
    ap.add_argument("--results", type=Path, default=store.RESULTS)
    ap.add_argument("--dry-run", action="store_true", help="print the run instead of appending it")
    args = ap.parse_args(argv)
    from kcodec.spark.ranges import size

    subreaper()
    bytecode()
    work = args.work or Path(tempfile.mkdtemp(prefix="kcodec-analyze-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    head = store.describe()  # commit, machine and load before the captures are recorded and measured
    base, port = analyze_capture.record(work / "base.pcap")
    small, small_port = analyze_capture.record(work / "small.pcap", messages=2_500)
    captures: dict[str, dict[str, Any]] = {}
    for name in args.sizes.split(","):
        if size(name) <= 1 << 20:
            captures[name] = {"path": small, "port": small_port, "bytes": small.stat().st_size}
        else:
            path = work / f"capture-{name}.pcap"
            captures[name] = {"path": path, "port": port, **analyze_capture.replicate(base, path, size(name), port)}
        print(name, {k: v for k, v in captures[name].items() if k != "path"}, flush=True)
    print("warm-up (not measured):", run_kcodec(small, work), flush=True)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {name: {"kcodec": [], "tshark": []} for name in captures}
    for i in range(args.rounds):
        for name, c in captures.items():
            tools = [("kcodec", lambda: run_kcodec(c["path"], work)),
                     ("tshark", lambda: run_tshark(c["path"], c["port"], work))]
            for tool, run in (tools if i % 2 == 0 else tools[::-1]):
                r = run()
                runs[name][tool].append(r)
                print(name, tool, r, flush=True)
    import kcodec

    peers = {**head["peers"], **versions()}
    result = {**head, "suite": SUITE, "peers": peers, "backend": kcodec.BACKEND,
              "base_capture_bytes": base.stat().st_size,
              "cases": [case(name, c, runs[name]) for name, c in captures.items()]}
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    if args.dry_run:
        import json

        print(json.dumps(result, indent=1))
        return 0
    args.results.mkdir(parents=True, exist_ok=True)
    import json

    with (args.results / f"{SUITE}.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"appended a run to {args.results / f'{SUITE}.jsonl'} ({len(store.runs(SUITE, args.results))} kept)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
