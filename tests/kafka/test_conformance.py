"""Conformance diffs against Apache Kafka 4.4 (tests/kafka/conformance.py): every scenario's answers from a
real Kafka and from ``kcodec broker`` of the same shape must agree, field by field, but for what the
normalisers map away and what accepted-differences.json lists with its reason."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import real_kafka as rk
import conformance as cf
import scenarios_admin  # noqa: F401  (registers its scenarios)
import scenarios_configs  # noqa: F401
import scenarios_data  # noqa: F401
import scenarios_groups  # noqa: F401
import scenarios_hostile  # noqa: F401
import scenarios_txn  # noqa: F401

from kcodec_broker import Cluster, Listener
from kcodec.messages import FindCoordinatorRequest

pytestmark = pytest.mark.kafka

KCODEC_CONFIG = {"users": rk.SASL_USERS, "sasl_mechanisms": list(rk.MECHANISMS)}


def _coordinators_ready(target: cf.Target) -> None:
    """Kafka makes __consumer_offsets and __transaction_state when a coordinator is first looked for (kcodec
    broker has them from the start): look until both answer, so that both clusters hold the same topics."""
    rec = cf.Recorder(target, "warm-up")
    try:
        for key_type in (0, 1):
            def found() -> bool:
                resp = rec.quiet(FindCoordinatorRequest(key_type=key_type, coordinator_keys=["warm-up"]), 4)
                return all(c.error_code == 0 for c in resp.coordinators)
            rec.until(f"the coordinator of key type {key_type}", found, timeout=60)
    finally:
        rec.close()


@pytest.fixture(scope="session")
def kafka_one(real_kafka: rk.KafkaCluster) -> cf.Target:
    target = cf.Target("kafka", real_kafka.addresses, real_kafka.sasl_addresses, dict(rk.SASL_USERS))
    _coordinators_ready(target)
    return target


@pytest.fixture(scope="session")
def kafka_three(real_kafka3: rk.KafkaCluster) -> cf.Target:
    target = cf.Target("kafka", real_kafka3.addresses)
    _coordinators_ready(target)
    return target


@pytest.fixture(scope="session")
def kcodec_one() -> Iterator[cf.Target]:
    """kcodec broker shaped as real_kafka: one node, PLAINTEXT beside SASL_PLAINTEXT, the authorizer on
    (no ACL yet), the same super users."""
    with Cluster(1, listeners=[Listener("PLAINTEXT"), Listener("SASL_PLAINTEXT")], acls=[],
                 super_users=list(rk.SUPER_USERS), **KCODEC_CONFIG) as c:
        yield cf.Target("kcodec", c.listener_addresses("PLAINTEXT"), c.listener_addresses("SASL_PLAINTEXT"),
                        dict(rk.SASL_USERS))


@pytest.fixture(scope="session")
def kcodec_three() -> Iterator[cf.Target]:
    with Cluster(3) as c:
        yield cf.Target("kcodec", c.addresses)


@pytest.fixture(scope="session")
def accepted_list() -> Iterator[list[cf.Accepted]]:
    entries = cf.accepted()
    yield entries


TALLY: dict[str, int] = {"scenarios": 0, "differences": 0, "accepted": 0}


@pytest.fixture(scope="session", autouse=True)
def _tally() -> Iterator[None]:
    yield
    if TALLY["scenarios"]:
        print(f"\nconformance: {TALLY['scenarios']} scenarios diffed against Apache Kafka {rk.KAFKA_VERSION}, "
              f"{TALLY['differences']} differences, {TALLY['accepted']} of them accepted", file=sys.stderr)


@pytest.mark.parametrize("name", cf.in_order())
def test_conformance(name: str, request: Any, accepted_list: list[cf.Accepted]) -> None:
    sc = cf.SCENARIOS[name]
    kafka = request.getfixturevalue(f"kafka_{sc.shape}")
    ours = request.getfixturevalue(f"kcodec_{sc.shape}")
    tag = f"{name.replace('_', '-')}-{uuid.uuid4().hex[:6]}"
    began = time.monotonic()
    theirs = cf.run(sc, kafka, tag)
    mine = cf.run(sc, ours, tag)
    diffs = cf.compare(name, theirs, mine)
    if os.environ.get("KCODEC_CONFORMANCE_DUMP"):  # both sides' answers and the differences, to read
        out = Path(os.environ["KCODEC_CONFORMANCE_DUMP"])
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps(
            {"kafka": theirs, "kcodec": mine, "differences": [str(d) for d in diffs]}, indent=1, default=str))
    mine_accepted = [a for a in accepted_list if a.scenario == name]
    left = [d for d in diffs if not any(a.matches(d) for a in mine_accepted)]
    stale = [a for a in mine_accepted if not a.pending and not any(a.matches(d) for d in diffs)]
    TALLY["scenarios"] += 1
    TALLY["differences"] += len(diffs)
    TALLY["accepted"] += len(diffs) - len(left)
    print(f"{name}: {len(theirs)} answers, {len(diffs)} differences ({len(diffs) - len(left)} accepted), "
          f"{time.monotonic() - began:.1f} s")
    assert not left, "differences from Apache Kafka:\n" + "\n".join(map(str, left))
    assert not stale, "accepted differences that no longer occur (remove them):\n" + "\n".join(map(repr, stale))


def test_every_accepted_difference_names_a_scenario(accepted_list: list[cf.Accepted]) -> None:
    assert not [a for a in accepted_list if a.scenario not in cf.SCENARIOS]
