"""Just enough of OTLP's MetricsData protobuf to name the metrics a client pushed (KIP-714), with no
protobuf dependency: MetricsData.resource_metrics (1) -> ResourceMetrics.scope_metrics (2) ->
ScopeMetrics.metrics (2) -> Metric.name (1). Values, attributes and resources are not decoded."""

from __future__ import annotations

from typing import Iterator

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class OtlpError(ValueError):
    """Bytes that are not a protobuf message."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise OtlpError(f"truncated or overlong varint at byte {pos}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, object]]:
    """(field number, value) of one message: an int for varints and fixed fields, bytes for the rest."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, pos = _varint(buf, pos)
            yield number, value
        elif wire in (I64, I32):
            size = 8 if wire == I64 else 4
            if pos + size > len(buf):
                raise OtlpError(f"truncated fixed field {number}")
            yield number, int.from_bytes(buf[pos:pos + size], "little")
            pos += size
        elif wire == LEN:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise OtlpError(f"field {number} runs past the end ({size} bytes at {pos})")
            yield number, buf[pos:pos + size]
            pos += size
        else:
            raise OtlpError(f"wire type {wire} (field {number}) is not used by proto3")


def _children(buf: bytes, number: int) -> Iterator[bytes]:
    for n, value in fields(buf):
        if n == number and isinstance(value, bytes):
            yield value


def metric_names(data: bytes) -> list[str]:
    """The names of the metrics in an OTLP MetricsData message, in order (OtlpError if it is not one)."""
    return [name.decode("utf-8", "replace") for rm in _children(data, 1) for sm in _children(rm, 2)
            for metric in _children(sm, 2) for name in _children(metric, 1)]
