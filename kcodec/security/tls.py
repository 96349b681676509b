"""SSL contexts for kcodec's client and broker, from an ``ssl.SSLContext`` or file paths.

The client verifies the broker's certificate and host name by default (Python's defaults); the broker
presents a certificate and key and asks clients for none.
"""

from __future__ import annotations

import os
import ssl
from typing import Optional, Union

PathLike = Union[str, "os.PathLike[str]"]
# What the client accepts as ``tls=``: True (the system's CAs), a CA file, or a ready context.
ClientTls = Union[bool, PathLike, ssl.SSLContext]
# What the broker accepts as ``tls=``: (certificate file, key file) or a ready server context.
ServerTls = Union[tuple[PathLike, PathLike], ssl.SSLContext]


def client_context(tls: ClientTls, *, check_hostname: bool = True) -> Optional[ssl.SSLContext]:
    """None for False; else a context that trusts ``tls`` (a CA bundle file) or the system's CAs."""
    if tls is False:
        return None
    if isinstance(tls, ssl.SSLContext):
        return tls
    cafile = None if tls is True else os.fspath(tls)
    if cafile is not None and not os.path.isfile(cafile):
        raise ValueError(f"TLS CA file {cafile!r} does not exist")
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except ssl.SSLError as e:
        raise ValueError(f"TLS CA file {cafile!r} holds no usable certificate: {e}") from None
    if not check_hostname:  # still verifies the chain, only not the name
        ctx.check_hostname = False
    return ctx


def server_context(tls: ServerTls) -> ssl.SSLContext:
    """A server context from (certificate chain file, private key file), or ``tls`` itself."""
    if isinstance(tls, ssl.SSLContext):
        return tls
    cert, key = (os.fspath(p) for p in tls)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise ValueError(f"cannot load the TLS certificate {cert!r} with key {key!r}: {e}") from None
    return ctx


def looks_like_tls(data: bytes) -> bool:
    """Whether bytes start a TLS record (handshake or alert, TLS 1.x): a Kafka frame never does below
    350 MB, the size those bytes would announce."""
    return len(data) >= 3 and data[0] in (0x15, 0x16) and data[1] == 0x03 and data[2] <= 0x04
