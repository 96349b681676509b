"""Decode and encode times of real payloads, per backend, each backend in its own process.

Applications never import a backend: the parent writes the payloads to a folder with a manifest and
runs ``python -m kcodec.sizes.timing MANIFEST`` once with the default backend and once with
``KCODEC_PURE=1`` (when the default is the Cython one). The child reports ``kcodec.BACKEND`` and, per
payload, the median time to decode all its bodies and to encode them again, each call counted with the
dropping of its result, in interleaved rounds (the re-encoding is checked). ``interleaved`` is the one
way kcodec times codecs: the showcase's table and the benchmarks use it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from time import perf_counter
from typing import Any, Callable, Mapping, NamedTuple, Sequence


class Payload(NamedTuple):
    """``bodies`` of one message class at one version (several for paged responses), under ``label``."""
    label: str
    class_name: str
    version: int
    bodies: Sequence[bytes]


class Paid(NamedTuple):
    """One codec's seconds over interleaved rounds: ``total`` is the median of the call plus dropping its
    result (what a user pays, steady state), ``call`` of the call alone (the result still alive); the
    ``_min`` twins are the least disturbed rounds (on a loaded machine a preemption outweighs a call)."""
    total: float
    call: float
    total_min: float
    call_min: float


def round_order(n: int, turn: int) -> list[int]:
    """The indices ``0..n-1`` in the order of round ``turn``: a Williams design, in which every index runs
    right after every other equally often over ``n`` rounds (``2n`` when ``n`` is odd). What one codec
    leaves behind (caches, allocator state, objects to free) then weighs on each of the others alike; a
    plain rotation keeps the cyclic order, so a codec would run right after the same neighbour in nearly
    every round."""
    if n < 2:
        return list(range(n))
    first, low, high = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...: every difference between neighbours once
        if len(first) % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = n if n % 2 == 0 else 2 * n
    row, mirrored = turn % rows % n, turn % rows >= n
    order = [(i + row) % n for i in first]
    return order[::-1] if mirrored else order


def interleaved_round(fns: Mapping[str, Callable[[], Any]], samples: dict[str, list[tuple[float, float]]],
                      turn: int = 0) -> None:
    """One round: every function called once (in ``round_order``, so no codec runs right after one
    neighbour more often than after another), each sample (call + drop, call alone) appended to
    ``samples[name]``."""
    names = list(fns)
    for name in (names[i] for i in round_order(len(names), turn)):
        fn = fns[name]
        t0 = perf_counter()
        result = fn()
        t1 = perf_counter()
        del result
        t2 = perf_counter()
        samples.setdefault(name, []).append((t2 - t0, t1 - t0))


def medians(samples: Mapping[str, Sequence[tuple[float, float]]]) -> dict[str, Paid]:
    return {name: Paid(median(s[0] for s in got), median(s[1] for s in got), min(s[0] for s in got),
                       min(s[1] for s in got)) for name, got in samples.items()}


def interleaved(fns: Mapping[str, Callable[[], Any]], rounds: int) -> dict[str, Paid]:
    """Median costs of each function over ``rounds`` interleaved rounds, after one warm-up round:
    load drifts on a shared machine hit every codec alike, and ratios between them stay honest."""
    interleaved_round(fns, {})
    samples: dict[str, list[tuple[float, float]]] = {}
    for turn in range(rounds):
        interleaved_round(fns, samples, turn)
    return medians(samples)


def _child(manifest: Path) -> int:
    import kcodec

    spec = json.loads(manifest.read_text())
    out: dict[str, Any] = {"backend": kcodec.BACKEND, "results": {}}
    for entry in spec["payloads"]:
        cls = kcodec.message_class(name=entry["class"])
        version = entry["version"]
        bodies = [(manifest.parent / f).read_bytes() for f in entry["files"]]
        msgs: list[Any] = [kcodec.decode(cls, b, version) for b in bodies]
        if [kcodec.encode(m, version) for m in msgs] != bodies:
            print(f"{entry['label']}: re-encoding differs from the payload", file=sys.stderr)
            return 1
        paid = interleaved({"decode": lambda: [kcodec.decode(cls, b, version) for b in bodies],
                            "encode": lambda: [kcodec.encode(m, version) for m in msgs]}, spec["repeat"])
        out["results"][entry["label"]] = {"decode": paid["decode"].total, "encode": paid["encode"].total}
    json.dump(out, sys.stdout)
    return 0


def _run_child(manifest: Path, pure: bool, timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("KCODEC_PURE", None)
    if pure:
        env["KCODEC_PURE"] = "1"
    proc = subprocess.run([sys.executable, "-m", "kcodec.sizes.timing", str(manifest)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"timing child failed ({proc.returncode}): {proc.stderr.strip()}")
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def time_backends(payloads: Sequence[Payload], repeat: int = 3, timeout: float = 600.0,
                  backends: Sequence[str] = ("cython", "python")) -> dict[str, dict[str, dict[str, float]]]:
    """``{backend: {label: {"decode": s, "encode": s}}}`` for every backend that runs here (of those asked)."""
    with tempfile.TemporaryDirectory(prefix="kcodec-timing-") as tmp:
        d = Path(tmp)
        entries = []
        for k, p in enumerate(payloads):
            files = []
            for j, body in enumerate(p.bodies):
                name = f"{k}-{j}.bin"
                (d / name).write_bytes(body)
                files.append(name)
            entries.append({"label": p.label, "class": p.class_name, "version": p.version, "files": files})
        manifest = d / "manifest.json"
        manifest.write_text(json.dumps({"repeat": repeat, "payloads": entries}))
        out: dict[str, dict[str, dict[str, float]]] = {}
        if set(backends) != {"python"}:  # the install's default backend: the compiled one when built
            first = _run_child(manifest, pure=False, timeout=timeout)
            if first["backend"] in backends:
                out[first["backend"]] = first["results"]
        if "python" in backends and "python" not in out:
            out["python"] = _run_child(manifest, pure=True, timeout=timeout)["results"]
        return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m kcodec.sizes.timing MANIFEST.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(_child(Path(sys.argv[1])))
