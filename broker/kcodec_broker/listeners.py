"""A broker's listeners, as Kafka's ``listeners`` and ``listener.security.protocol.map`` name them.

Every broker of a ``Cluster`` opens each listener on a port of its own. A listener has a name (``PLAINTEXT``,
``EXTERNAL``, ...), a security protocol, and its own TLS and SASL settings; Metadata, FindCoordinator and
DescribeCluster answer a client with the brokers' endpoints on the listener it connected to, as Kafka does,
so a client never learns an address it cannot speak to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional

from kcodec.security.principal_rules import PrincipalRules
from kcodec.security.tls import ClientAuth, PathLike, ServerTls, server_context

from .context import ListenerRuntime
from .mechanisms import SaslSettings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_NAME = re.compile(r"[A-Za-z0-9_]+\Z")
_LISTEN = re.compile(r"(?:(?P<name>[A-Za-z0-9_]+)=)?(?:(?P<protocol>[A-Za-z_]+)://)?(?P<host>.*):(?P<port>\d+)\Z")


@dataclass(frozen=True)
class Listener:
    """One listener of every broker.

    name: what Kafka calls it (letters, digits, ``_``); protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    (None: the name, which must then be one of them). port: the first broker's (the others take the next
    ones); 0 gives each broker an ephemeral port. host: where it listens (None: the cluster's host).
    The TLS settings (SSL, SASL_SSL) and the SASL mechanisms (SASL_*) left None are the cluster's.
    """

    name: str
    protocol: Optional[str] = None
    port: int = 0
    host: Optional[str] = None
    tls: Optional[ServerTls] = None
    tls_client_auth: Optional[ClientAuth] = None
    tls_client_ca: Optional[PathLike] = None
    tls_principal_rules: Optional[str] = None
    sasl_mechanisms: Optional[tuple[str, ...]] = None

    @property
    def security_protocol(self) -> str:
        return (self.protocol or self.name).upper()


@dataclass(frozen=True)
class ClusterSecurity:
    """The cluster-wide settings a listener takes unless it sets its own."""

    tls: Optional[ServerTls] = None
    tls_client_auth: Optional[ClientAuth] = None
    tls_client_ca: Optional[PathLike] = None
    tls_principal_rules: Optional[str] = None
    sasl_mechanisms: tuple[str, ...] = ()
    reauth_ms: Optional[int] = None
    oauth_scope: tuple[str, ...] = ()

    def default_listener(self, port: int) -> Listener:
        """The one listener of a cluster given none: TLS if it has a certificate, SASL if mechanisms."""
        tls = "SSL" if self.tls is not None else "PLAINTEXT"
        return Listener(f"SASL_{tls}" if self.sasl_mechanisms else tls, port=port)

    def resolve(self, listeners: Iterable[Listener]) -> list[ListenerRuntime]:
        """Each listener's runtime settings; ValueError names a listener that cannot work."""
        out: list[ListenerRuntime] = []
        for lst in listeners:
            out.append(self._resolve(lst))
        names = [r.name for r in out]
        if not names:
            raise ValueError("a cluster needs at least one listener")
        if len(set(names)) != len(names):
            raise ValueError(f"listener names must differ: {names}")
        return out

    def _resolve(self, lst: Listener) -> ListenerRuntime:
        protocol = lst.security_protocol
        if not _NAME.match(lst.name):
            raise ValueError(f"listener name {lst.name!r}: letters, digits and _ only")
        if protocol not in PROTOCOLS:
            raise ValueError(f"listener {lst.name}: security protocol {protocol!r} is none of {', '.join(PROTOCOLS)}")
        uses_tls, uses_sasl = protocol.endswith("SSL"), protocol.startswith("SASL_")
        cert = lst.tls if lst.tls is not None else self.tls
        client_auth = lst.tls_client_auth if lst.tls_client_auth is not None else self.tls_client_auth
        client_ca = lst.tls_client_ca if lst.tls_client_ca is not None else self.tls_client_ca
        rules = lst.tls_principal_rules if lst.tls_principal_rules is not None else self.tls_principal_rules
        if not uses_tls and (lst.tls, lst.tls_client_auth, lst.tls_client_ca, lst.tls_principal_rules) != (None,) * 4:
            raise ValueError(f"listener {lst.name} is {protocol}: it takes no TLS settings")
        if uses_tls and cert is None:
            raise ValueError(f"listener {lst.name} is {protocol}: it needs tls= (the broker's certificate and key)")
        if not uses_sasl and lst.sasl_mechanisms is not None:
            raise ValueError(f"listener {lst.name} is {protocol}: it takes no SASL mechanisms")
        mechanisms = tuple(dict.fromkeys(lst.sasl_mechanisms if lst.sasl_mechanisms is not None
                                         else self.sasl_mechanisms))
        if uses_sasl and not mechanisms:
            raise ValueError(f"listener {lst.name} is {protocol}: it needs SASL mechanisms (users= or "
                             "sasl_mechanisms=)")
        context = (server_context(cert, client_auth=client_auth, client_ca=client_ca)
                   if uses_tls and cert is not None else None)
        return ListenerRuntime(
            lst.name, protocol, tls=context,
            sasl_settings=SaslSettings(mechanisms if uses_sasl else (), self.reauth_ms, self.oauth_scope),
            tls_principal_rules=PrincipalRules(rules) if uses_tls and rules is not None else None)


def parse_listen(text: str) -> Listener:
    """``[NAME=][PROTOCOL://]HOST:PORT`` (``kcodec broker --listen``) as a Listener. Without a protocol the
    name is ``""``: the caller lets the cluster's other options decide it (``ClusterSecurity.default_listener``)."""
    m = _LISTEN.match(text)
    if m is None:
        raise ValueError(f"--listen {text!r}: expected [NAME=][PROTOCOL://]HOST:PORT, e.g. SSL://127.0.0.1:9093")
    name, protocol = m["name"], m["protocol"]
    if name is not None and protocol is None:
        raise ValueError(f"--listen {text!r}: a named listener needs a protocol, e.g. {name}=SASL_SSL://HOST:PORT")
    host = m["host"][1:-1] if m["host"].startswith("[") and m["host"].endswith("]") else m["host"]  # [::1]
    return Listener(name or (protocol or "").upper(), protocol.upper() if name and protocol else None,
                    port=int(m["port"]), host=host or None)
