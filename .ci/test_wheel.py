"""Run the test suite against the installed kcodec (a wheel), not the source tree.

    python .ci/test_wheel.py [--both] [pytest args...]

Copies tests/ (but CHECKOUT_ONLY), pyproject.toml (pytest's settings), README.md, CHANGELOG.md, mkdocs.yml, docs/,
examples/, .github/ and fuzz/ (tested) into a temporary
directory, checks that ``import kcodec`` (and ``import kcodec_broker``, the broker's own wheel installed beside
it) resolves outside the checkout and that the compiled extensions
are there (kcodec.columnar._columnar always; kcodec.core._fast, i.e. ``kcodec.BACKEND == "cython"``, once the checkout
has kcodec/core/_fast.pyx), then runs pytest there (the copy's folders go on sys.path, as in the checkout, for the tests' own helper
modules; kcodec itself is not in the copy, so the installed one is imported). ``--both`` runs the suite
with KCODEC_PURE=1 too, at the same time as the compiled run. ../shared comes from KCODEC_SHARED or beside the checkout; where it is absent
(cibuildwheel's containers) the tests that need it skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
# Heavy suites that test no backend choice run once, in the checkout run of .ci/run, not against the wheel:
# tests/oracle (Apache Kafka's own classes in JVMs) checks both backends itself; tests/test_figures.py holds
# README.md and docs/ (docs/analyze.md's table too) to benchmarks/results/ (no codec involved);
# tests/test_spark_cluster.py starts a Spark master, two workers and spark-submit (JVMs); tests/test_build_dists.py
# reads the wheels themselves, and .ci/wheel.sh runs it on the ones it built before it installs them;
# tests/test_analyze_capture.py and tests/test_broker_data_client.py test a benchmark's tools
# (benchmarks/analyze_capture.py, broker_data.py and broker_client.py, not copied here).
CHECKOUT_ONLY = ("oracle", "test_figures.py", "test_spark_cluster.py", "test_build_dists.py",
                 "test_analyze_capture.py", "test_broker_data_client.py")
WHEEL_MARKERS = "not slow and not kafka and not spark and not checkout"

CHECK = """
import sys, kcodec, kcodec.columnar as c
from pathlib import Path
where = Path(kcodec.__file__).resolve()
assert Path(sys.argv[1]) not in where.parents, f"kcodec imported from the checkout: {where}"
print(f"kcodec {kcodec.__version__} from {where.parent}: backend {kcodec.BACKEND}, columnar {c.ENGINE}")
import kcodec_broker  # kcodec-broker, installed beside it (its own wheel)
broker = Path(kcodec_broker.__file__).resolve()
assert Path(sys.argv[1]) not in broker.parents, f"kcodec_broker imported from the checkout: {broker}"
print(f"kcodec_broker from {broker.parent}")
want = sys.argv[2]
assert kcodec.BACKEND == want, f"backend {kcodec.BACKEND}, expected {want}"
import kcodec.records as records
assert records.BACKEND == want, f"records backend {records.BACKEND}, expected {want}"
if want == "cython" or sys.argv[3] == "1":
    assert c._columnar is not None, "kcodec.columnar._columnar is not in the wheel"
import kcodec.tap.scan as scan  # pass 1's pcap walk: the extension, or with KCODEC_PURE=1 Python's reader
assert scan.ENGINE == want, f"pcap walk engine {scan.ENGINE}, expected {want}"
"""


def start(tmp: Path, pure: bool, args: list[str], log: Optional[Path] = None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    shared = Path(env.get("KCODEC_SHARED", REPO.parent / "shared"))
    if (shared / "kafka-message-schemas").is_dir():
        env["KCODEC_SHARED"] = str(shared)
    else:
        env.pop("CI", None)  # the shared fixture skips instead of failing
    has_fast = (REPO / "kcodec" / "core" / "_fast.pyx").exists()
    expect = "python" if pure or not has_fast else "cython"
    if pure:
        env["KCODEC_PURE"] = "1"
    else:
        env.pop("KCODEC_PURE", None)
    env["KCODEC_EXPECT_BACKEND"] = expect
    subprocess.run([sys.executable, "-c", CHECK, str(REPO), expect, "0" if pure else "1"], cwd=tmp, env=env,
                   check=True)
    # Suites that test no codec backend run once, in the checkout run (issue 31: CI's 40 minutes): marker kafka
    # (Apache Kafka itself), spark (Spark's JVMs run `kcodec analyze`; its decoding without Spark, test_pairing,
    # test_tap_ranges, test_spark_batches' field rows and test_columnar, runs here on both backends) and checkout
    # (Kafka's Java client and tools, the Go suites, real clients against the broker in tests/interop).
    cmd = [sys.executable, "-m", "pytest", str(tmp / "tests"), "--rootdir", str(tmp),
           "-p", "no:cacheprovider", "-m", WHEEL_MARKERS, *args]
    junit = os.environ.get("KCODEC_JUNIT_DIR")
    if junit:
        cmd.append(f"--junitxml={junit}/wheel-{expect}.xml")
    print("+", " ".join(cmd), "(KCODEC_PURE=1)" if pure else "", flush=True)
    out = open(log, "wb") if log else None
    try:
        return subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT if out else None)
    finally:
        if out:
            out.close()


def _tests_ignored(folder: str, names: list[str]) -> list[str]:
    top = Path(folder) == REPO / "tests"
    return [n for n in names if n == "__pycache__" or top and n in CHECKOUT_ONLY]


def main(argv: list[str]) -> int:
    both = "--both" in argv
    args = [a for a in argv if a != "--both"]
    with tempfile.TemporaryDirectory(prefix="kcodec-wheel-tests-") as d:
        tmp = Path(d)
        shutil.copytree(REPO / "tests", tmp / "tests", ignore=_tests_ignored)
        for name in ("pyproject.toml", "README.md", "mkdocs.yml", "CHANGELOG.md"):
            shutil.copy(REPO / name, tmp / name)
        shutil.copytree(REPO / "examples", tmp / "examples")  # tests/protocol/test_protocol_examples.py
        shutil.copytree(REPO / "docs", tmp / "docs")  # tests/test_docs.py: the examples and the site's build
        shutil.copytree(REPO / ".github", tmp / ".github")  # tests/test_ci_policy.py: the hosted workflow
        shutil.copytree(REPO / "fuzz", tmp / "fuzz",  # tests/test_fuzz_campaign.py: the campaign's runner
                        ignore=shutil.ignore_patterns("__pycache__"))
        if not both:
            return start(tmp, False, args).wait()
        # The compiled and the reference runs at once, each into its own log printed when both end: most of
        # either run waits on brokers, JVMs and clients, so two cores serve both in little more than the
        # longer one's time (CI's budget, issue 31).
        logs = [tmp / "wheel-cython.log", tmp / "wheel-python.log"]
        runs = [start(tmp, pure, args, log) for pure, log in zip((False, True), logs)]
        codes = [r.wait() for r in runs]
        for log, code in zip(logs, codes):
            print(f"===== {log.stem}: pytest exit {code} =====", flush=True)
            sys.stdout.buffer.write(log.read_bytes())
            sys.stdout.flush()
    return max(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
