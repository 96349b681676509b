"""A throw-away certificate authority, and the server and client certificates it signs, for tests
(``cryptography``).

    from kcodec.security.certs import make_test_certificates
    paths = make_test_certificates(tmp_dir, clients={"alice": "CN=alice,O=kcodec tests"})
    Cluster(tls=(paths.cert, paths.key))            # hosts: 127.0.0.1, ::1, localhost
    Client(bootstrap, tls=paths.ca)
    # mutual TLS: the broker requires client certificates from the same CA
    Cluster(tls=(paths.cert, paths.key), tls_client_auth="required", tls_client_ca=paths.ca)
    Client(bootstrap, tls=paths.ca, tls_cert=paths.clients["alice"].cert, tls_key=paths.clients["alice"].key)

The CA's key lives in memory only (``ThrowAwayCA``): once that object is gone nothing else can ever be
signed by the CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Union

if TYPE_CHECKING:
    from cryptography import x509 as x509_types

DEFAULT_HOSTS = ("127.0.0.1", "::1", "localhost")
Directory = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class KeyPair:
    """PEM files: a certificate and its private key."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class TestCertificates:
    """PEM files: the CA certificate (clients and mTLS brokers trust it), the server's certificate and
    private key, and client certificates by name."""

    __test__ = False  # not a pytest class

    ca: Path
    cert: Path
    key: Path
    clients: dict[str, KeyPair] = field(default_factory=dict)


def _x509() -> Any:
    try:
        from cryptography import x509
    except ImportError:
        raise ImportError("kcodec.security.certs needs the 'cryptography' package "
                          "(pip install cryptography, or kcodec[test])") from None
    return x509


class ThrowAwayCA:
    """A CA whose key never leaves this object; ``ca.pem`` in ``directory``, certificates beside it."""

    def __init__(self, directory: Directory, days: int = 2, common_name: str = "kcodec throw-away test CA") -> None:
        x509 = _x509()
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._start, self._end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self._cert = (self._builder(name, self._key.public_key()).issuer_name(name)
                      .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                      .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                   content_commitment=False, key_encipherment=False,
                                                   data_encipherment=False, key_agreement=False,
                                                   encipher_only=False, decipher_only=False), critical=True)
                      .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
                      .sign(self._key, hashes.SHA256()))
        self.ca = self.directory / "ca.pem"
        self.ca.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def _builder(self, subject: Any, public_key: Any) -> Any:
        x509 = _x509()
        return (x509.CertificateBuilder().subject_name(subject).public_key(public_key)
                .serial_number(x509.random_serial_number()).not_valid_before(self._start).not_valid_after(self._end))

    def _issue(self, stem: str, subject: Any, usage: Any, *extensions: Any) -> KeyPair:
        x509 = _x509()
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        builder = (self._builder(subject, key.public_key()).issuer_name(self._cert.subject)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                                  critical=False))
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.directory / f"{stem}.pem", self.directory / f"{stem}-key.pem")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        pair.key.chmod(0o600)
        return pair

    def server_certificate(self, hosts: Iterable[str] = DEFAULT_HOSTS, common_name: str = "kcodec test broker",
                           stem: str = "server") -> KeyPair:
        """``stem.pem`` and ``stem-key.pem``: a server certificate naming ``hosts`` (IP addresses and
        DNS names) in its subjectAltName."""
        x509 = _x509()
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        alt: list[Any] = []
        for host in hosts:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alt.append(x509.DNSName(host))
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        return self._issue(stem, subject, ExtendedKeyUsageOID.SERVER_AUTH, x509.SubjectAlternativeName(alt))

    def client_certificate(self, name: str, subject: Union[str, "x509_types.Name"] = "") -> KeyPair:
        """``client-NAME.pem`` and ``client-NAME-key.pem``: a client certificate whose subject is
        ``subject``, an RFC 4514 string (default ``CN=NAME``) or a ``cryptography.x509.Name``; a broker
        that verifies it names the client ``User:`` + that subject in RFC 2253 form (kcodec.security.dn)."""
        x509 = _x509()
        from cryptography.x509.oid import ExtendedKeyUsageOID

        dn = subject if isinstance(subject, x509.Name) else x509.Name.from_rfc4514_string(subject or f"CN={name}")
        return self._issue(f"client-{name}", dn, ExtendedKeyUsageOID.CLIENT_AUTH)


def make_test_certificates(directory: Directory, hosts: Iterable[str] = DEFAULT_HOSTS, days: int = 2,
                           common_name: str = "kcodec test broker",
                           clients: Mapping[str, str] = {}) -> TestCertificates:
    """Write ca.pem, server.pem and server-key.pem into ``directory`` (the server certificate names
    ``hosts`` in its subjectAltName), and client-NAME.pem / client-NAME-key.pem for each
    ``clients`` {NAME: subject ("" for CN=NAME)}. The CA's key is then dropped."""
    ca = ThrowAwayCA(directory, days)
    server = ca.server_certificate(hosts, common_name)
    issued = {name: ca.client_certificate(name, subject) for name, subject in clients.items()}
    return TestCertificates(ca.ca, server.cert, server.key, issued)
