"""SSL contexts for kcodec's client and broker, from an ``ssl.SSLContext`` or file paths.

The client verifies the broker's certificate and host name by default (Python's defaults) and may
present a certificate of its own; the broker presents a certificate and key and, like Kafka's
``ssl.client.auth``, asks clients for none, requests one, or requires one signed by its client CA.
"""

from __future__ import annotations

import os
import ssl
from typing import TYPE_CHECKING, Literal, Optional, Union, get_args

from .dn import subject_rfc2253

if TYPE_CHECKING:
    from .principal_rules import PrincipalRules

PathLike = Union[str, "os.PathLike[str]"]
# What the client accepts as ``tls=``: True (the system's CAs), a CA file, or a ready context.
ClientTls = Union[bool, PathLike, ssl.SSLContext]
# What the broker accepts as ``tls=``: (certificate file, key file) or a ready server context.
ServerTls = Union[tuple[PathLike, PathLike], ssl.SSLContext]
# Kafka's ssl.client.auth: ask for no client certificate, ask for one (a client without is let in as
# User:ANONYMOUS), or refuse the handshake of a client without one.
ClientAuth = Literal["none", "requested", "required"]
CLIENT_AUTH: tuple[str, ...] = get_args(ClientAuth)
_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def client_context(tls: ClientTls, *, check_hostname: bool = True, cert: Optional[PathLike] = None,
                   key: Optional[PathLike] = None) -> Optional[ssl.SSLContext]:
    """None for False; else a context that trusts ``tls`` (a CA bundle file) or the system's CAs, or
    ``tls`` itself. ``cert`` (and ``key``, unless the cert file holds it): the client's certificate
    chain for brokers that ask for one (loaded into a given context too)."""
    if tls is False:
        if cert is not None or key is not None:
            raise ValueError("a TLS client certificate needs TLS (a CA file, True or an SSLContext)")
        return None
    if isinstance(tls, ssl.SSLContext):
        return _with_certificate(tls, cert, key)
    cafile = None if tls is True else os.fspath(tls)
    if cafile is not None and not os.path.isfile(cafile):
        raise ValueError(f"TLS CA file {cafile!r} does not exist")
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except ssl.SSLError as e:
        raise ValueError(f"TLS CA file {cafile!r} holds no usable certificate: {e}") from None
    if not check_hostname:  # still verifies the chain, only not the name
        ctx.check_hostname = False
    return _with_certificate(ctx, cert, key)


def _with_certificate(ctx: ssl.SSLContext, cert: Optional[PathLike], key: Optional[PathLike]) -> ssl.SSLContext:
    if cert is None:
        if key is not None:
            raise ValueError("a TLS key without its certificate")
        return ctx
    certfile, keyfile = os.fspath(cert), None if key is None else os.fspath(key)
    try:
        ctx.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"cannot load the TLS certificate {certfile!r} with key {keyfile!r}: {e}") from None
    return ctx


def server_context(tls: ServerTls, *, client_auth: Optional[ClientAuth] = None,
                   client_ca: Optional[PathLike] = None) -> ssl.SSLContext:
    """A server context from (certificate chain file, private key file), or ``tls`` itself.

    client_auth: Kafka's ``ssl.client.auth`` (None: "none" for files, a given context as it is);
    client_ca: the CA bundle that client certificates must chain to (Kafka's truststore), needed by
    "requested" and "required" unless a given context already trusts some CAs. Both are applied to a
    given context."""
    if client_auth is not None and client_auth not in _VERIFY_MODES:
        raise ValueError(f"TLS client auth {client_auth!r}: expected one of {', '.join(CLIENT_AUTH)}")
    if isinstance(tls, ssl.SSLContext):
        ctx = tls
    else:
        cert, key = tls
        ctx = _with_certificate(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), cert, key)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if client_ca is not None:
        cafile = os.fspath(client_ca)
        if not os.path.isfile(cafile):
            raise ValueError(f"TLS client CA file {cafile!r} does not exist")
        try:
            ctx.load_verify_locations(cafile)
        except ssl.SSLError as e:
            raise ValueError(f"TLS client CA file {cafile!r} holds no usable certificate: {e}") from None
    if client_auth is not None:
        if client_auth != "none" and not ctx.cert_store_stats()["x509_ca"]:
            raise ValueError(f"TLS client auth {client_auth!r} needs a client CA file to verify certificates with")
        ctx.verify_mode = _VERIFY_MODES[client_auth]
    if client_ca is not None and ctx.verify_mode == ssl.CERT_NONE:
        raise ValueError("a TLS client CA file is for client auth 'requested' or 'required', not 'none'")
    return ctx


def client_auth_of(ctx: ssl.SSLContext) -> str:
    """What a server context asks of clients: "none", "requested" or "required"."""
    return {mode: name for name, mode in _VERIFY_MODES.items()}[ctx.verify_mode]


def peer_principal(ssl_object: Optional[ssl.SSLObject], rules: Optional["PrincipalRules"] = None) -> Optional[str]:
    """``User:`` + the RFC 2253 subject of the certificate a TLS client presented (verified by the
    handshake), mapped by ``rules`` (Kafka's ``ssl.principal.mapping.rules``; None: DEFAULT, the DN as it
    is); None without a certificate. NoMatchingRule when no rule applies."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    dn = subject_rfc2253(der)
    return "User:" + (rules.name(dn) if rules is not None else dn)


def looks_like_tls(data: bytes) -> bool:
    """Whether bytes start a TLS record (handshake or alert, TLS 1.x): a Kafka frame never does below
    350 MB, the size those bytes would announce."""
    return len(data) >= 3 and data[0] in (0x15, 0x16) and data[1] == 0x03 and data[2] <= 0x04


def refused_handshake(e: ssl.SSLError) -> str:
    """Why a server's side of a TLS handshake failed, for its log: OpenSSL's reason, and what it means for
    the usual causes (a client without the certificate mutual TLS requires, one from a foreign CA, plaintext)."""
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"the client's certificate does not verify: {e.verify_message} (mutual TLS)"
    reason = getattr(e, "reason", None) or str(e)
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return f"{reason} (the client sent no certificate, which mutual TLS requires)"
    if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNSUPPORTED_PROTOCOL"):
        return f"{reason} (a plaintext client?)"
    if reason == "UNEXPECTED_EOF_WHILE_READING":
        return f"{reason} (the client hung up during the handshake)"
    return str(reason)
