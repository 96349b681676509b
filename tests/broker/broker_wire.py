"""A minimal blocking Kafka wire client for the broker tests: kcodec frames over a socket."""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import sys
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
        return self.receive(self.request(req, version))

    def request(self, req: Any, version: int) -> tuple[int, int, int]:
        """Send without reading the answer (one that waits, as a JoinGroup): ``receive`` reads it."""
        self.correlation += 1
        self.send(kcodec.encode_request(req, version, correlation_id=self.correlation, client_id=self.client_id))
        return type(req).API_KEY, version, self.correlation

    def receive(self, sent: tuple[int, int, int]) -> Any:
        key, version, correlation = sent
        header, resp = kcodec.decode_response(self.read_frame(), key, version)
        assert header.correlation_id == correlation
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
        assert hs.error_code == 0 and "PLAIN" in hs.mechanisms
        r = w.call(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), version)
        assert r.error_code == 0, r.error_message
        yield w


def start_cli(*args: str, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """``kcodec broker --listen 127.0.0.1:0 ARGS`` in a subprocess, and its start line (with the bootstrap)."""
    proc = subprocess.Popen([sys.executable, "-m", "kcodec", "broker", "--listen", "127.0.0.1:0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "bootstrap" not in line:
        proc.kill()
        raise AssertionError(f"no start line: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, line
