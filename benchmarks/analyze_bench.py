"""`kcodec analyze` beside tshark's Kafka field extraction, on the same generated captures.

    .venv/bin/python benchmarks/analyze_bench.py [--runs 3] [--sizes 100k,200m,1g] [--work DIR]
    .venv/bin/python benchmarks/analyze_report.py --write docs/analyze.md   # the table, from the results

Records a real confluent-kafka capture (``analyze_capture.record``) and replicates it with distinct
connections to each size (the 100 KB case is a capture of its own, a short run of the same clients);
then, per run and size, runs `kcodec analyze FILE --out DIR` with its defaults (``local[*]``) and
``tshark -r FILE -d tcp.port==PORT,kafka -Y kafka -T fields -e ...`` (API key, version, correlation id,
the response's request frame), one after the other, the order alternating from run to run. Each is timed
wall-clock and its process tree's resident memory sampled every 100 ms (for kcodec: the Python driver,
the JVM and the Python workers; for tshark: tshark). Writes ``benchmarks/results/analyze.json``.
Not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import analyze_capture  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "analyze.json"
TSHARK_FIELDS = ("frame.number", "tcp.stream", "kafka.request_key", "kafka.api_version", "kafka.correlation_id",
                 "kafka.response_frame")


class PeakRSS:
    """Peak summed RSS of a process and its descendants, sampled every 100 ms."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
            except psutil.Error:
                continue

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.peak


def _timed(cmd: list[str], env: dict[str, str], stdout: Any) -> tuple[float, int, int]:
    """(wall seconds, peak RSS bytes, exit status) of one command."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    mem = PeakRSS(proc.pid)
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    peak = mem.stop()
    if proc.returncode:
        print(err[-3000:], file=sys.stderr)
    return wall, peak, proc.returncode


def run_kcodec(capture: Path, work: Path) -> dict[str, Any]:
    out = work / "kcodec-out"
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    wall, peak, rc = _timed([sys.executable, "-m", "kcodec", "analyze", str(capture), "--out", str(out)], env,
                            subprocess.DEVNULL)
    frames = None
    if rc == 0:
        import pyarrow.parquet as pq

        frames = sum(pq.ParquetFile(f).metadata.num_rows for f in (out / "tables" / "frames").glob("*.parquet"))
    return {"tool": "kcodec", "wall_s": round(wall, 2), "peak_rss_mb": round(peak / 1e6), "status": rc,
            "frames": frames}


def run_tshark(capture: Path, port: int, work: Path) -> dict[str, Any]:
    fields = [a for f in TSHARK_FIELDS for a in ("-e", f)]
    cmd = ["tshark", "-n", "-r", str(capture), "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "fields",
           *fields, "-E", "occurrence=a"]
    with open(work / "tshark.tsv", "w") as out:
        wall, peak, rc = _timed(cmd, dict(os.environ), out)
    lines = sum(1 for _ in open(work / "tshark.tsv"))
    return {"tool": "tshark", "wall_s": round(wall, 2), "peak_rss_mb": round(peak / 1e6), "status": rc,
            "packets_with_kafka": lines}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="100k,200m,1g", help="capture sizes (100k: a small capture of its own)")
    ap.add_argument("--work", type=Path, default=None, help="where the captures go (default: a temporary dir)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    from kcodec.spark.ranges import size

    work = args.work or Path(tempfile.mkdtemp(prefix="kcodec-analyze-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    base, port = analyze_capture.record(work / "base.pcap")
    small, small_port = analyze_capture.record(work / "small.pcap", messages=2_500)
    captures: dict[str, dict[str, Any]] = {}
    for name in args.sizes.split(","):
        if size(name) <= 1 << 20:
            captures[name] = {"path": small, "port": small_port, "bytes": small.stat().st_size}
        else:
            path = work / f"capture-{name}.pcap"
            info = analyze_capture.replicate(base, path, size(name), port)
            captures[name] = {"path": path, "port": port, **info}
        print(name, {k: v for k, v in captures[name].items() if k != "path"}, flush=True)
    tshark = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    runs: list[dict[str, Any]] = []
    for i in range(args.runs):
        for name, c in captures.items():
            tools = [lambda: run_kcodec(c["path"], work), lambda: run_tshark(c["path"], c["port"], work)]
            for run in (tools if i % 2 == 0 else tools[::-1]):
                r = run()
                r.update(run=i, size=name, bytes=c["bytes"], load_1m=round(os.getloadavg()[0], 2))
                runs.append(r)
                print(json.dumps(r), flush=True)
    import kcodec

    results = {
        "what": "kcodec analyze (defaults, local[*]) beside tshark's Kafka field extraction, same files, alternated",
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(), "backend": kcodec.BACKEND},
        "tshark": tshark, "base_capture_bytes": base.stat().st_size,
        "captures": {k: {n: v for n, v in c.items() if n != "path"} for k, c in captures.items()},
        "runs": runs,
    }
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"results: {args.out}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
