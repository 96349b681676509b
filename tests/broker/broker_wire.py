"""A minimal blocking Kafka wire client for the broker tests: kcodec frames over a socket."""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Any, Iterator

import kcodec
from kcodec.messages import SaslAuthenticateRequest, SaslHandshakeRequest


class Wire:
    def __init__(self, address: tuple[str, int], client_id: str = "kcodec-tests", timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.client_id = client_id
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "Wire":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return out

    def read_frame(self) -> bytes:
        head = self._exact(4)
        return head + self._exact(struct.unpack(">i", head)[0])

    def call(self, req: Any, version: int) -> Any:
        self.correlation += 1
        self.send(kcodec.encode_request(req, version, correlation_id=self.correlation, client_id=self.client_id))
        header, resp = kcodec.decode_response(self.read_frame(), type(req).API_KEY, version)
        assert header.correlation_id == self.correlation
        return resp

    def closed_by_peer(self) -> bool:
        """True once the broker has closed this connection (read returns EOF or a reset)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


@contextlib.contextmanager
def authenticated(cluster: Any, user: str, password: str, version: int = 2) -> Iterator[Wire]:
    with Wire(cluster.addresses[0]) as w:
        hs = w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert hs.error_code == 0 and hs.mechanisms == ("PLAIN",)
        r = w.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), version)
        assert r.error_code == 0, r.error_message
        yield w
