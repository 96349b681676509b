"""Why columnar decode's median sits where it does in the interleaved rounds (docs/benchmarks.md).

    python benchmarks/columnar_modes.py [--size 1k] [--scan tables|names] [--rounds 41]

Two parts, both through the public API, each sample the call plus dropping its result:

1. The benchmark's own rounds (``interleaved_round``, the two taking turns to go first) with its two engines,
   samples split by what ran just before the compiled engine: the numpy fallback engine, or the compiled
   engine itself. Taking turns gives each predecessor to half of the rounds, so the
   median lands between the two groups.
2. The compiled engine after other work of known kind: nothing, reading a buffer, writing a buffer, the
   fallback engine. Reading leaves the caches clean; writing leaves them full of modified lines, which must
   be written back to memory before this decode's input and columns get their room.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from statistics import median
from time import perf_counter
from typing import Any, Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import payloads  # noqa: E402

from kcodec import columnar  # noqa: E402
from kcodec.messages import MetadataResponse  # noqa: E402
from kcodec.sizes.timing import interleaved_round  # noqa: E402


def _us(xs: list[float]) -> str:
    return f"median {median(xs) * 1e6:.0f} µs, min {min(xs) * 1e6:.0f} µs"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1k", choices=["1k", "10k"])
    ap.add_argument("--scan", default="tables", choices=["tables", "names"])
    ap.add_argument("--rounds", type=int, default=41)
    args = ap.parse_args(argv)
    data = payloads.payloads((args.size,))[(args.size, 12)]
    scan = columnar.tables if args.scan == "tables" else columnar.topic_names
    gb = len(data) / 1e9
    fns = {e: (lambda e=e: scan(MetadataResponse, data, 12, engine=e)) for e in ("cython", "python")}
    for fn in fns.values():
        fn()
    gc.collect()
    samples: dict[str, list[tuple[float, float]]] = {}
    for turn in range(args.rounds):
        interleaved_round(fns, samples, turn)
    paid = [s[0] for s in samples["cython"]]
    # round t runs [cython, python] when t is even, else [python, cython]: in odd rounds the fallback engine
    # ran just before; in even rounds from the second on, the compiled engine closed the round before
    after_python, after_itself = paid[1::2], paid[2::2]
    print(f"{args.scan}, Metadata v12 {args.size} ({len(data):,} bytes), {args.rounds} interleaved rounds:")
    print(f"  after the fallback engine: {_us(after_python)}")
    print(f"  after itself:              {_us(after_itself)}")
    print(f"  all rounds: {_us(paid)} = {gb / median(paid):.2f} GB/s by the median")

    big = np.ones(128 << 17, np.int64)  # 128 MiB

    def read(mb: int) -> Callable[[], Any]:
        return lambda: big[:mb << 17].sum()

    def write(mb: int) -> Callable[[], Any]:
        def fill() -> None:
            big[:mb << 17] = 2
        return fill

    before: dict[str, Optional[Callable[[], Any]]] = {
        "nothing": None, "reading 32 MiB": read(32), "writing 8 MiB": write(8), "writing 32 MiB": write(32),
        "writing 128 MiB": write(128), "the fallback engine": fns["python"]}
    print("  the compiled engine alone, after (21 rounds each):")
    for label, other in before.items():
        times = []
        for _ in range(21):
            if other is not None:
                r = other()
                del r
            t0 = perf_counter()
            r = fns["cython"]()
            del r
            times.append(perf_counter() - t0)
        print(f"    {label:20s} {_us(times)} = {gb / median(times):.2f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
