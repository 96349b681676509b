"""CPU time and minor page faults of each kcodec Metadata v12 encode call, 1k and 10k (issue 31, point 4).

    python benchmarks/encode_faults.py [--alone] [--rounds 15] [BUILD.so ...]

By default the harness's rounds (benchmarks/test_metadata.py: kcodec, kio and kafka-python, in
``round_order``), each size in rounds of its own as the harness's cases are; ``--alone`` drops the peers.
Each kcodec call is measured by getrusage (user + system CPU, minor faults) around it: steadier than wall
time on a shared machine. Builds of ``kcodec/core/_fast`` given by path are loaded side by side (each with
its own prepared program) and take turns in the same rounds, for an A/B in one process.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib.util
import resource
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kcodec  # noqa: E402
import payloads  # noqa: E402
import test_metadata as tm  # noqa: E402
from kcodec.core.api import program_for  # noqa: E402
from kcodec.sizes.timing import round_order  # noqa: E402


def load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("kcodec.core._fast", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def usage() -> tuple[float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt


def calls(size: str, data: bytes, builds: list[ModuleType], alone: bool) -> dict[str, Callable[[], Any]]:
    fns = tm.codecs(tm.Case("encode", "metadata", size, 12), data)
    if builds:
        msg: Any = kcodec.decode(tm.CLASSES["metadata"], data, 12)
        prog = program_for(type(msg), 12)
        fns = {k: v for k, v in fns.items() if not k.startswith("kcodec")}
        for i, mod in enumerate(builds):
            own = copy.copy(prog)  # each build caches its own prepared plans in backend_cache
            object.__setattr__(own, "backend_cache", {})
            assert mod.encode(own, msg) == data
            fns[f"build{i}"] = lambda mod=mod, own=own: mod.encode(own, msg)  # type: ignore[misc]
    return {k: v for k, v in fns.items() if not alone or k.startswith(("kcodec", "build"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="*", help="paths of _fast extension builds to compare")
    ap.add_argument("--alone", action="store_true", help="kcodec's calls only, no peers between them")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    builds = [load(p) for p in args.builds]
    bodies = tm.make_bodies(payloads.payloads(("1k", "10k")))
    for size in ("1k", "10k"):
        fns = calls(size, bodies[("metadata", size, 12)], builds, args.alone)
        names = list(fns)
        for fn in fns.values():
            fn()  # warm-up, as the harness's check call
        gc.collect()
        got: dict[str, list[tuple[float, int]]] = {}
        for turn in range(args.rounds):
            for name in (names[i] for i in round_order(len(names), turn)):
                c0, f0 = usage()
                result = fns[name]()
                del result
                c1, f1 = usage()
                got.setdefault(name, []).append(((c1 - c0) * 1e3, f1 - f0))
        for name, s in got.items():
            if name.startswith(("kcodec", "build")):
                cpu, faults = [x[0] for x in s], [x[1] for x in s]
                print(f"{size:>4} {name:14} CPU ms median {statistics.median(cpu):6.2f} min {min(cpu):6.2f} "
                      f"max {max(cpu):6.2f} | faults median {statistics.median(faults):5.0f} max {max(faults)}")
                print("     per call (faults, CPU ms):", [(f, round(c, 1)) for c, f in s])
    return 0


if __name__ == "__main__":
    sys.exit(main())
