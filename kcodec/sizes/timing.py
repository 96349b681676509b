"""Decode and encode times of real payloads, per backend, each backend in its own process.

Applications never import a backend: the parent writes the payloads to a folder with a manifest and
runs ``python -m kcodec.sizes.timing MANIFEST`` once with the default backend and once with
``KCODEC_PURE=1`` (when the default is the Cython one). The child reports ``kcodec.BACKEND`` and, per
payload, the best time to decode all its bodies and to encode them again (the re-encoding is checked).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence


class Payload(NamedTuple):
    """``bodies`` of one message class at one version (several for paged responses), under ``label``."""
    label: str
    class_name: str
    version: int
    bodies: Sequence[bytes]


def best_time(fn: Callable[[], Any], repeat: int, min_seconds: float = 0.005) -> float:
    """Best seconds per call over ``repeat`` rounds, each round long enough to time reliably."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    number = max(1, int(min_seconds / first)) if first > 0 else 100
    best = first
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


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
        dec = best_time(lambda: [kcodec.decode(cls, b, version) for b in bodies], spec["repeat"])
        enc = best_time(lambda: [kcodec.encode(m, version) for m in msgs], spec["repeat"])
        out["results"][entry["label"]] = {"decode": dec, "encode": enc}
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
        if "cython" in backends or "python" in backends:
            first = _run_child(manifest, pure=False, timeout=timeout)
            if first["backend"] in backends:
                out[first["backend"]] = first["results"]
            if first["backend"] != "python" and "python" in backends:
                out["python"] = _run_child(manifest, pure=True, timeout=timeout)["results"]
        return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m kcodec.sizes.timing MANIFEST.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(_child(Path(sys.argv[1])))
