"""The native anchors: Rust's `kafka-protocol` crate and franz-go's `kmsg` decoding the benchmark's own
payloads (the Metadata v12 responses of 1,000 and 10,000 topics, the 1,000-record batch), timed by the
programs themselves and each call counted under callgrind.

    python benchmarks/native/run.py OUT [--rounds 41] [--no-callgrind]

Builds benchmarks/native/rust (cargo, from its Cargo.toml and Cargo.lock) and benchmarks/native/go (go,
from its go.mod and go.sum) into build/native/, writes the payloads (benchmarks/payloads.py
``native_files``), runs each program for ROUNDS timed calls of every case, then once per case under
``valgrind --tool=callgrind --toggle-collect=<its measured function>``; the figures go to
``OUT/native.native.part.json`` (a partial, benchmarks/figures/store.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
BUILD = ROOT / "build" / "native"
sys.path.insert(0, str(BENCH))

# name: (source folder, built program, callgrind's name of the measured function)
ANCHORS = {
    "rust kafka-protocol": ("rust", BUILD / "rust" / "release" / "kcodec-native-anchor", "kcb_measure"),
    "go kmsg": ("go", BUILD / "go-anchor", "main.kcbMeasure"),
}


def build() -> None:
    BUILD.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet", "--manifest-path",
                    str(HERE / "rust" / "Cargo.toml"), "--target-dir", str(BUILD / "rust")], check=True)
    subprocess.run(["go", "build", "-o", str(BUILD / "go-anchor"), "."], cwd=HERE / "go", check=True)


def versions() -> dict[str, str]:
    """The anchors' library versions, from the committed lock files, and the toolchains'."""
    out = {}
    lock = (HERE / "rust" / "Cargo.lock").read_text()
    m = re.search(r'name = "kafka-protocol"\nversion = "([^"]+)"', lock)
    if m:
        out["kafka-protocol (Rust)"] = m.group(1)
    m = re.search(r"github.com/twmb/franz-go/pkg/kmsg (v\S+)", (HERE / "go" / "go.mod").read_text())
    if m:
        out["franz-go kmsg (Go)"] = m.group(1)
    for tool, args in (("rustc", ["rustc", "--version"]), ("go", ["go", "version"])):
        got = subprocess.run(args, capture_output=True, text=True).stdout.split()
        if len(got) > 2:
            out[tool] = got[1] if tool == "rustc" else got[2]
    return out


def instructions(program: Path, function: str, folder: Path, case: str) -> int:
    """One call's instructions (after a warm-up call). Go's runtime preempts goroutines with signals, which
    callgrind cannot follow (an assertion in its signal handling): preemption by signal is turned off and
    one thread runs Go code; the collector's background work, on other threads, is not counted."""
    env = dict(os.environ, GODEBUG="asyncpreemptoff=1", GOMAXPROCS="1")
    with tempfile.TemporaryDirectory(prefix="kcodec-native-cg-") as d:
        out = Path(d) / "cg.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={function}",
                        f"--callgrind-out-file={out}", str(program), str(folder), "once", case],
                       check=True, capture_output=True, env=env)
        m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        return int(m.group(1)) if m else 0


def main(argv: list[str] | None = None) -> int:
    import payloads
    from figures import store

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--no-callgrind", action="store_true")
    args = ap.parse_args(argv)
    build()
    folder = payloads.native_files()
    sizes = {case: (folder / f"{case}.bin").stat().st_size for case in payloads.NATIVE_CASES}
    cases: dict[str, dict] = {c: {"id": c, "bytes": sizes[c], "rounds": args.rounds, "impls": {}}
                              for c in payloads.NATIVE_CASES}
    counting = not args.no_callgrind and shutil.which("valgrind") is not None
    for name, (_, program, function) in ANCHORS.items():
        got = json.loads(subprocess.run([str(program), str(folder), str(args.rounds)], check=True,
                                        capture_output=True, text=True).stdout)
        for case in payloads.NATIVE_CASES:
            figures = store.stats(got[case])
            if counting:
                figures["instructions"] = instructions(program, function, folder, case)
            cases[case]["impls"][name] = figures
    path = store.write_partial(Path(args.out), "native", "native", list(cases.values()), versions())
    print(f"native anchors -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
