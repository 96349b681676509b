"""Shared fixtures: where ../shared is, hypothesis profiles, the backend under test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KCODEC_SHARED", REPO.parent / "shared"))

# ci: deterministic, the default; long: for local runs (HYPOTHESIS_PROFILE=long).
settings.register_profile("ci", derandomize=True, max_examples=15, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared beside the checkout. In CI its absence is a failure, elsewhere a skip."""
    if not (SHARED / "kafka-message-schemas").is_dir():
        msg = f"../shared not found at {SHARED} (set KCODEC_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return SHARED


@pytest.fixture(scope="session")
def test_certs(tmp_path_factory):
    """A throw-away CA and a server certificate for 127.0.0.1, ::1 and localhost (kcodec.security.certs)."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the 'cryptography' package is missing (a test dependency: pip install -e .[test])")
        pytest.skip("the 'cryptography' package is missing")
    from kcodec.security.certs import make_test_certificates

    return make_test_certificates(tmp_path_factory.mktemp("certs"))


# Kafka traffic (issue 7): a real broker upstream of `kcodec tap`, and a local Spark session.
@pytest.fixture(scope="session")
def kafka_upstream():
    """A broker on 127.0.0.1 for the tap and Spark tests (Tansu 0.6.0 for now; see tests/kafka_upstream.py)."""
    import kafka_upstream as ku

    try:
        ku.tansu_binary()
    except (ImportError, FileNotFoundError) as e:
        pytest.skip(f"no broker binary: {e}")
    with ku.tansu(advertised_host="localhost") as upstream:  # "localhost" != upstream: the tap adds a listener
        yield upstream


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession, UI off, shared by every `spark` test."""
    import sys

    pytest.importorskip("pyspark")
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
