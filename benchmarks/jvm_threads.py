"""The CPU of `kcodec analyze`'s driver JVM, by thread and by phase, for JVM options run alternately.

    .venv/bin/python benchmarks/jvm_threads.py CAPTURE [--rounds 6] [--arm NAME=JAVA_OPTIONS ...] [--out DIR]

Each round runs ``python -m kcodec analyze CAPTURE`` once per arm (the order reversed every other round, after
one unmeasured run of each arm: a new set of options writes its own class archive on its first run, see
``kcodec.spark.jvm``), with ``--conf spark.driver.extraJavaOptions=<the arm's options>`` (``base``: the
command's own, ``launch.QUICK_JVM``). Every 20 ms it reads the CPU of the JVM (the driver's ``java`` child)
and of each of its threads (``/proc/PID/task/*/stat``, by thread name); the command's phases are stamped by
wrapping ``launch.context`` (start -> context up), ``pipeline._one_pass`` (the passes run on Spark) and
``analyze.stop``. One JSON line a run; a summary by arm at the end (ticks of 10 ms). The CPU of a thread
that ends between two reads is lost to its thread but not to the JVM's total.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kcodec.spark.launch import QUICK_JVM  # noqa: E402

# Run in the command's process: stamps on stderr, then `kcodec analyze` as `python -m kcodec analyze` runs it.
STAMPED = """
import functools, sys, time
def stamped(mod, name):
    f = getattr(mod, name)
    @functools.wraps(f)
    def g(*a, **k):
        print(f"@{time.time():.3f} {name} >", file=sys.stderr, flush=True)
        try: return f(*a, **k)
        finally: print(f"@{time.time():.3f} {name} <", file=sys.stderr, flush=True)
    setattr(mod, name, g)
from kcodec.spark import analyze, launch, pipeline
for mod, name in ((launch, "context"), (pipeline, "_one_pass"), (analyze, "stop")): stamped(mod, name)
sys.exit(analyze.main(sys.argv[1:]))
"""


def _ticks(path: str) -> int:
    fields = open(path).read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _group(name: str) -> str:
    return re.sub(r"[#-]?\d+$", "#", name)  # "Thread-7", "C1 CompilerThre" ... one row per kind


def _at(series: list[tuple[float, int]], t: float) -> int:
    value = 0
    for ts, ticks in series:
        if ts > t:
            break
        value = ticks
    return value


def run(capture: str, java_options: str, out: str, label: str) -> dict[str, Any]:
    """One `kcodec analyze`: its JVM's ticks in all and by phase and thread kind."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [sys.executable, "-c", STAMPED, capture, "--out", out,
           "--conf", f"spark.driver.extraJavaOptions={java_options}"]
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    jvm: list[tuple[float, int]] = []
    threads: dict[str, tuple[str, list[tuple[float, int]]]] = {}
    done = threading.Event()

    def poll() -> None:
        pid = None
        while not done.is_set():
            t = time.time()
            try:
                if pid is None:
                    for child in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split():
                        if open(f"/proc/{child}/comm").read().strip() == "java":
                            pid = child
                if pid is not None:
                    jvm.append((t, _ticks(f"/proc/{pid}/stat")))
                    for tid in os.listdir(f"/proc/{pid}/task"):
                        name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
                        ticks = _ticks(f"/proc/{pid}/task/{tid}/stat")
                        threads.setdefault(tid, (name, []))[1].append((t, ticks))
            except OSError:
                pass  # a thread or the JVM ended between two reads
            done.wait(0.02)

    poller = threading.Thread(target=poll)
    poller.start()
    err = proc.communicate()[1]
    wall = time.time() - t0
    done.set()
    poller.join()
    stamps = [(float(line[1:].split()[0]), line.split(None, 1)[1]) for line in err.splitlines() if line.startswith("@")]
    first = {what: t for t, what in reversed(stamps)}
    last = {what: t for t, what in stamps}
    marks = [("start", t0), ("context up", last.get("context <")), ("passes in", first.get("_one_pass >")),
             ("passes out", last.get("_one_pass <")), ("stopped", last.get("stop <")), ("end", time.time() + 1)]
    marks = [(m, t) for m, t in marks if t is not None]
    phases = {}
    for (a, ta), (b, tb) in zip(marks, marks[1:]):
        by: collections.Counter[str] = collections.Counter()
        for name, series in threads.values():
            by[_group(name)] += _at(series, tb) - _at(series, ta)
        phases[f"{a} -> {b}"] = {"jvm": _at(jvm, tb) - _at(jvm, ta), **{k: v for k, v in by.most_common() if v}}
    total: collections.Counter[str] = collections.Counter()
    for name, series in threads.values():
        total[_group(name)] += series[-1][1]
    return {"arm": label, "status": proc.returncode, "wall_s": round(wall, 2), "load_1m": os.getloadavg()[0],
            "jvm_ticks": jvm[-1][1] if jvm else None, "threads": {k: v for k, v in total.most_common() if v},
            "phases": phases, **({"stderr": err[-2000:]} if proc.returncode else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--arm", action="append", default=[], help="NAME=JAVA_OPTIONS (base is always run)")
    ap.add_argument("--out", default="/tmp/kcodec-jvm-threads")
    args = ap.parse_args()
    arms = {"base": QUICK_JVM, **dict(a.split("=", 1) for a in args.arm)}
    for name, options in arms.items():  # unmeasured: the arm's class archive
        run(args.capture, options, args.out, name)
    got: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    for i in range(args.rounds):
        for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
            r = run(args.capture, arms[name], args.out, name)
            got[name].append(r)
            print(json.dumps(r), flush=True)
    for name, runs in got.items():
        ticks = sorted(r["jvm_ticks"] or 0 for r in runs)
        walls = sorted(r["wall_s"] for r in runs)
        print(f"{name}: JVM ticks {ticks} (mean {statistics.mean(ticks):.1f}); wall {walls}; "
              f"load {min(r['load_1m'] for r in runs):.1f}-{max(r['load_1m'] for r in runs):.1f}")
    shutil.rmtree(args.out, ignore_errors=True)


if __name__ == "__main__":
    main()
