"""SCRAM (RFC 5802; SHA-256 per RFC 7677, SHA-512 as Kafka uses it): both sides of the exchange.

    client = ScramClient("SCRAM-SHA-256", "alice", "secret")
    first = client.first()                       # n,,n=alice,r=<nonce>
    final = client.final(server_first)           # c=biws,r=<nonce>,p=<proof>
    client.verify(server_final)                  # v=<server signature>, checked

    cred = ScramCredential.from_password("SCRAM-SHA-256", "secret")    # what a server stores
    server = ScramServer("SCRAM-SHA-256", lookup=lambda user: cred)
    server_first = server.first(first); server_final = server.final(final); server.user

A server keeps only (salt, iterations, StoredKey, ServerKey): enough to check a proof and to sign its
answer, not enough to log in as the user. Passwords are UTF-8 without SASLprep, as Kafka's client does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import SaslError

# Kafka's mechanism ids in DescribeUserScramCredentials / AlterUserScramCredentials.
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_IDS.items()}
HASHES = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096   # Kafka's ScramMechanism.minIterations, for both sides
MAX_ITERATIONS = 16384  # Kafka refuses more in AlterUserScramCredentials
MAX_CLIENT_ITERATIONS = 100_000  # a client computes at most this many: a broker cannot make it spin
DEFAULT_ITERATIONS = 4096


def hash_name(mechanism: str) -> str:
    try:
        return HASHES[mechanism]
    except KeyError:
        raise SaslError(f"unknown SCRAM mechanism {mechanism!r}; known: {', '.join(HASHES)}", "mechanism") from None


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with HMAC of the mechanism's hash."""
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode("utf-8"), salt, iterations)


def _hmac(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, HASHES[mechanism]).digest()


def _h(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(HASHES[mechanism], data).digest()


@dataclass(frozen=True)
class ScramCredential:
    """What a server stores per user and mechanism (Kafka's ScramCredential)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
        client_key = _hmac(mechanism, salted, b"Client Key")
        return cls(bytes(salt), _h(mechanism, client_key), _hmac(mechanism, salted, b"Server Key"), iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                      salt: Optional[bytes] = None) -> ScramCredential:
        salt = os.urandom(32) if salt is None else salt
        return cls.from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                        iterations)

    def matches_password(self, mechanism: str, password: str) -> bool:
        """Whether ``password`` is the one this credential was made from (for SASL PLAIN)."""
        salted = salted_password(mechanism, password, self.salt, self.iterations)
        return hmac.compare_digest(self.from_salted_password(mechanism, self.salt, salted, self.iterations).stored_key,
                                   self.stored_key)

    def to_json(self) -> dict[str, object]:
        b64 = base64.b64encode
        return {"salt": b64(self.salt).decode(), "stored_key": b64(self.stored_key).decode(),
                "server_key": b64(self.server_key).decode(), "iterations": self.iterations}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScramCredential:
        d = base64.b64decode
        return cls(d(str(data["salt"]), validate=True), d(str(data["stored_key"]), validate=True),
                   d(str(data["server_key"]), validate=True), int(str(data["iterations"])))


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape(name: str) -> str:
    if "=" in name.replace("=3D", "").replace("=2C", ""):
        raise SaslError(f"SCRAM user name {name!r} has a bad '=' escape")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(text: str, what: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if len(key) != 1 or not eq:
            raise SaslError(f"SCRAM {what} {text!r}: {part!r} is not an attribute (x=value)")
        out.append((key, value))
    return out


def _b64decode(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SaslError(f"SCRAM {what} is not base64: {value!r}") from None


def _text(data: bytes, what: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise SaslError(f"SCRAM {what} is not UTF-8 (byte {e.start})") from None


def _nonce() -> str:
    return base64.b64encode(os.urandom(24)).decode()  # printable, no ','


class ScramClient:
    """The client side of one SCRAM exchange: first() -> final(server_first) -> verify(server_final)."""

    def __init__(self, mechanism: str, user: str, password: str, *, nonce: Optional[str] = None,
                 min_iterations: int = MIN_ITERATIONS) -> None:
        hash_name(mechanism)
        self.mechanism, self.user, self.password = mechanism, user, password
        self.nonce = nonce or _nonce()
        self.min_iterations = min_iterations
        self._bare = f"n={_escape(user)},r={self.nonce}"
        self._server_signature: Optional[bytes] = None

    def first(self) -> bytes:
        return ("n,," + self._bare).encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first, "server-first-message")
        attrs = dict(_attributes(text, "server-first-message"))
        if "e" in attrs:
            raise SaslError(f"the server refused the SCRAM exchange: {attrs['e']}", "credentials")
        if not {"r", "s", "i"} <= attrs.keys():
            raise SaslError(f"SCRAM server-first-message {text!r} lacks r, s or i")
        nonce = attrs["r"]
        if not nonce.startswith(self.nonce) or nonce == self.nonce:
            raise SaslError("the server's SCRAM nonce does not extend the client's", "nonce")
        try:
            iterations = int(attrs["i"])
        except ValueError:
            raise SaslError(f"SCRAM iteration count {attrs['i']!r} is not a number") from None
        if iterations < self.min_iterations:
            raise SaslError(f"the server asks for {iterations} SCRAM iterations, fewer than the minimum "
                            f"{self.min_iterations}", "credentials")
        if iterations > MAX_CLIENT_ITERATIONS:
            raise SaslError(f"the server asks for {iterations} SCRAM iterations, more than this client computes "
                            f"({MAX_CLIENT_ITERATIONS})", "credentials")
        salted = salted_password(self.mechanism, self.password, _b64decode(attrs["s"], "salt"), iterations)
        without_proof = f"c=biws,r={nonce}"  # biws: base64 of the GS2 header "n,,"
        auth_message = f"{self._bare},{text},{without_proof}".encode("utf-8")
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        signature = _hmac(self.mechanism, _h(self.mechanism, client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        self._server_signature = _hmac(self.mechanism, _hmac(self.mechanism, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode("utf-8")

    def verify(self, server_final: bytes) -> None:
        """Raise SaslError unless the server proved it knows the credential (or it reported an error)."""
        text = _text(server_final, "server-final-message")
        attrs = dict(_attributes(text, "server-final-message"))
        if "e" in attrs:
            raise SaslError(f"the server refused the SCRAM proof: {attrs['e']}", "credentials")
        if "v" not in attrs or self._server_signature is None:
            raise SaslError(f"SCRAM server-final-message {text!r} has no server signature (v=)")
        if not hmac.compare_digest(_b64decode(attrs["v"], "server signature"), self._server_signature):
            raise SaslError("the server's SCRAM signature does not verify: this server does not hold the "
                            "user's credential, or its answer was altered", "server-signature")


class ScramServer:
    """The server side of one SCRAM exchange: first(client_first) -> final(client_final); then ``user``.

    lookup(user) returns the user's credential for this mechanism, or None for an unknown user.
    """

    def __init__(self, mechanism: str, lookup: Callable[[str], Optional[ScramCredential]], *,
                 nonce: Optional[str] = None) -> None:
        hash_name(mechanism)
        self.mechanism = mechanism
        self.lookup = lookup
        self._server_nonce = nonce or _nonce()
        self.user: Optional[str] = None
        self._cred: Optional[ScramCredential] = None
        self._gs2 = ""
        self._client_bare = ""
        self._server_first = ""

    def first(self, client_first: bytes) -> bytes:
        text = _text(client_first, "client-first-message")
        flag, sep, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or flag not in ("n", "y"):
            if flag.startswith("p"):
                raise SaslError("SCRAM channel binding (-PLUS) is not supported")
            raise SaslError(f"SCRAM client-first-message {text!r} has no GS2 header (n,,)")
        if authzid and not authzid.startswith("a="):
            raise SaslError(f"SCRAM client-first-message: bad authorization id {authzid!r}")
        attrs = _attributes(bare, "client-first-message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise SaslError(f"SCRAM client-first-message {bare!r} must start with n=USER,r=NONCE")
        user = _unescape(attrs[0][1])
        if authzid and _unescape(authzid[2:]) != user:
            raise SaslError(f"SCRAM: authorization id {authzid[2:]!r} differs from user {user!r}", "principal")
        cred = self.lookup(user)
        if cred is None:
            raise SaslError(f"unknown user {user!r} for {self.mechanism}", "unknown-user")
        self.user, self._cred = user, cred
        self._gs2 = f"{flag},{authzid},"
        self._client_bare = bare
        nonce = attrs[1][1] + self._server_nonce
        self._server_first = f"r={nonce},s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
        return self._server_first.encode("utf-8")

    def final(self, client_final: bytes) -> bytes:
        if self._cred is None:
            raise SaslError("SCRAM client-final-message before the client-first-message")
        text = _text(client_final, "client-final-message")
        without_proof, sep, proof_attr = text.rpartition(",")
        attrs = dict(_attributes(without_proof, "client-final-message")) if sep else {}
        if not proof_attr.startswith("p=") or "c" not in attrs or "r" not in attrs:
            raise SaslError(f"SCRAM client-final-message {text!r} must be c=...,r=...,p=...")
        if _b64decode(attrs["c"], "channel binding") != self._gs2.encode("utf-8"):
            raise SaslError("SCRAM channel binding does not repeat the GS2 header")
        if attrs["r"] != self._server_first[2:].split(",", 1)[0]:
            raise SaslError("SCRAM client-final-message carries the wrong nonce", "nonce")
        proof = _b64decode(proof_attr[2:], "client proof")
        auth_message = f"{self._client_bare},{self._server_first},{without_proof}".encode("utf-8")
        m, cred = self.mechanism, self._cred
        signature = _hmac(m, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslError(f"SCRAM client proof of {len(proof)} bytes, expected {len(signature)}", "credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(_h(m, client_key), cred.stored_key):
            raise SaslError(f"wrong password for user {self.user!r} ({m})", "credentials")
        return ("v=" + base64.b64encode(_hmac(m, cred.server_key, auth_message)).decode()).encode("utf-8")
