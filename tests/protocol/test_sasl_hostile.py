"""Whatever a peer sends, the SASL code answers with SaslError and nothing else."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcodec.protocol.sasl import SaslError, oauthbearer
from kcodec.protocol.sasl.scram import ScramClient, ScramCredential, ScramServer

pytestmark = pytest.mark.fuzz
CRED = ScramCredential.from_password("SCRAM-SHA-256", "pw")
# bytes, and text made of the characters SCRAM and OAUTHBEARER messages are built from
MESSAGES = st.one_of(st.binary(max_size=200),
                     st.text(alphabet="nrcpsvieay=,.\x01-_ abcAZ09+/", max_size=120).map(str.encode))


@given(MESSAGES, MESSAGES)
def test_scram_server(first, final):
    server = ScramServer("SCRAM-SHA-256", {"alice": CRED}.get)
    try:
        server.first(first)
        server.final(final)
    except SaslError:
        pass


@given(MESSAGES, MESSAGES)
def test_scram_client(server_first, server_final):
    client = ScramClient("SCRAM-SHA-256", "alice", "pw", nonce="abc")
    client.first()
    try:
        client.final(b"r=abc" + server_first)
        client.verify(server_final)
    except SaslError:
        pass


@given(MESSAGES, st.binary(max_size=100))
def test_oauthbearer(message, payload):
    token = "eyJhbGciOiJub25lIn0." + base64.urlsafe_b64encode(payload).decode().rstrip("=") + "."
    for attempt in (lambda: oauthbearer.parse_client_message(message),
                    lambda: oauthbearer.validate_unsecured_token(token),
                    lambda: oauthbearer.validate_unsecured_token("e30." + "W" * 5000 + "."),
                    lambda: oauthbearer.validate_unsecured_token(
                        "eyJhbGciOiJub25lIn0." + base64.urlsafe_b64encode(b"[" * 100_000).decode() + ".")):
        try:
            attempt()
        except SaslError:
            pass
