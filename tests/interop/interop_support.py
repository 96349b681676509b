"""What the interop tests share: the users and ACLs of the secured cluster, the API-version record."""

from __future__ import annotations

import json
import time
from pathlib import Path

from dataclasses import dataclass
from typing import Callable, Optional

from kcodec_broker import Cluster

REPORT = Path(__file__).resolve().parents[2] / "report" / "broker-interop-versions.json"
USERS = {"admin": "admin-pw", "alice": "alice-pw"}
# alice may see every topic and its configs; she may create and delete none.
ACLS = ["alice:Describe:topic:*", "alice:DescribeConfigs:topic:*"]

_USED: dict[str, dict[str, set[int]]] = {}
TIMEOUT = 20


def until(step: Callable[[], None], done: Callable[[], bool], what: str) -> None:
    """Call ``step`` (a poll) until ``done``, at most TIMEOUT seconds."""
    deadline = time.monotonic() + TIMEOUT
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()

# The authentication matrix: every client logs in as carol with each mechanism over each transport.
AUTH_MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
AUTH_USER, AUTH_PASSWORD = "carol", "carol-pw"
AUTH_TOPIC, HIDDEN_TOPIC = "auth-topic", "hidden-topic"  # carol may describe only the first: proof of who she is
AUTH_ACLS = [f"{AUTH_USER}:Describe:topic:auth-*"]
# Mutual TLS: the principal of test_certs.clients["alice"]'s certificate (its subject, RFC 2253).
MTLS_ALICE = "User:CN=alice,OU=tests,O=kcodec"


@dataclass
class AuthBroker:
    """A shared cluster with SCRAM users and OAUTHBEARER on, SASL_PLAINTEXT or SASL_SSL."""

    cluster: Cluster
    protocol: str            # SASL_PLAINTEXT or SASL_SSL: what the clients set
    ca: Optional[str]        # the CA file the clients trust (SASL_SSL)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def tls(self) -> bool:
        return self.ca is not None

    def kafka_python_style(self, mechanism: str, password: str, token_provider: object) -> dict:
        """The SASL settings kafka-python and aiokafka share (their TLS settings differ)."""
        config: dict = {"security_protocol": self.protocol, "sasl_mechanism": mechanism}
        if mechanism == "OAUTHBEARER":
            config["sasl_oauth_token_provider"] = token_provider
        else:
            config.update(sasl_plain_username=AUTH_USER, sasl_plain_password=password)
        return config


def record(client: str, cluster: Cluster) -> dict[str, list[int]]:
    """Merge what ``cluster`` saw into the session's record under ``client``; returns the merge."""
    mine = _USED.setdefault(client, {})
    for apis in cluster.api_versions_used().values():
        for api, versions in apis.items():
            mine.setdefault(api, set()).update(versions)
    return {api: sorted(v) for api, v in mine.items()}


def write_report() -> None:
    if _USED:
        REPORT.parent.mkdir(exist_ok=True)
        data = {c: {a: sorted(v) for a, v in sorted(apis.items())} for c, apis in sorted(_USED.items())}
        REPORT.write_text("{\n" + ",\n".join(f" {json.dumps(c)}: {json.dumps(a)}" for c, a in data.items()) + "\n}\n")
