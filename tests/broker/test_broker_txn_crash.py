"""Crash-safe transaction completion: a broker killed (SIGKILL) between any two writes of an EndTxn
(the decision, each partition's marker, the consumer offsets, the completion) comes back with all of the
transaction applied or none of it: its records visible to read_committed and its offsets committed
together, or neither (broker/kcodec_broker/crash.py's kill points)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from broker_wire import Wire, start_cli
from test_broker_txn_state import _committed, _offset
from txn_wire import Producer

from kcodec_broker import Cluster
from kcodec.errors import ErrorCode as E
from kcodec.messages import CreateTopicsRequest

# (kill point, how many times it is passed before the kill); "txn.deciding" is before the decision
POINTS = [("txn.deciding", 1), ("txn.prepared", 1), ("txn.marker", 1), ("txn.marker", 2), ("txn.offsets", 1),
          ("txn.completed", 1)]
TIMEOUT_MS = 1000  # a transaction left open by the kill is aborted this long after the restart


def _run_until_killed(state: Path, point: str, times: int, commit: bool) -> bool:
    """A CLI broker on ``state`` killed at the point: producer "tx" writes to both partitions of t, puts
    offset 5 of group g in the transaction, then ends it. True when the kill came (an abort never passes
    txn.offsets: the broker then answers and is killed here)."""
    env = dict(os.environ, KCODEC_BROKER_KILL_AT=f"{point}:{times}")
    proc, line = start_cli("--state", str(state), env=env)
    try:
        host, port = line.split("bootstrap ")[1].split(",")[0].strip().rsplit(":", 1)
        with Wire((host, int(port))) as w:
            r = w.call(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name="t", num_partitions=2, replication_factor=1)], timeout_ms=5000), 7)
            assert r.topics[0].error_code == 0
            p = Producer(w, "tx", timeout_ms=TIMEOUT_MS)
            for partition in (0, 1):
                assert p.add_code("t", partition) == 0
                assert p.send("t", partition, b"v%d" % partition).error_code == 0
            assert p.add_offsets("g") == 0 and p.commit_offsets("g", "t", {0: 5}) == [0]
            try:
                answered = p.end(commit) == 0
            except (ConnectionError, OSError):
                answered = False
        killed = proc.wait(timeout=10) == -9 if not answered else False
        return killed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _outcome(state: Path) -> tuple[bool, bool]:
    """After a restart on ``state`` (and the open transaction's timeout): (records visible to
    read_committed on both partitions, offset 5 committed), each checked to be all or nothing."""
    with Cluster(state_file=state) as c, Wire(c.addresses[0]) as w:
        txn = c.runtime.txns.get("tx")
        if txn.ongoing:  # killed before the decision: the transaction times out and is aborted
            time.sleep(TIMEOUT_MS / 1000 + 0.2)
        visible = [_committed(w, "t", partition) for partition in (0, 1)]
        assert visible in ([[], []], [[b"v0"], [b"v1"]]), visible
        offset = _offset(w, "g")
        assert offset in ((E.NONE, -1), (E.NONE, 5)), offset
        assert not c.runtime.txns.get("tx").ongoing
        assert not list(state.parent.glob(".*.tmp"))
        return visible == [[b"v0"], [b"v1"]], offset == (E.NONE, 5)


@pytest.mark.parametrize("point,times", POINTS, ids=[f"{p}-{n}" for p, n in POINTS])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_a_kill_during_end_txn_leaves_all_or_nothing(tmp_path, point, times, commit):
    state = tmp_path / "state.json"
    killed = _run_until_killed(state, point, times, commit)
    assert killed or (not commit and point == "txn.offsets"), "the kill point was not reached"
    visible, offsets = _outcome(state)
    decided = point != "txn.deciding"
    assert (visible, offsets) == ((True, True) if commit and decided else (False, False))


def test_temporary_files_of_an_interrupted_save_are_removed_at_load(tmp_path):
    state = tmp_path / "state.json"
    with Cluster(state_file=state):
        pass
    left = [tmp_path / ".state.json.k1ll3d0.tmp", tmp_path / ".state.json.x9.tmp"]
    for f in left:
        f.write_text("{half a state")
    other = tmp_path / ".other.json.k1ll3d0.tmp"  # another file's: not ours to remove
    other.write_text("")
    with Cluster(state_file=state):
        assert not any(f.exists() for f in left) and other.exists()
