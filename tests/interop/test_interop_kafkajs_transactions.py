"""kafkajs 2.2.4's transactional producer and consumers against kcodec's broker (js/transactions.js): a
committed transaction with sendOffsets, an aborted one and another committed one; kafkajs's read_committed
consumer (its default) sees the committed records only, its read_uncommitted one all four."""

from __future__ import annotations

import pytest
from interop_support import record
from test_interop_kafkajs import CLIENT, _run

pytestmark = pytest.mark.interop
TOPIC, GROUP = "js-txn", "js-txn-group"


def test_kafkajs_transactions(cluster):
    cluster.create_topic(TOPIC, 1)
    try:
        r = _run(cluster.bootstrap, TOPIC, GROUP, script="transactions.js")
    finally:
        record(f"{CLIENT} transactions", cluster)
    assert r == {"committed": ["c1", "c2", "c3"], "uncommitted": ["c1", "c2", "a1", "c3"]}
    with cluster.state.lock:
        assert cluster.state.offsets.get(GROUP, TOPIC, 0).offset == 2
