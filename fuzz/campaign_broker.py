"""The broker's side of the campaign: mutated request frames sent to an in-process broker on 127.0.0.1.

Each frame goes on a connection of its own, whose writing side is then shut: the broker must answer every
whole request on it (each answer decoding as the response to that request) and close it, or close it at
once, within a few seconds; it must log no error of its own (a handler or encoding failure); and a witness
connection, open for the whole run, must have its ApiVersions request answered after every input.
Requests that may rightly wait (a long-polling Fetch, JoinGroup, SyncGroup, ShareFetch) are given a short
while and then let go.
"""

from __future__ import annotations

import logging
import socket
import struct
from typing import Any, Optional

import kcodec
from kcodec_broker import Cluster
from kcodec.messages import ApiVersionsRequest

WAITING_KEYS = {1, 11, 14, 78}  # Fetch, JoinGroup, SyncGroup, ShareFetch
ANSWER_SECONDS = 5.0
WAIT_SECONDS = 0.3


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        self.messages.append(text)


class BrokerTarget:
    """One broker for a child process's whole chunk."""

    def __init__(self) -> None:
        self.errors = _Errors()
        logger = logging.getLogger("kcodec_broker")
        logger.addHandler(self.errors)
        logger.propagate = False  # the closes it logs as warnings are expected here, and many
        self.cluster = Cluster(brokers=1, system_topic_partitions=2, max_partitions_per_topic=50,
                               max_frame_size=1 << 20, max_partition_bytes=4 << 20).start()
        for i in range(2):
            self.cluster.create_topic(f"t{i}", 2, 1)
        self.address = self.cluster.addresses[0]
        self.witness = socket.create_connection(self.address, timeout=ANSWER_SECONDS)
        self.dead = False
        self._witness_calls = 0

    def close(self) -> None:
        self.witness.close()
        self.cluster.stop()
        logging.getLogger("kcodec_broker").removeHandler(self.errors)

    def check(self, frame: bytes) -> Optional[str]:
        """None, or what went wrong with this frame."""
        self.errors.messages.clear()
        expected = _expected(frame)
        waits = expected is not None and expected[0] in WAITING_KEYS
        got, closed = self._exchange(frame, WAIT_SECONDS if waits else ANSWER_SECONDS)
        problem = None
        if not closed and not waits:
            problem = f"no answer and no close within {ANSWER_SECONDS} s"
        elif expected is not None:
            problem = _answers_decode(got, expected)
        if problem is None and self.errors.messages:
            problem = f"the broker logged an error: {self.errors.messages[0][:300]}"
        if problem is None and not self._witness_answered():
            self.dead = True
            problem = "the broker stopped answering another connection's ApiVersions"
        return problem

    def _exchange(self, frame: bytes, seconds: float) -> tuple[bytes, bool]:
        """What the broker sent back, and whether it closed the connection in time."""
        got = bytearray()
        with socket.create_connection(self.address, timeout=seconds) as s:
            try:
                s.sendall(frame)
                s.shutdown(socket.SHUT_WR)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        return bytes(got), True
                    got += chunk
            except socket.timeout:
                return bytes(got), False
            except (ConnectionResetError, BrokenPipeError):
                return bytes(got), True

    def _witness_answered(self) -> bool:
        self._witness_calls += 1
        try:
            self.witness.sendall(kcodec.encode_request(ApiVersionsRequest(), 3, correlation_id=self._witness_calls,
                                                       client_id="witness"))
            head = _exact(self.witness, 4)
            header, _ = kcodec.decode_response(head + _exact(self.witness, struct.unpack(">i", head)[0]), 18, 3)
            return header.correlation_id == self._witness_calls
        except (OSError, ConnectionError, kcodec.KcodecError):
            return False


def _exact(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _expected(frame: bytes) -> Optional[tuple[int, int, int]]:
    """(api key, version, correlation id) of a request whose header decodes; None otherwise. The header
    only: the broker serves a body followed by bytes its schema does not read, as Kafka does."""
    try:
        header, _, _ = kcodec.decode_request_header(frame)
        kcodec.message_class(header.request_api_key, "request")
    except kcodec.KcodecError:
        return None
    return header.request_api_key, header.request_api_version, header.correlation_id


def _answers_decode(got: bytes, expected: tuple[int, int, int]) -> Optional[str]:
    """Every whole frame sent back is the response to the request; a cut-off tail is one too."""
    key, version, corr = expected
    pos = 0
    while pos < len(got):
        if len(got) - pos < 4 or len(got) - pos - 4 < struct.unpack_from(">i", got, pos)[0]:
            return f"a cut-off response ({len(got) - pos} bytes) to api key {key} v{version}"
        end = pos + 4 + struct.unpack_from(">i", got, pos)[0]
        try:
            try:
                header, _ = kcodec.decode_response(got[pos:end], key, version)
            except kcodec.UnsupportedVersionError:  # a version kcodec lacks (ApiVersions): answered as v0
                header, _ = kcodec.decode_response(got[pos:end], key, 0)
        except kcodec.KcodecError as e:
            return f"the response to api key {key} v{version} does not decode: {e}"
        if header.correlation_id != corr:
            return f"a response with correlation id {header.correlation_id}, not {corr}"
        pos = end
    return None


def broker_check(target: Any, kind: str, data: bytes) -> Optional[str]:
    return target.check(data) if kind == "request" else None
