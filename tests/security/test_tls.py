"""The throw-away certificates and the TLS contexts made from files: a handshake verifies, host names
are checked, bad files are clear errors."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest

from kcodec.security.tls import client_context, looks_like_tls, server_context



@pytest.fixture
def certs(test_certs):
    return test_certs


def _handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext, name: str) -> str:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        errors: list[BaseException] = []

        def serve() -> None:
            conn, _ = listener.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"ok")
            except (ssl.SSLError, OSError) as e:
                errors.append(e)

        t = threading.Thread(target=serve)
        t.start()
        try:
            with socket.create_connection(listener.getsockname(), timeout=10) as raw:
                with client_ctx.wrap_socket(raw, server_hostname=name) as tls:
                    return tls.recv(2).decode()
        finally:
            t.join(10)


def test_the_ca_signs_a_certificate_for_local_names(certs):
    assert certs.key.stat().st_mode & 0o077 == 0
    server = server_context((certs.cert, certs.key))
    for name in ("127.0.0.1", "localhost"):
        assert _handshake(server, client_context(certs.ca), name) == "ok"
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        _handshake(server, client_context(certs.ca), "kafka.example.com")  # not a name the certificate holds
    assert _handshake(server, client_context(certs.ca, check_hostname=False), "kafka.example.com") == "ok"
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer|self.signed"):
        _handshake(server, client_context(True), "127.0.0.1")  # the system's CAs do not know ours


def test_contexts_refuse_bad_files_clearly(certs, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        client_context(tmp_path / "missing.pem")
    empty = tmp_path / "empty.pem"
    empty.write_text("no certificate here\n")
    with pytest.raises(ValueError, match="holds no usable certificate"):
        client_context(empty)
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        server_context((certs.cert, certs.ca))  # a certificate is not its key
    ctx = ssl.create_default_context()
    assert client_context(ctx) is ctx and server_context(ctx) is ctx and client_context(False) is None


def test_tls_records_are_told_apart_from_kafka_frames():
    assert looks_like_tls(b"\x16\x03\x01\x02\x00") and looks_like_tls(b"\x15\x03\x03\x00\x02")
    assert not looks_like_tls(b"\x00\x00\x00\x10") and not looks_like_tls(b"\x16\x03")
