"""kafkajs 2.2.4's transactional producer and consumers against kcodec's broker (js/transactions.js): a
committed transaction with sendOffsets, an aborted one and another committed one; kafkajs's read_committed
consumer (its default) sees the committed records only, its read_uncommitted one all four."""

from __future__ import annotations

import json
import subprocess

import pytest
from needs import missing, need_tool
from interop_support import record
from test_interop_kafkajs import CLIENT, JS

pytestmark = pytest.mark.interop
TOPIC, GROUP = "js-txn", "js-txn-group"


def test_kafkajs_transactions(cluster):
    node = need_tool("node", "Node.js 18+ and npm; Debian's nodejs and npm packages")
    if not (JS / "node_modules" / "kafkajs").is_dir():
        missing("kafkajs in tests/interop/js/node_modules (`make test` runs npm ci there)")
    cluster.create_topic(TOPIC, 1)
    try:
        out = subprocess.run([node, str(JS / "transactions.js"), cluster.bootstrap, TOPIC, GROUP],
                             capture_output=True, text=True, timeout=90)
    finally:
        record(f"{CLIENT} transactions", cluster)
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r == {"committed": ["c1", "c2", "c3"], "uncommitted": ["c1", "c2", "a1", "c3"]}
    with cluster.state.lock:
        assert cluster.state.offsets.get(GROUP, TOPIC, 0).offset == 2
