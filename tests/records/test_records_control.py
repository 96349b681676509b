"""Control batches (transaction markers, KRaft records) and read_committed filtering."""

from __future__ import annotations

import pytest

import kcodec
from kcodec.messages import FetchResponse, LeaderChangeMessage
from kcodec.records import (BatchBuilder, ControlType, RecordsError, control_batch, filter_aborted, iter_batches,
                            read_control)


def data_batch(offset: int, pid: int = -1, transactional: bool = False, n: int = 2) -> bytes:
    b = BatchBuilder(base_offset=offset, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                     base_sequence=0 if pid >= 0 else -1, transactional=transactional)
    for i in range(n):
        b.append(b"%d" % pid, b"%d" % (offset + i), timestamp=1)
    return b.build()


def marker(offset: int, pid: int, kind: ControlType) -> bytes:
    return control_batch(kind, pid, 0, coordinator_epoch=5, base_offset=offset, timestamp=2)


def kept(data: bytes, aborted, **kw) -> list[int]:
    return [r.offset for b in filter_aborted(iter_batches(data), aborted, **kw) for r in b]


def test_transaction_marker_round_trip():
    (b,) = iter_batches(marker(10, 7, ControlType.ABORT))
    assert b.is_control and b.is_transactional and b.producer_id == 7 and b.base_offset == 10
    (rec,) = b
    c = read_control(rec)
    assert (c.type, c.version, c.value_version, c.value.coordinator_epoch) == (ControlType.ABORT, 0, 0, 5)


def test_kraft_control_records_decode_to_their_messages():
    # The value is the message at version 0, no version in front: its own first field, Version, is the
    # record's version (Kafka's MemoryRecordsBuilder.appendLeaderChangeMessage; tests/oracle checks all five).
    msg = LeaderChangeMessage(version=7, leader_id=3, voters=[LeaderChangeMessage.Voter(voter_id=3)],
                              granting_voters=[LeaderChangeMessage.Voter(voter_id=3)])
    b = BatchBuilder(control=True)
    b.append(b"\x00\x00\x00\x02", kcodec.encode(msg, version=0), timestamp=1)
    (batch,) = iter_batches(b.build())
    c = read_control(next(iter(batch)))
    assert c.type == ControlType.LEADER_CHANGE and c.value == msg and c.value_version == 7


@pytest.mark.parametrize("key, value", [(b"\x00", b""), (b"\x00\x00\x00", b""), (b"\x00\x00\x00\x01", b"\x00"),
                                        (b"\x00\x00\x00\x00", b"\x00\x00\x00"),
                                        (b"\x00\x00\x00\x02", b"\x00\x00\x01")])
def test_short_control_keys_and_values_are_errors(key, value):
    b = BatchBuilder(control=True)
    b.append(key, value, timestamp=1)
    (batch,) = iter_batches(b.build())
    with pytest.raises(RecordsError):
        read_control(next(iter(batch)))


def test_control_types_kcodec_does_not_know_come_back_raw():
    b = BatchBuilder(control=True)
    b.append(b"\x00\x00\x00\x63", b"\x00\x00xyz", timestamp=1)
    (batch,) = iter_batches(b.build())
    assert read_control(next(iter(batch))) == (99, 0, -1, b"\x00\x00xyz")


def test_aborted_transaction_is_dropped_and_commit_kept():
    data = (data_batch(0, pid=1, transactional=True) + data_batch(2, pid=2, transactional=True)
            + marker(4, 1, ControlType.ABORT) + marker(5, 2, ControlType.COMMIT) + data_batch(6))
    assert kept(data, [(1, 0)]) == [2, 3, 6, 7]
    assert kept(data, []) == [0, 1, 2, 3, 6, 7]
    assert [b.is_control for b in filter_aborted(iter_batches(data), [(1, 0)], keep_control=True)] == \
        [False, True, True, False]


def test_non_transactional_batches_of_an_aborted_producer_id_are_kept():
    data = data_batch(0, pid=1, transactional=True) + data_batch(2, pid=1) + marker(4, 1, ControlType.ABORT)
    assert kept(data, [(1, 0)]) == [2, 3]


def test_interleaved_producers():
    data = (data_batch(0, pid=1, transactional=True) + data_batch(2, pid=2, transactional=True)
            + data_batch(4, pid=1, transactional=True) + marker(6, 2, ControlType.ABORT)
            + data_batch(7, pid=2, transactional=True) + marker(9, 1, ControlType.COMMIT)
            + marker(10, 2, ControlType.COMMIT))
    # pid 2 aborted its first transaction (first offset 2), then committed a second one (from 7)
    assert kept(data, [(2, 2)]) == [0, 1, 4, 5, 7, 8]


def test_an_aborted_transaction_spanning_two_fetches():
    first = data_batch(100, pid=9, transactional=True) + data_batch(102, pid=3)
    second = data_batch(103, pid=9, transactional=True) + marker(105, 9, ControlType.ABORT) + \
        data_batch(106, pid=9, transactional=True)
    # each Fetch lists the aborted transactions overlapping its range: the first offset is in the earlier fetch
    assert kept(first, [(9, 100)]) == [102, 103]
    assert kept(second, [(9, 100)]) == [106, 107]


def test_an_aborted_transaction_only_applies_from_its_first_offset():
    data = data_batch(0, pid=4, transactional=True) + marker(2, 4, ControlType.COMMIT) + \
        data_batch(3, pid=4, transactional=True) + marker(5, 4, ControlType.ABORT)
    assert kept(data, [(4, 3)]) == [0, 1]


def test_fetch_aborted_transactions_structs_are_accepted():
    data = data_batch(0, pid=1, transactional=True) + marker(2, 1, ControlType.ABORT)
    aborted = [FetchResponse.AbortedTransaction(producer_id=1, first_offset=0)]
    assert kept(data, aborted) == []
