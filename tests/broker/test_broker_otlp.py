"""kcodec_broker.otlp: the metric names of an OTLP MetricsData message, read without a protobuf library."""

from __future__ import annotations

import pytest

from kcodec_broker.otlp import OtlpError, fields, metric_names


def _len(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _metric(name: str) -> bytes:
    gauge = _len(1, bytes([0x31]) + (7).to_bytes(8, "little"))  # a data point with a fixed64 field
    return _len(1, name.encode()) + _len(2, b"about it") + _len(5, gauge)


def test_names_in_order_across_resources_and_scopes():
    scope = _len(1, _len(1, b"librdkafka"))
    first = _len(1, _len(1, b"resource")) + _len(2, scope + _len(2, _metric("a.one")) + _len(2, _metric("a.two")))
    second = _len(2, _len(2, _metric("b.three")) + bytes([3 << 3, 150, 1]))  # a varint field is skipped
    data = _len(1, first) + _len(1, second)
    assert metric_names(data) == ["a.one", "a.two", "b.three"]
    assert metric_names(b"") == []


def test_fields_reads_each_wire_type():
    data = bytes([1 << 3, 0xAC, 0x02]) + bytes([2 << 3 | 5]) + (9).to_bytes(4, "little") + _len(3, b"xy")
    assert list(fields(data)) == [(1, 300), (2, 9), (3, b"xy")]


@pytest.mark.parametrize("data", [bytes([1 << 3 | 2, 5, 1]), bytes([1 << 3, 0x80]), bytes([1 << 3 | 3]),
                                  bytes([1 << 3 | 1, 0])])
def test_what_is_not_protobuf_is_an_error(data):
    with pytest.raises(OtlpError):
        list(fields(data))
    with pytest.raises(OtlpError):
        metric_names(data)
