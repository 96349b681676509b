"""Mutual TLS pieces without a broker: client certificates from the throw-away CA, their subjects in
RFC 2253 form (Kafka's TLS principals), and the settings' checks."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from needs import need_module

from kcodec.security.certs import ThrowAwayCA
from kcodec.security.dn import DerError, escape, subject_rfc2253
from kcodec.security.tls import client_auth_of, client_context, server_context

x509 = need_module("cryptography.x509")
from cryptography.hazmat.primitives.serialization import Encoding  # noqa: E402
from cryptography.x509.name import _ASN1Type  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

SUBJECTS = ["CN=alice", "CN=alice,OU=tests,O=kcodec", "CN=alice,OU=tests+UID=7,O=kcodec\\, inc.,C=DE",
            "CN=J\u00fcrgen \\<j\\>\\;x,DC=example,DC=com", "CN=\\#lead\\ ,L=Berlin,ST=BE,STREET=Main 1"]
# Subjects (RFC 4514, as cryptography reads them) and the name OpenJDK 17's X500Principal.getName() gives
# their certificates (what Kafka's principal is): SubjectNames.java beside this file prints it, and the
# test asks Java again when a JDK is here. The first ones differ from their RFC 4514 form.
JAVA_NAMES = {
    "CN=bob,1.2.840.113549.1.9.1=bob@example.com": "CN=bob,1.2.840.113549.1.9.1=#160f626f62406578616d706c652e636f6d",
    "CN=role\\=admin\\#1,O=kcodec": "CN=role\\=admin\\#1,O=kcodec",  # = and # escaped anywhere
    "CN=\\  two  \\ ": "CN=\\ \\ two\\ \\ \\ ",  # every edge space escaped
    "CN=a\\\\b\\\"c": "CN=a\\\\b\\\"c",
    "2.5.4.5=123,CN=serial": "2.5.4.5=#1303313233,CN=serial",  # no RFC 2253 keyword: the DER in hex
    **{s: s for s in SUBJECTS},
}


def _der(path) -> bytes:
    return x509.load_pem_x509_certificate(path.read_bytes()).public_bytes(Encoding.DER)


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return ThrowAwayCA(tmp_path_factory.mktemp("mtls-ca"))


@pytest.mark.parametrize("subject", SUBJECTS)
def test_client_certificates_carry_the_chosen_subject_in_rfc2253_form(ca, subject):
    pair = ca.client_certificate("c", subject)
    cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
    assert cert.subject.rfc4514_string() == subject == subject_rfc2253(_der(pair.cert))
    assert pair.key.stat().st_mode & 0o077 == 0
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert [u.dotted_string for u in usage] == ["1.3.6.1.5.5.7.3.2"]  # clientAuth


def test_subjects_read_as_java_reads_them(ca):
    certs = [ca.client_certificate(f"java{i}", subject).cert for i, subject in enumerate(JAVA_NAMES)]
    # Java reads a BMPString's bytes as UTF-8 (NULs shown as \\00) and a UniversalString as hex
    typed = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Bmp", _type=_ASN1Type.BMPString),
                       x509.NameAttribute(NameOID.COMMON_NAME, "u", _type=_ASN1Type.UniversalString)])
    certs.append(ca.client_certificate("typed", typed).cert)
    expected = [*JAVA_NAMES.values(), "CN=#1c0400000075,O=\\00B\\00m\\00p"]
    assert [subject_rfc2253(_der(c)) for c in certs] == expected
    java = shutil.which("java")
    if java is None:
        return  # the table above was recorded from Java; nothing to ask again
    run = subprocess.run([java, str(Path(__file__).with_name("SubjectNames.java")), *map(str, certs)],
                         capture_output=True, text=True, timeout=120)
    if run.returncode and "jdk.compiler" in run.stderr:
        return  # a JRE without javac cannot run a source file
    assert run.returncode == 0 and run.stdout.splitlines() == expected, run.stderr


def test_java_escapes(ca):
    """Java escapes = and # anywhere (RFC 2253 asks only for a leading #), and every edge space."""
    assert escape('a,b+c"d\\e<f>g;h=i#j') == 'a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h\\=i\\#j'
    assert (escape("  x y "), escape(" "), escape("n\0l")) == ("\\ \\ x y\\ ", "\\ ", "n\\00l")
    pair = ca.client_certificate("eq", "CN=role\\=admin\\#1,O=kcodec")
    assert subject_rfc2253(_der(pair.cert)) == "CN=role\\=admin\\#1,O=kcodec"


def test_bad_der():
    for bad in (b"", b"\x30", b"\x30\x05\x02\x01\x00", b"\x04\x00", b"\x30\x84\xff\xff\xff\xff"):
        with pytest.raises(DerError):
            subject_rfc2253(bad)


def test_server_context_client_auth_modes(test_certs):
    pair = (test_certs.cert, test_certs.key)
    assert client_auth_of(server_context(pair)) == "none"
    for mode in ("requested", "required"):
        ctx = server_context(pair, client_auth=mode, client_ca=test_certs.ca)
        assert client_auth_of(ctx) == mode and ctx.cert_store_stats()["x509_ca"] == 1
    with pytest.raises(ValueError, match="expected one of none, requested, required"):
        server_context(pair, client_auth="want")
    with pytest.raises(ValueError, match="needs a client CA file"):
        server_context(pair, client_auth="required")
    with pytest.raises(ValueError, match="not 'none'"):
        server_context(pair, client_ca=test_certs.ca)
    with pytest.raises(ValueError, match="client CA file .* does not exist"):
        server_context(pair, client_auth="required", client_ca=test_certs.ca.with_name("missing.pem"))
    given = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    assert server_context(given, client_auth="requested", client_ca=test_certs.ca) is given
    assert given.verify_mode == ssl.CERT_OPTIONAL


def test_client_context_loads_the_client_certificate(test_certs):
    alice = test_certs.clients["alice"]
    assert client_context(test_certs.ca, cert=alice.cert, key=alice.key) is not None
    given = ssl.create_default_context(cafile=str(test_certs.ca))
    assert client_context(given, cert=alice.cert, key=alice.key) is given
    with pytest.raises(ValueError, match="cannot load the TLS certificate"):
        client_context(test_certs.ca, cert=alice.cert, key=test_certs.clients["bob"].key)  # not its key
    with pytest.raises(ValueError, match="key without its certificate"):
        client_context(test_certs.ca, key=alice.key)
    with pytest.raises(ValueError, match="needs TLS"):
        client_context(False, cert=alice.cert, key=alice.key)
