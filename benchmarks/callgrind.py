"""Instruction counts of every benchmark case: the same calls as the timed ones (kcodec and each peer, same
payload, same process setup), each counted once under ``valgrind --tool=callgrind``.

    python benchmarks/callgrind.py OUT [--suites metadata,records] [--sizes 1k,10k,100k]

The child processes run under callgrind with collection off (``--collect-atstart=no``); each case's
function is called once to warm up, then once between ``kcb_start`` and ``kcb_stop``
(benchmarks/native/callgrind/marker.c, built here with the system's C compiler: zero the counters and
collect, then stop and dump them under a label), so each dump is one call plus dropping its result. An
empty call measured the same way is subtracted (the two ctypes calls' own cost). The counts go to
``OUT/<suite>.callgrind[-pure].part.json``
(partials, benchmarks/figures/store.py); the Metadata object cases run a second time under KCODEC_PURE=1
for the pure reference's counts. Instruction counts are repeatable where timings on a shared machine are not.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MARKER_C = HERE / "native" / "callgrind" / "marker.c"
BUILD = HERE.parent / "build" / "bench"


def marker() -> Path:
    """The marker library, built once (cc) into build/bench/."""
    out = BUILD / "kcb_marker.so"
    if not out.exists() or out.stat().st_mtime < MARKER_C.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-O1", "-shared", "-fPIC", "-o", str(out), str(MARKER_C)],
                       check=True)
    return out


Cases = Iterator[tuple[str, Callable[[], dict[str, Callable[[], Any]]]]]  # (case id, its functions made)


def metadata_cases(sizes: tuple[str, ...], pure: bool) -> Cases:
    import kcodec
    import payloads
    import test_metadata as tm

    bodies = tm.make_bodies(payloads.payloads(sizes))
    for case in tm.CASES:
        key = (case.message, case.size, case.version)
        if key not in bodies or (pure and case.operation not in ("decode", "encode", "encoded_size")):
            continue
        def make(case: tm.Case = case, data: bytes = bodies[key]) -> dict[str, Callable[[], Any]]:
            fns = tm.codecs(case, data)  # only the reference backend's figures come from the pure pass
            return {k: v for k, v in fns.items() if k == f"kcodec-{kcodec.BACKEND}"} if pure else fns
        yield f"{case.operation}[{case.id}]", make


def records_cases() -> Cases:
    import test_records as tr

    for op, size, codec in tr.CASES:
        def make(op: str = op, size: str = size, codec: Any = codec) -> dict[str, Callable[[], Any]]:
            data = tr.payload(op, size, codec)
            return {name: (lambda fn=fn: fn(data)) for name, fn in tr.implementations(op, codec).items()}
        yield tr.case_id((op, size, codec)), make


class Counter:
    """Counts calls in a process run under callgrind (``under_callgrind``): ``count(label, fn)`` calls ``fn``
    between the marker's start and stop, so that the dump labelled ``label`` holds that call alone."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(str(marker()))
        lib.kcb_stop.argtypes = [ctypes.c_char_p]
        self._start, self._stop = lib.kcb_start, lib.kcb_stop
        self.count("baseline", lambda: None)  # the marker calls' own cost, subtracted from every count

    def count(self, label: str, fn: Callable[[], Any]) -> None:
        name = label.encode()
        gc.collect()
        self._start()
        fn()  # its result is dropped at once, inside the counted region
        self._stop(name)


def child(suite: str, sizes: tuple[str, ...], pure: bool, only: str = "") -> None:
    """Under callgrind: every case's functions, each warmed up then counted once."""
    counter = Counter()
    cases = records_cases() if suite == "records" else metadata_cases(sizes, pure)
    for case_id, make in cases:
        if only and not re.search(only, case_id):
            continue
        for name, fn in make().items():
            fn()  # warm-up (also what the timed benchmark's check call does)
            counter.count(f"{case_id}|{name}", fn)


DESC = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.M)


def parse(folder: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in folder.glob("cg.out*"):
        text = path.read_text(errors="replace")
        label, total = DESC.search(text), TOTAL.search(text)
        if label and total:
            counts[label.group(1)] = int(total.group(1))
    return counts


def under_callgrind(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, int]:
    """{label: instructions} of each call a ``Counter`` counted in ``cmd`` (run under callgrind), less the
    baseline's."""
    with tempfile.TemporaryDirectory(prefix="kcodec-callgrind-") as d:
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={d}/cg.out",
                        *cmd], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        counts = parse(Path(d))
    base = counts.pop("baseline", 0)
    return {label: max(n - base, 0) for label, n in counts.items()}


def measure(suite: str, sizes: tuple[str, ...], pure: bool = False, only: str = "") -> dict[str, dict[str, int]]:
    """{case id: {implementation: instructions}} from one child under callgrind."""
    env = dict(os.environ, KCODEC_PURE="1") if pure else {k: v for k, v in os.environ.items() if k != "KCODEC_PURE"}
    counts = under_callgrind([sys.executable, __file__, "--child", "--suites", suite, "--sizes", ",".join(sizes),
                              "--only", only], env)
    out: dict[str, dict[str, int]] = {}
    for label, n in counts.items():
        case_id, name = label.rsplit("|", 1)
        out.setdefault(case_id, {})[name] = n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--suites", default="metadata,records")
    ap.add_argument("--sizes", default=os.environ.get("KCODEC_BENCH_SIZES", "1k,10k,100k"))
    ap.add_argument("--only", default="", help="a regular expression: only the case ids it finds")
    ap.add_argument("--child", action="store_true", help="(run under callgrind by measure)")
    args = ap.parse_args(argv)
    sizes = tuple(args.sizes.split(","))
    if args.child:
        child(args.suites, sizes, os.environ.get("KCODEC_PURE") == "1", args.only)
        return 0
    if shutil.which("valgrind") is None:
        print("callgrind: valgrind is not installed (apt-get install valgrind); no instruction counts",
              file=sys.stderr)
        return 1
    from figures import store

    out = Path(args.out)
    for suite in args.suites.split(","):
        passes = [False, True] if suite == "metadata" else [False]
        for pure in passes:
            got = measure(suite, ("1k",) if pure else sizes, pure, args.only)
            cases = [{"id": cid, "impls": {name: {"instructions": n} for name, n in impls.items()}}
                     for cid, impls in got.items()]
            path = store.write_partial(out, suite, "callgrind-pure" if pure else "callgrind", cases)
            print(f"callgrind: {sum(len(c['impls']) for c in cases)} counts -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
