"""Real Kafka clients administer kcodec's broker. Every test records the API versions its client used;
at the end of the session they are written to report/broker-interop-versions.json."""

from __future__ import annotations

import gc
import logging
from pathlib import Path
from typing import Iterator

import pytest
from interop_support import (ACLS, AUTH_ACLS, AUTH_MECHANISMS, AUTH_PASSWORD, AUTH_TOPIC, AUTH_USER, HIDDEN_TOPIC,
                              MTLS_ALICE, USERS, AuthBroker, write_report)

from kcodec_broker import Cluster

import java_clients


HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Real clients against the broker test no codec backend of their own: the checkout run of CI has them, the
    wheel runs (.ci/test_wheel.py) leave them out (the broker's own suites, tests/broker, run on both backends)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.checkout)
    # The Go suites, started at the session's start (test_interop_go.py's EarlyStart), take ~3 minutes, mostly
    # timers: their tests come last, so that the session does not sit idle waiting for them (CI's 40 minutes).
    items.sort(key=_is_go_suite)  # stable: the rest keep their order


def _is_go_suite(item: pytest.Item) -> bool:
    return getattr(item, "originalname", "") == "test_suite_against_kcodec_broker"


def _go_suites(session: pytest.Session) -> list[pytest.Item]:
    return [item for item in session.items if _is_go_suite(item)]


def pytest_collection_finish(session: pytest.Session) -> None:
    """The Go suites start now, in the background (test_interop_go.py's EarlyStart)."""
    items = _go_suites(session)
    if items and not session.config.option.collectonly:
        items[0].module.start_early(items, session.config._tmp_path_factory.mktemp("go-suites"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for item in _go_suites(session)[:1]:
        for early in item.module.EARLY:
            early.stop()


@pytest.fixture(scope="session", autouse=True)
def _write_report() -> Iterator[None]:
    yield
    write_report()


@pytest.fixture(scope="session")
def java_driver(tmp_path_factory) -> Iterator[java_clients.JavaClients]:
    """Kafka's Java clients in one JVM for the session (tests/interop/java_clients.py)."""
    java_clients.ensure_built()
    driver = java_clients.JavaClients(tmp_path_factory.mktemp("java-clients"))
    yield driver
    driver.close()


@pytest.fixture
def java(java_driver) -> java_clients.JavaClients:
    """The session's driver, started again when a scenario before left it dead (a timeout)."""
    if not java_driver.alive:
        java_driver.start()
    return java_driver


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster(brokers=3, num_partitions=2, default_replication_factor=2, system_topic_partitions=5) as c:
        yield c


@pytest.fixture
def secured() -> Iterator[Cluster]:
    with Cluster(brokers=2, users=USERS, acls=ACLS, super_users=["admin"], system_topic_partitions=2) as c:
        c.create_topic("secret", 1, 1)
        yield c


@pytest.fixture(scope="session", params=["SASL_PLAINTEXT", "SASL_SSL"])
def auth_broker(request, test_certs) -> Iterator[AuthBroker]:
    """Shared by every client's authentication tests: two clusters in all (one per transport)."""
    tls = request.param == "SASL_SSL"
    with Cluster(brokers=2, users={AUTH_USER: AUTH_PASSWORD}, sasl_mechanisms=AUTH_MECHANISMS, acls=AUTH_ACLS,
                 system_topic_partitions=1, tls=(test_certs.cert, test_certs.key) if tls else None) as c:
        assert c.security_protocol == request.param
        c.create_topic(AUTH_TOPIC, 1, 1)
        c.create_topic(HIDDEN_TOPIC, 1, 1)
        yield AuthBroker(c, request.param, str(test_certs.ca) if tls else None)


@pytest.fixture
def mtls_cluster(test_certs) -> Iterator[Cluster]:
    """SSL listeners that require a client certificate from test_certs' CA; alice (by her certificate,
    test_certs.clients["alice"]) may describe, create and write ``alice-*`` topics only."""
    with Cluster(tls=(test_certs.cert, test_certs.key), tls_client_auth="required", tls_client_ca=test_certs.ca,
                 acls=[f"{MTLS_ALICE}:{op}:topic:alice-*" for op in ("Describe", "Create", "Write")],
                 system_topic_partitions=1) as c:
        c.create_topic("alice-seen", 1, 1)
        c.create_topic("hidden", 1, 1)
        yield c


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def no_unretrieved_exceptions() -> Iterator[None]:
    """Fails the test when an asyncio future or task it left is collected with its exception never retrieved.
    asyncio says so on its logger when the object is collected, which may be during a later test: on
    CPython 3.11.7 such a finalizer, run by a collection in the middle of another test's ast.parse, failed
    that test (gh-106905). A collection here, at the end of the test, puts the message where it belongs."""
    handler = _Records()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield
        gc.collect()
    finally:
        logger.removeHandler(handler)
    leaked = [m for m in handler.messages if "exception was never retrieved" in m]
    assert not leaked, "\n\n".join(leaked)
