"""Random valid requests of every API and version the broker implements: each gets a response that
decodes at its version (or, for the few forms that must, a close); the broker logs no error of its own."""

from __future__ import annotations

import logging
import uuid
from typing import Iterator

import pytest
from broker_wire import Wire
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec_broker import Cluster
from kcodec_broker.handlers import supported_versions
from kcodec.testing import instances

CASES = [(key, v) for key, (lo, hi) in supported_versions().items() for v in range(lo, hi + 1)]
# DescribeAcls, CreateAcls and DeleteAcls codes kept to ones Kafka knows (1 up to the number of them): resource type,
# pattern type, operation, permission
ACL_CODES = {
    29: (None, {"resource_type_filter": 7, "pattern_type_filter": 4, "operation": 15, "permission_type": 3}),
    30: ("creations", {"resource_type": 7, "resource_pattern_type": 4, "operation": 15, "permission_type": 3}),
    31: ("filters", {"resource_type_filter": 7, "pattern_type_filter": 4, "operation": 15, "permission_type": 3})}


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[Cluster, _Errors]]:
    errors = _Errors()
    logger = logging.getLogger("kcodec_broker")
    logger.addHandler(errors)
    try:
        with Cluster(brokers=3, system_topic_partitions=2, max_partitions_per_topic=50) as c:
            for i in range(3):
                c.create_topic(f"t{i}", 2, 2)
            yield c, errors
    finally:
        logger.removeHandler(errors)


def _exchange(fuzzed, key: int, version: int, data, address: int):
    """Send one random request; (header, response) or None when the broker closed; no error logged."""
    cluster, errors = fuzzed
    req = data.draw(instances(kcodec.message_class(key, "request"), version))
    if key == 11:  # a JoinGroup to a group an earlier example joined waits for that member: a group of its own
        req.group_id = f"fuzz-{uuid.uuid4()}"
    if key == 0 and req.acks == 0:  # Produce acks=0 is never answered (tested in test_broker_data)
        req.acks = 1
    if key == 1:  # a long poll waits max_wait_ms (up to 24 days) when no data comes
        req.max_wait_ms = min(req.max_wait_ms, 50)
    if key in ACL_CODES:  # an UNKNOWN code closes, as Kafka fails it while parsing (test_broker_acl_admin)
        array, codes = ACL_CODES[key]
        for item in [req] if array is None else getattr(req, array):
            for attr, known in codes.items():
                if version > 0 or "pattern" not in attr:  # v0 has no pattern type: it stays LITERAL
                    setattr(item, attr, getattr(item, attr) % known + 1)
    with Wire(cluster.addresses[address], timeout=10) as w:
        w.send(kcodec.encode_request(req, version, correlation_id=5, client_id="fuzz"))
        try:
            frame = w.read_frame()
        except ConnectionError:
            frame = None
    messages = [r.getMessage() for r in errors.records]
    errors.records.clear()
    assert not messages, messages
    if frame is None:
        return None
    header, resp = kcodec.decode_response(frame, key, version)
    assert header.correlation_id == 5
    return resp


@pytest.mark.fuzz
@pytest.mark.parametrize("key, version", CASES, ids=[f"{kcodec.definitions.api_keys()[k]}-v{v}" for k, v in CASES])
@settings(max_examples=10)
@given(data=st.data())
def test_random_requests_are_answered(fuzzed, key, version, data):
    # only SASL errors close, and only after answering: every request here gets a response
    assert _exchange(fuzzed, key, version, data, data.draw(st.integers(0, 2))) is not None


OTHERS = [(key, v) for key in sorted(kcodec.definitions.api_keys()) if key not in supported_versions()
          for v in range(*(lambda c: (c.VALID_VERSIONS[0], c.VALID_VERSIONS[1] + 1))(kcodec.message_class(key, "request")))]


@pytest.mark.fuzz
@pytest.mark.parametrize("key, version", OTHERS, ids=[f"{kcodec.definitions.api_keys()[k]}-v{v}" for k, v in OTHERS])
@settings(max_examples=3)
@given(data=st.data())
def test_unimplemented_requests_get_an_error_or_a_close(fuzzed, key, version, data):
    resp = _exchange(fuzzed, key, version, data, 0)
    if resp is not None:  # None: no error form for this request, so closed (never left hanging)
        rdef = kcodec.definitions.get(kcodec.definitions.by_api_key(key, "response"))
        codes = list(_error_codes(resp, rdef.root.fields, version))
        assert codes and set(codes) == {35}  # UNSUPPORTED_VERSION wherever the response carries an error


def _error_codes(obj, fields, version):
    """Every error_code the response carries at this version (fields the version lacks left out)."""
    for f in fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if f.attr == "error_code":
            yield value
        elif f.struct is not None and value is not None:
            for item in (value if f.is_array else [value]):
                yield from _error_codes(item, f.struct.fields, version)
