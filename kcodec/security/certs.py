"""A throw-away certificate authority and a server certificate it signs, for tests (``cryptography``).

    from kcodec.security.certs import make_test_certificates
    paths = make_test_certificates(tmp_dir)         # hosts: 127.0.0.1, ::1, localhost
    Cluster(tls=(paths.cert, paths.key)); Client(bootstrap, tls=paths.ca)

The CA's key is not kept: nothing else can ever be signed by it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

DEFAULT_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class TestCertificates:
    """PEM files: the CA certificate (clients trust it), the server's certificate and private key."""

    __test__ = False  # not a pytest class

    ca: Path
    cert: Path
    key: Path


def make_test_certificates(directory: Union[str, "os.PathLike[str]"], hosts: Iterable[str] = DEFAULT_HOSTS,
                           days: int = 2, common_name: str = "kcodec test broker") -> TestCertificates:
    """Write ca.pem, server.pem and server-key.pem into ``directory``; the server certificate names
    ``hosts`` (IP addresses and DNS names) in its subjectAltName."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise ImportError("make_test_certificates needs the 'cryptography' package "
                          "(pip install cryptography, or kcodec[test])") from None
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(name("kcodec throw-away test CA")).issuer_name(
        name("kcodec throw-away test CA")).public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    alt: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder().subject_name(name(common_name)).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = TestCertificates(out / "ca.pem", out / "server.pem", out / "server-key.pem")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    paths.key.chmod(0o600)
    return paths
