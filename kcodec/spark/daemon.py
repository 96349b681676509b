"""PySpark's daemon for the Python workers of a local `kcodec analyze` (``spark.python.daemon.module``).

Spark puts its own copy of PySpark first on its Python workers' path: ``SPARK_HOME/python/lib/pyspark.zip``
(and py4j's zip). Python keeps no bytecode for modules imported from a zip, so the daemon and every worker
it forks compiled PySpark's modules from source again: 0.8 CPU s a process to import ``pyspark.worker``,
against 0.15 s from the installed package. Where that PySpark is installed as a package on the same path
(pip's layout: the zips lie inside the installed package), this daemon takes the zips off the path and runs
PySpark's own daemon; the workers it forks import the installed modules. Anywhere else the path is left as
it is. Before the first fork the daemon imports what every worker imports and what starts no thread
(``PRELOAD``: ``pyspark.worker`` and kcodec's decoders, about 0.2 CPU s): the workers inherit them instead of
importing them each. pyarrow (which starts a thread as it is imported: jemalloc's) is imported by the
workers after the fork, as PySpark's daemon requires. pandas and numpy are not imported at all (``go_without``).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Any
from importlib.machinery import PathFinder

PRELOAD = ("pyspark.worker", "kcodec", "kcodec.messages", "kcodec.records", "kcodec.tap.pcap",
           "kcodec.tap.pcapsplit", "kcodec.tap.segments")


def unzipped(path: list[str]) -> list[str]:
    """``path`` without the zips of a PySpark (and its py4j) that is installed on the rest of it: the
    ``.../pyspark/python/lib/*.zip`` of the package that ``import pyspark`` finds without them."""
    zips = [p for p in path if p.endswith(".zip") and os.path.basename(os.path.dirname(p)) == "lib"]
    rest = [p for p in path if p not in zips]
    spec = PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.origin:
        return path
    home = os.path.dirname(os.path.realpath(spec.origin))
    lib = os.path.join(home, "python", "lib")
    ours = [p for p in zips if os.path.dirname(os.path.realpath(p)) == lib]
    if not any(os.path.basename(p) == "pyspark.zip" for p in ours):
        return path
    if any(os.path.basename(p).startswith("py4j") for p in ours) and PathFinder.find_spec("py4j", rest) is None:
        ours = [p for p in ours if not os.path.basename(p).startswith("py4j")]
    return [p for p in path if p not in ours]


def preload(names: tuple[str, ...] = PRELOAD) -> None:
    """Import ``names`` in the daemon, once, for every worker it forks; what was made is frozen out of the
    collector (the workers' collections never traverse it, nor copy its pages). A module that does not import
    is left to the workers, which then say why."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    gc.freeze()


UNUSED = ("pandas", "numpy")  # what `kcodec analyze`'s processes never use, yet pyarrow and PySpark imported


class _Without:
    """A finder that says the packages ``names`` are not installed (``go_without``)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (kcodec analyze goes without it)", name=name)
        return None


def go_without(names: tuple[str, ...] = UNUSED) -> None:
    """Make pandas and numpy not importable in the workers and in `kcodec analyze`'s driver (and so in its
    early child). They run kcodec's own functions only (this daemon is `kcodec analyze`'s), none of which uses
    either, yet pyarrow imported pandas in each worker at its first ``pa.array`` of a Python list, only to ask
    whether the list was a pandas object (about 0.3 CPU s a worker), and numpy as it is imported itself (0.15-0.2
    CPU s in each process that imports pyarrow: the driver, its early child, this daemon). pyarrow, and
    PySpark where it asks, then take them for not installed. (A finder, not ``sys.modules["pandas"] = None``:
    pyarrow's compiled import takes that None for the module.) A package imported already is left importable."""
    missing = tuple(n for n in names if n not in sys.modules)
    if missing and not any(isinstance(f, _Without) for f in sys.meta_path):
        sys.meta_path.insert(0, _Without(missing))  # type: ignore[arg-type]


def save_coverage_per_task(pyspark_daemon: Any, modules: Any = sys.modules) -> None:
    """Under coverage (started in this daemon by the tests' ``[run] patch``, pyproject.toml), each worker saves
    its data after every task: a reused worker never exits by itself (the daemon's SIGHUP or Spark's SIGKILL
    ends it), so coverage's exit hooks never run in it. PySpark's own coverage runs wrap ``worker`` alike.
    Without coverage nothing changes."""
    coverage = modules.get("coverage")
    if coverage is None or coverage.Coverage.current() is None:
        return
    worker = pyspark_daemon.worker

    def saving(*args: Any) -> Any:
        try:
            return worker(*args)
        finally:
            cov = coverage.Coverage.current()  # the forked worker's own (``patch = fork``)
            if cov is not None:
                cov.save()

    pyspark_daemon.worker = saving


def main() -> None:
    if sys.argv[1:2] == ["--kcodec-pending"]:  # started ahead by the driver (``handover.Pending``)
        from .handover import serve

        serve(int(sys.argv[2]), int(sys.argv[3]))
        return
    handover = os.environ.get("KCODEC_DAEMON_HANDOVER")
    if handover:
        from .handover import hand_over

        if hand_over(handover):
            return
    sys.path[:] = unzipped(sys.path)
    go_without()
    preload()
    from pyspark import daemon

    save_coverage_per_task(daemon)
    daemon.manager()


if __name__ == "__main__":
    main()
