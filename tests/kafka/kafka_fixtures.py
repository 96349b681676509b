"""Session fixtures for a real Apache Kafka (tests/kafka/real_kafka.py), a pytest plugin that tests/conftest.py
loads, so that any suite may ask for them:

- ``real_kafka``: one combined node; PLAINTEXT (unrestricted) beside SASL_PLAINTEXT (PLAIN, SCRAM) with
  StandardAuthorizer, super users ``real_kafka.SUPER_USERS``;
- ``real_kafka3``: three combined nodes, PLAINTEXT only, no authorizer.

Each starts when a test first asks for it and stops at the end of the session. A test that uses one is
marked ``kafka`` (run in the checkout run of CI only; the wheel runs deselect it), whether or not it says so.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import real_kafka as rk  # noqa: E402
from needs import missing  # noqa: E402

FIXTURES = ("real_kafka", "real_kafka3")
RUNNING: list[rk.KafkaCluster] = []


def _start(tmp_path_factory: Any, brokers: int, **kw: Any) -> Iterator[rk.KafkaCluster]:
    if rk.java() is None:
        missing("the command 'java' on PATH (Java 17+ runs Apache Kafka; Debian: openjdk-17-jre-headless)")
    if not rk.libs_ready():
        try:
            rk.fetch_libs()
        except rk.KafkaError as e:
            missing(f"Apache Kafka {rk.KAFKA_VERSION}'s jars (`make test` fetches them with mvn): {e}")
    try:
        cluster = rk.start(brokers, directory=tmp_path_factory.mktemp(f"real-kafka-{brokers}"), **kw)
    except rk.KafkaError as e:
        failure = str(e)
    else:
        failure = ""
    if failure:
        pytest.fail(f"Apache Kafka ({brokers} node(s)) did not start: {failure}", pytrace=False)
    print(f"\nApache Kafka {rk.KAFKA_VERSION}, {brokers} node(s): started in {cluster.started_in:.1f} s, "
          f"bootstrap {cluster.bootstrap}, logs in {cluster.directory}", file=sys.stderr)
    RUNNING.append(cluster)
    try:
        yield cluster
    finally:
        RUNNING.remove(cluster)
        cluster.stop()


@pytest.fixture(scope="session")
def real_kafka(tmp_path_factory: Any) -> Iterator[rk.KafkaCluster]:
    yield from _start(tmp_path_factory, 1, sasl=True)


@pytest.fixture(scope="session")
def real_kafka3(tmp_path_factory: Any) -> Iterator[rk.KafkaCluster]:
    yield from _start(tmp_path_factory, 3)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(f in getattr(item, "fixturenames", ()) for f in FIXTURES):
            item.add_marker(pytest.mark.kafka)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("kafka") is not None:
        for cluster in RUNNING:  # what Kafka said meanwhile
            report.sections.append((f"Apache Kafka's logs ({cluster.directory})", cluster.logs(30)))
