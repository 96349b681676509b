"""Pairing responses with requests in wire order (kcodec.spark.pairing), and the acks a Produce request carries."""

from __future__ import annotations

import pytest
from needs import need_module

import kcodec
from kcodec.messages import ProduceRequest
from kcodec.spark.decode import header_and_body, produce_acks
from kcodec.spark.pairing import pair

need_module("pandas")


def _run(events):
    """events: ("q", corr[, acks]) a request, ("r", corr) a response; positions are their indexes."""
    rows = [(i, 0 if e[0] == "q" else 1, e[1], e[2] if len(e) > 2 else None) for i, e in enumerate(events)]
    return sorted(pair(iter(rows)), key=lambda p: (p[0] if p[0] is not None else p[1]))


def test_in_order_conversation():
    assert _run([("q", 1), ("q", 2), ("r", 1), ("r", 2)]) == [(0, 2, "answered"), (1, 3, "answered")]


def test_a_repeated_correlation_id_pairs_each_use_once():
    # The same id on one connection three times (a client that reuses ids): a join on the id gave 9 rows.
    got = _run([("q", 7), ("r", 7), ("q", 7), ("q", 7), ("r", 7), ("r", 7)])
    assert got == [(0, 1, "answered"), (2, 4, "answered"), (3, 5, "answered")]


def test_a_wrapping_counter():
    top = 2**31 - 1
    events = [("q", top - 1), ("q", top), ("q", -2**31), ("q", 0), ("r", top - 1), ("r", top), ("r", -2**31), ("r", 0)]
    events += [("q", top - 1), ("r", top - 1)]  # and round again: the old id is no longer waiting
    got = _run(events)
    assert [(a, b) for a, b, _ in got] == [(0, 4), (1, 5), (2, 6), (3, 7), (8, 9)]
    assert {s for *_, s in got} == {"answered"}


def test_acks0_requests_expect_no_response():
    got = _run([("q", 1, 0), ("q", 2, 1), ("q", 3, 0), ("q", 4, -1), ("r", 2), ("r", 4)])
    assert got == [(0, None, "no_response"), (1, 4, "answered"), (2, None, "no_response"), (3, 5, "answered")]


def test_a_broker_that_answers_acks0_is_flagged():
    got = _run([("q", 1, 0), ("r", 1), ("q", 2, -1), ("r", 2)])
    assert got == [(0, 1, "acks0_answered"), (2, 3, "answered")]


def test_mismatch_overtaken_unanswered_and_orphans():
    # An answer to request 3 arrives while 2 waits: 2 was skipped (a client looking 3 up in flight does
    # the same); 9 answers nothing waiting; 4 waits when the capture ends.
    got = _run([("r", 0), ("q", 2), ("q", 3), ("r", 3), ("r", 9), ("q", 4)])
    assert got == [(None, 0, "orphan"), (1, None, "overtaken"), (2, 3, "answered"), (None, 4, "orphan"),
                   (5, None, "unanswered")]


def test_a_request_whose_header_did_not_decode_is_overtaken_not_paired():
    assert _run([("q", None), ("q", 5), ("r", 5)]) == [(0, None, "overtaken"), (1, 2, "answered")]


@pytest.mark.parametrize("version", range(ProduceRequest.VALID_VERSIONS[0], ProduceRequest.VALID_VERSIONS[1] + 1))
@pytest.mark.parametrize("acks", [0, 1, -1])
def test_produce_acks_at_every_version(version, acks):
    tid = "tx-1" if version >= 3 else None
    req = ProduceRequest(acks=acks, timeout_ms=1000, transactional_id=tid, topic_data=[])
    frame = kcodec.encode_request(req, version, 5, client_id="c")
    corr, key, v, client, got, error, _ = header_and_body(0, frame)
    assert (corr, key, v, client, got, error) == (5, 0, version, "c", acks, None)
    _, pos, end = kcodec.decode_request_header(frame)
    assert produce_acks(frame, pos, pos + 1, version) is None  # a body too short to say


def test_a_response_captured_just_before_its_request():
    # Packet captures can swap a request's last segment and its answer's first: paired all the same.
    got = _run([("q", 1), ("r", 1), ("r", 2), ("q", 2), ("q", 3), ("r", 3)])
    assert got == [(0, 1, "answered"), (3, 2, "answered"), (4, 5, "answered")]
    # Held only until a later response matches: then it is an orphan, and an id reused later is not its.
    got = _run([("r", 9), ("q", 1), ("r", 1), ("q", 9), ("r", 9)])
    assert got == [(None, 0, "orphan"), (1, 2, "answered"), (3, 4, "answered")]
