"""What a handler sees: the cluster it belongs to, the connection's session and the request's header."""

from __future__ import annotations

import ipaddress
import ssl
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional

from kcodec.messages import GetTelemetrySubscriptionsRequest, InitProducerIdRequest, PushTelemetryRequest
from kcodec.protocol.sasl import SaslServer
from kcodec.security.principal_rules import PrincipalRules
from kcodec.security.tls import client_auth_of

from .acl import ANONYMOUS, Authorizer
from .mechanisms import SaslSettings
from .faults import Interceptors
from .groups.coordinator import GroupCoordinator, GroupSettings
from .state import ClusterState
from .telemetry import DEFAULT_TELEMETRY_MAX_BYTES, Telemetry
from .txn import TransactionCoordinator, TransactionSettings


@dataclass(frozen=True)
class ListenerRuntime:
    """What a connection's listener asks of it (built by listeners.ClusterSecurity)."""

    name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    tls: Optional[ssl.SSLContext] = None       # SSL / SASL_SSL
    sasl_settings: SaslSettings = field(default_factory=SaslSettings)  # no mechanism: no SASL
    tls_principal_rules: Optional[PrincipalRules] = None  # ssl.principal.mapping.rules; None: DEFAULT

    @property
    def sasl(self) -> bool:
        return bool(self.sasl_settings.mechanisms)

    @property
    def client_auth(self) -> str:
        """Kafka's ssl.client.auth of this listener: none, requested or required."""
        return client_auth_of(self.tls) if self.tls is not None else "none"

def java_host_address(address: str) -> str:
    """``::1`` -> ``0:0:0:0:0:0:0:1``, as Java writes an IPv6 address (a scope stays after ``%``); IPv4
    and names unchanged."""
    bare, percent, scope = address.partition("%")
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        return address
    if ip.version == 4:
        return address
    return ":".join(f"{int(group, 16):x}" for group in ip.exploded.split(":")) + percent + scope


# The most record bytes one Fetch response carries, whatever the request allows: Kafka's broker config
# fetch.max.bytes (KIP-541) and its default, 55 MiB.
DEFAULT_FETCH_MAX_BYTES = 55 * 1024 * 1024
DEFAULT_SASL_MAX_RECEIVE_SIZE = 512 * 1024  # Kafka's sasl.server.max.receive.size


@dataclass
class Session:
    """One connection's listener, SASL state and identity."""

    listener: ListenerRuntime = field(default_factory=ListenerRuntime)

    principal: str = ANONYMOUS
    sasl: Optional[SaslServer] = None  # a SASL listener's: the exchange, the session's end (KIP-368)
    client: str = ""                  # client software name (ApiVersions v3+) or client id
    software: tuple[str, str] = ("", "")  # client software name and version (ApiVersions v3+)
    host: str = ""                    # the peer's address, as Kafka names it ("/127.0.0.1")
    port: int = 0                     # the peer's port
    address: str = ""                 # and as an ACL's host names it (java_host_address), worked out once
    close_after_response: bool = False


class Usage:
    """Which API versions each client used: {client: {api name: {versions}}}, how many requests of
    each (api name, version) each client id sent (what a recording of the traffic must add up to), and
    how many record batches each broker's Fetch responses carried to each client id (which replica served
    a consumer: KIP-392); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, set[int]]] = {}
        self._counts: dict[str, Counter[tuple[str, int]]] = {}
        self._batches: dict[int, Counter[str]] = {}

    def record(self, client: str, api: str, version: int, client_id: Optional[str] = None) -> None:
        with self._lock:
            self._seen.setdefault(client, {}).setdefault(api, set()).add(version)
            self._counts.setdefault(client_id or "", Counter())[(api, version)] += 1

    def served_batches(self, node_id: int, client_id: Optional[str], batches: int) -> None:
        with self._lock:
            self._batches.setdefault(node_id, Counter())[client_id or ""] += batches

    def batches(self) -> dict[int, Counter[str]]:
        with self._lock:
            return {n: Counter(c) for n, c in sorted(self._batches.items())}

    def counts(self) -> dict[str, Counter[tuple[str, int]]]:
        with self._lock:
            return {c: Counter(n) for c, n in sorted(self._counts.items())}

    def snapshot(self) -> dict[str, dict[str, list[int]]]:
        with self._lock:
            return {c: {a: sorted(v) for a, v in sorted(apis.items())} for c, apis in sorted(self._seen.items())}

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
            self._counts.clear()
            self._batches.clear()


TELEMETRY_API_KEYS = (GetTelemetrySubscriptionsRequest.API_KEY, PushTelemetryRequest.API_KEY)  # type: ignore[attr-defined]


@dataclass
class ClusterRuntime:
    """What all brokers of one cluster share."""

    state: ClusterState
    authorizer: Authorizer
    usage: Usage = field(default_factory=Usage)
    max_frame_size: int = 8 * 1024 * 1024
    sasl_max_receive_size: int = DEFAULT_SASL_MAX_RECEIVE_SIZE  # the largest frame before SASL authentication
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES  # Kafka's broker fetch.max.bytes (KIP-541)
    replica_selector: Optional[str] = None  # Kafka's replica.selector.class (KIP-392; replicas.py); None: none
    idle_timeout: float = 600.0
    forward_admin: bool = True  # False: non-controllers answer NOT_CONTROLLER to admin requests
    # Kafka's controller creates an auto-created topic a round trip after the Metadata that asked for it;
    # 0: at once. Meanwhile the name is in auto_creating (Metadata answers it UNKNOWN_TOPIC_OR_PARTITION)
    auto_create_delay_ms: int = 0
    auto_creating: set[str] = field(default_factory=set)
    interceptors: Interceptors = field(default_factory=Interceptors)
    group_settings: GroupSettings = field(default_factory=GroupSettings)
    transaction_settings: TransactionSettings = field(default_factory=TransactionSettings)
    telemetry_max_bytes: int = DEFAULT_TELEMETRY_MAX_BYTES  # Kafka's telemetry.max.bytes
    client_telemetry: bool = False  # KIP-714's two APIs offered (Kafka: with a telemetry-receiving reporter)
    listeners: tuple[ListenerRuntime, ...] = ()  # each broker's, in order (what DescribeConfigs names)
    telemetry: Telemetry = field(init=False)  # KIP-714 client instances and their pushes
    groups: GroupCoordinator = field(init=False)  # the consumer groups' coordinator, over ``state``
    txns: TransactionCoordinator = field(init=False)  # the transaction coordinator, over ``state``
    # {api key: newest version}: where this cluster's settings serve less than the handler does
    max_versions: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.groups = GroupCoordinator(self.state, self.group_settings)
        self.txns = TransactionCoordinator(self.state, self.transaction_settings)
        self.telemetry = Telemetry(self.state.client_metrics, self.telemetry_max_bytes)
        # InitProducerId v6 (KIP-939): only with two-phase commit (Kafka 4.3: only with unstable versions)
        self.max_versions = {} if self.transaction_settings.two_phase_commit else {
            InitProducerIdRequest.API_KEY: 5}  # type: ignore[attr-defined]
        if not self.client_telemetry:  # not advertised, and answered UNSUPPORTED_VERSION, as by Kafka without
            for key in TELEMETRY_API_KEYS:  # a reporter that receives client metrics
                self.max_versions[key] = -1

    def served(self, api_key: int, versions: tuple[int, int]) -> tuple[int, int]:
        """The versions of ``api_key`` this cluster serves and advertises, of its handler's ``versions``
        (an empty range: none)."""
        lo, hi = versions
        return lo, min(hi, self.max_versions.get(api_key, hi))


@dataclass
class Context:
    runtime: ClusterRuntime
    node_id: int
    session: Session
    header: Any
    version: int

    @property
    def state(self) -> ClusterState:
        return self.runtime.state

    def allowed(self, operation: str, resource_type: str = "topic", name: str = "") -> bool:
        return self.runtime.authorizer.allowed(self.session.principal, operation, resource_type, name,
                                               self.session.address)

    def may_create(self, topic: str) -> bool:
        """Kafka: Create on the cluster, or on the topic."""
        return self.allowed("Create", "cluster") or self.allowed("Create", "topic", topic)

    def operations(self, resource_type: str, name: str = "") -> int:
        return self.runtime.authorizer.operations_mask(self.session.principal, resource_type, name,
                                                       self.session.address)
