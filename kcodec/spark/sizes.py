"""The sizes of `kcodec analyze`'s work and their settings' parser, apart from ``ranges`` (which imports the
capture readers and pyarrow): the driver reads them before it forks the early child and starts Spark's JVM,
where importing ``ranges`` cost ~0.07 s of that JVM's start (``kcodec.spark.early``)."""

from __future__ import annotations

SPLIT_BYTES = 64 << 20          # a range of a packet capture file (spark.kcodec.splitBytes)
PARTITION_BYTES = 32 << 20      # input bytes per task of pass 2 (spark.kcodec.partitionBytes)
TASKS_PER_CORE = 2              # unless partitionBytes is set: pass 2's tasks at most this many per core
# Beside the early child (``kcodec.spark.early``), below this input pass 1 ends before Spark's tasks come (it reads
# ~1.3 GB/s a core where the JVM takes ~1.9 s), so the child runs pass 2's first partitions alone: pass 2 then has
# one partition more, so that the tasks that come late share the rest evenly (2 cores, alternating runs: 1 GB
# 2.97 s against 3.17, 200 MB alike; with it at 2 GB 4.69 against 4.55, at 4 GB 8.44 against 7.57: there they come
# first and the extra partition is left to run alone at the end).
EARLY_AHEAD_BYTES = 3 << 29     # 1.5 GiB
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def size(text: str) -> int:
    """Bytes from a size as Spark writes them: ``65536``, ``64k``, ``64m``, ``1g``."""
    t = str(text).strip().lower()
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(digits):]
    if not digits or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (expected e.g. 65536, 64k, 64m, 1g)")
    return int(float(digits) * _UNITS[unit])
